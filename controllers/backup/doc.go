// Package backup is the backup controller. It owns what a cluster's data
// goes through outside of membership:
//
//   - EtcdBackup: one snapshot, taken by an agent Pod (the operator's image
//     running "raftsman agent snapshot") from a healthy member, a follower
//     when there is one, and streamed to S3 or a PVC. Complete only once
//     the stored size and sha256 are the streamed ones.
//   - spec.backup: scheduled EtcdBackups and their retention (BackupReady).
//   - spec.suspend: Suspended turns True once no membership change runs and
//     the final backup is complete; the member controller then stops the
//     Pods and the cluster controller changes nothing.
//   - spec.storage.size: StorageReady says whether every member volume has
//     grown to it, or why it cannot.
//   - spec.bootstrap.restore: RestoreReady turns True once an agent Pod read
//     the snapshot whole and its sha256 matched; only then does the cluster
//     controller create the member that is made from it.
//
// Why agent Pods rather than the operator process: a snapshot of any size
// streams through one upload part of memory in a Pod of the cluster's own
// namespace, which is the only place the tenant's storage credentials are
// mounted. The operator neither holds snapshots nor reads those Secrets,
// and one slow upload never holds up the reconciles of other clusters.
package backup
