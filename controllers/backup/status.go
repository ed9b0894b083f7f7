package backup

import (
	"fmt"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
)

// setBackupConditions turns the facts of an EtcdBackup reconcile into its
// Complete and Failed conditions.
func setBackupConditions(s *scope) {
	b := s.backup
	set := func(t string, ok bool, reason, msg string) {
		kube.Set(&b.Status.Conditions, b.Generation, t, ok, reason, msg)
	}
	switch {
	case s.result != nil && s.result.Error == "":
		set(etcdv1.ConditionComplete, true, etcdv1.ReasonSnapshotStored, fmt.Sprintf("%d bytes at revision %d stored at %s, sha256 %s checked", s.result.Size, s.result.Revision, s.result.URI, s.result.SHA256))
		set(etcdv1.ConditionFailed, false, etcdv1.ReasonSnapshotStored, "The backup is complete")
	case s.result != nil:
		reason := etcdv1.ReasonSnapshotFailed
		if s.result.Reason == agent.ReasonChecksumMismatch {
			reason = etcdv1.ReasonChecksumMismatch
		}
		set(etcdv1.ConditionFailed, true, reason, s.result.Error)
		set(etcdv1.ConditionComplete, false, reason, "The backup failed; see the Failed condition. Nothing was stored under its key, or what was is deleted with the EtcdBackup")
	case s.clusterMissing:
		msg := fmt.Sprintf("EtcdCluster %s does not exist in namespace %s", s.backup.Spec.ClusterName, s.backup.Namespace)
		set(etcdv1.ConditionFailed, true, etcdv1.ReasonClusterNotFound, msg)
		set(etcdv1.ConditionComplete, false, etcdv1.ReasonClusterNotFound, msg)
	case s.pending != "":
		set(etcdv1.ConditionComplete, false, etcdv1.ReasonPending, s.pending)
		set(etcdv1.ConditionFailed, false, etcdv1.ReasonPending, s.pending)
	default:
		msg := fmt.Sprintf("Agent Pod %s streams the snapshot of member %s", snapshotPodName(b), b.Status.Member)
		set(etcdv1.ConditionComplete, false, etcdv1.ReasonRunning, msg)
		set(etcdv1.ConditionFailed, false, etcdv1.ReasonRunning, msg)
	}
}
