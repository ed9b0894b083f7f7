package data

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
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
		// No count: the message stays the same while members come and go,
		// which costs no status write each time.
		set(true, etcdv1.ReasonVolumesMatch, fmt.Sprintf("Every member volume has at least %s", f.want.String()))
	}
}

func setBackupReady(s *scope) {
	c, f := s.cluster, s.sched
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionBackupReady, ok, reason, msg)
	}
	if rec, ok := backupRecord(f.lastSuccess); ok {
		if c.Status.Backup == nil {
			c.Status.Backup = &etcdv1.ClusterBackupStatus{}
		}
		c.Status.Backup.LastSuccessfulBackup = rec
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
		set(true, etcdv1.ReasonBackupSucceeded, fmt.Sprintf("The newest scheduled backup %s is complete at %s", f.newest.Name, snapshotURI(f.newest)))
	}
}

// backupRecord is what status.backup says of a complete backup (the
// backup controller's status, read behind its Complete).
func backupRecord(b *etcdv1.EtcdBackup) (*etcdv1.BackupRecord, bool) {
	if b == nil {
		return nil, false
	}
	snap, ok := b.Snapshot()
	if !ok {
		return nil, false
	}
	t := b.CreationTimestamp
	if snap.StartTime != nil {
		t = *snap.StartTime
	}
	return &etcdv1.BackupRecord{Name: b.Name, Time: t, URI: snap.URI, Revision: snap.Revision}, true
}

// snapshotURI is where the snapshot of a complete backup is; "" for any
// other backup.
func snapshotURI(b *etcdv1.EtcdBackup) string {
	if snap, ok := b.Snapshot(); ok {
		return snap.URI
	}
	return ""
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
