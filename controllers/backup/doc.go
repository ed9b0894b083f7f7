// Package backup is the backup controller: it runs EtcdBackups, each one
// snapshot of a cluster, and reports them with the Complete and Failed
// conditions and the backup's status (key, uri, size, sha256, revision).
//
//   - Taking a snapshot: an agent Pod (the operator's image running
//     "raftsman agent snapshot") streams it from a healthy member, a
//     follower when there is one, to S3 or a PVC. Complete only once the
//     stored size and sha256 are the streamed ones.
//   - Deleting an EtcdBackup (by a user, or by the data controller's
//     retention): its finalizer holds it until an agent Pod deleted the
//     stored snapshot.
//
// Who makes EtcdBackups besides users (schedules, the final backup of a
// suspend) and what a cluster does with them (restore) is the data
// controller's (controllers/data); the two meet only in EtcdBackup objects
// and their conditions.
//
// Why agent Pods rather than the operator process: a snapshot of any size
// streams through one upload part of memory in a Pod of the cluster's own
// namespace, which is the only place the tenant's storage credentials are
// mounted. The operator neither holds snapshots nor reads those Secrets,
// and one slow upload never holds up the reconciles of other clusters.
package backup
