// Package data is the data controller. It owns what happens to an
// EtcdCluster's data outside of membership, each with a condition of the
// cluster:
//
//   - spec.storage.size: StorageReady says whether every member volume has
//     grown to it, or why it cannot. The member controller grows the
//     volumes; this controller only reports.
//   - spec.backup: scheduled EtcdBackups and their retention (BackupReady,
//     status.backup). The backup controller (controllers/backup) takes
//     each snapshot.
//   - spec.suspend: Suspended turns True once no membership change runs and
//     the final backup is complete; the member controller then stops the
//     Pods and the cluster controller changes nothing.
//   - spec.bootstrap.restore: RestoreReady turns True once an agent Pod read
//     the snapshot whole and its sha256 matched (status.restore); only then
//     does the cluster controller create the member that is made from it.
//
// It writes its conditions and status fields under the owner name "backup"
// (StatusOwner): it was split out of the backup controller, whose field
// manager the EtcdClusters it wrote record.
//
// Nothing needs cleaning up when a cluster is deleted: snapshots outlive
// their cluster, and the restore check Pod is owned by the EtcdCluster.
package data
