package backup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
)

// setStatus turns the facts of a cluster reconcile into the conditions
// this controller owns and into status.backup.
func setStatus(s *scope) {
	setSuspended(s)
	setStorageReady(s)
	setBackupReady(s)
	setRestoreReady(s)
}

func setSuspended(s *scope) {
	c, f := s.cluster, s.suspend
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionSuspended, ok, reason, msg)
	}
	switch {
	case !c.Spec.Suspend:
		if meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionSuspended) != nil {
			set(false, etcdv1.ReasonNotSuspended, "The cluster runs")
		}
	case f.ready:
		set(true, etcdv1.ReasonSuspended, "Every member's Pod is stopped or stopping; the EtcdMembers and volumes keep the data and member IDs. Set spec.suspend to false to start them again")
	case f.waiting == "":
		// A step failed before it could say why; the error is retried.
		set(false, etcdv1.ReasonWaitingForMembershipChange, "The suspend has not gone through yet; see the operator's events and logs")
	default:
		set(false, f.waiting, f.waitingMsg)
	}
}

func setStorageReady(s *scope) {
	c, f := s.cluster, s.storage
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionStorageReady, ok, reason, msg)
	}
	switch {
	case f.memory:
		set(true, etcdv1.ReasonMemoryMedium, "The members keep their data in memory; there is no volume to grow")
	case f.notExpandable != "":
		set(false, etcdv1.ReasonExpansionNotSupported, fmt.Sprintf("StorageClass %s does not allow volume expansion (allowVolumeExpansion), so %d of %d volumes cannot grow to %s. Allow expansion on the class, or move the data to a new cluster with a larger size through a backup", f.notExpandable, f.total-f.grown, f.total, f.want.String()))
	case f.grown < f.total:
		set(false, etcdv1.ReasonExpanding, fmt.Sprintf("%d of %d volumes have %s", f.grown, f.total, f.want.String()))
	default:
		set(true, etcdv1.ReasonVolumesMatch, fmt.Sprintf("All %d volumes have at least %s", f.total, f.want.String()))
	}
}

func setBackupReady(s *scope) {
	c, f := s.cluster, s.sched
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionBackupReady, ok, reason, msg)
	}
	if b := f.lastSuccess; b != nil {
		if c.Status.Backup == nil {
			c.Status.Backup = &etcdv1.ClusterBackupStatus{}
		}
		t := b.CreationTimestamp
		if b.Status.StartTime != nil {
			t = *b.Status.StartTime
		}
		c.Status.Backup.LastSuccessfulBackup = &etcdv1.BackupRecord{Name: b.Name, Time: t, URI: b.Status.URI, Revision: b.Status.Revision}
	}
	if c.Spec.Backup == nil {
		if meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionBackupReady) != nil {
			set(true, etcdv1.ReasonNoSchedule, "No backup schedule is set (spec.backup)")
		}
		if c.Status.Backup != nil {
			c.Status.Backup.NextScheduleTime = nil
		}
		return
	}
	if c.Status.Backup == nil {
		c.Status.Backup = &etcdv1.ClusterBackupStatus{}
	}
	c.Status.Backup.NextScheduleTime = nil
	if !f.next.IsZero() {
		c.Status.Backup.NextScheduleTime = &metav1.Time{Time: f.next}
	}
	switch {
	case f.invalid != nil:
		set(false, etcdv1.ReasonInvalidSchedule, fmt.Sprintf("%v: use cron syntax like \"0 * * * *\" or @every 6h", f.invalid))
	case f.newest == nil:
		msg := "No scheduled backup has finished yet"
		if f.skipped != "" {
			msg += "; the due backup waits because " + f.skipped
		}
		set(false, etcdv1.ReasonWaitingForFirstBackup, msg)
	case kube.IsTrue(f.newest.Status.Conditions, etcdv1.ConditionFailed, f.newest.Generation):
		set(false, etcdv1.ReasonBackupFailed, fmt.Sprintf("The newest scheduled backup %s failed: %s", f.newest.Name, meta.FindStatusCondition(f.newest.Status.Conditions, etcdv1.ConditionFailed).Message))
	default:
		set(true, etcdv1.ReasonBackupSucceeded, fmt.Sprintf("The newest scheduled backup %s is complete at %s", f.newest.Name, f.newest.Status.URI))
	}
}

func setRestoreReady(s *scope) {
	c, f := s.cluster, s.restore
	if !f.wanted {
		return
	}
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionRestoreReady, ok, reason, msg)
	}
	switch {
	case f.verified:
		set(true, etcdv1.ReasonSnapshotVerified, fmt.Sprintf("Snapshot %s has sha256 %s", c.Status.Restore.URI, c.Status.Restore.SHA256))
	case f.failReason != "":
		set(false, f.failReason, f.failMsg)
	default:
		set(false, etcdv1.ReasonVerifyingSnapshot, "Looking for the snapshot")
	}
}

// setBackupConditions turns the facts of an EtcdBackup reconcile into its
// Complete and Failed conditions.
func setBackupConditions(s *runScope) {
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
