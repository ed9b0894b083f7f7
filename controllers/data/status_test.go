package data

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

const testGeneration = 7

// wantCond is what a test expects of one condition; a nil *wantCond means
// the condition must be absent.
type wantCond struct {
	status metav1.ConditionStatus
	reason string
	// msg are substrings the message must contain.
	msg []string
}

func checkCond(t *testing.T, conds []metav1.Condition, typ string, generation int64, want *wantCond) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if want == nil {
		if c != nil {
			t.Errorf("condition %s = %+v, want none", typ, *c)
		}
		return
	}
	if c == nil {
		t.Fatalf("condition %s missing; have %+v", typ, conds)
	}
	if c.Status != want.status || c.Reason != want.reason {
		t.Errorf("condition %s = %s/%s, want %s/%s (message %q)", typ, c.Status, c.Reason, want.status, want.reason, c.Message)
	}
	if c.ObservedGeneration != generation {
		t.Errorf("condition %s observedGeneration = %d, want %d", typ, c.ObservedGeneration, generation)
	}
	for _, m := range want.msg {
		if !strings.Contains(c.Message, m) {
			t.Errorf("condition %s message %q does not contain %q", typ, c.Message, m)
		}
	}
}

func testCluster() *etcdv1.EtcdCluster {
	c := &etcdv1.EtcdCluster{}
	c.Name, c.Namespace, c.Generation = "demo", "ns", testGeneration
	return c
}

// oldCond is a condition left by an earlier generation.
func oldCond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "old", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}
}

func TestSetSuspended(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		suspend  bool
		existing []metav1.Condition
		facts    suspendFacts
		want     *wantCond
		// bug, when set, skips a case that fails because of a known bug.
		bug string
	}{
		{name: "not suspended, no condition yet", want: nil},
		{
			name:     "not suspended, was suspended",
			existing: []metav1.Condition{oldCond(etcdv1.ConditionSuspended, metav1.ConditionTrue, etcdv1.ReasonSuspended)},
			want:     &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonNotSuspended, msg: []string{"runs"}},
		},
		{
			name: "ready", suspend: true, facts: suspendFacts{ready: true},
			want: &wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonSuspended, msg: []string{"stopped", "spec.suspend"}},
		},
		{
			name: "waiting for a membership change", suspend: true,
			facts: suspendFacts{waiting: etcdv1.ReasonWaitingForMembershipChange, waitingMsg: "Member demo-x is joining"},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonWaitingForMembershipChange, msg: []string{"Member demo-x is joining"}},
		},
		{
			name: "taking the final backup", suspend: true,
			facts: suspendFacts{waiting: etcdv1.ReasonTakingFinalBackup, waitingMsg: "Taking the final backup demo-suspend-7"},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonTakingFinalBackup, msg: []string{"demo-suspend-7"}},
		},
		{
			name: "final backup failed", suspend: true,
			existing: []metav1.Condition{oldCond(etcdv1.ConditionSuspended, metav1.ConditionFalse, etcdv1.ReasonTakingFinalBackup)},
			facts:    suspendFacts{waiting: etcdv1.ReasonFinalBackupFailed, waitingMsg: "The final backup demo-suspend-7 failed (no bucket)"},
			want:     &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonFinalBackupFailed, msg: []string{"no bucket"}},
		},
		{
			// reconcileSuspend leaves the facts empty when creating the final
			// backup fails; the condition must still be valid for the API.
			name: "suspending, no facts", suspend: true,
			want: &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonWaitingForMembershipChange},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.bug != "" {
				t.Skip("bug: " + tt.bug)
			}
			c := testCluster()
			c.Spec.Suspend = tt.suspend
			c.Status.Conditions = tt.existing
			setSuspended(&scope{cluster: c, suspend: tt.facts})
			checkCond(t, c.Status.Conditions, etcdv1.ConditionSuspended, testGeneration, tt.want)
		})
	}
}

func TestSetStorageReady(t *testing.T) {
	t.Parallel()
	tenGi := resource.MustParse("10Gi")
	tests := []struct {
		name  string
		facts storageFacts
		want  wantCond
	}{
		{
			name:  "memory",
			facts: storageFacts{memory: true},
			want:  wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonMemoryMedium, msg: []string{"memory"}},
		},
		{
			name:  "class does not allow expansion",
			facts: storageFacts{want: tenGi, grown: 1, total: 3, notExpandable: "slow-disks"},
			want: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonExpansionNotSupported,
				msg: []string{"StorageClass slow-disks", "2 of 3 volumes cannot grow to 10Gi", "allowVolumeExpansion"}},
		},
		{
			name:  "expanding",
			facts: storageFacts{want: tenGi, grown: 1, total: 3},
			want:  wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonExpanding, msg: []string{"1 of 3 volumes have 10Gi"}},
		},
		{
			name:  "all match",
			facts: storageFacts{want: tenGi, grown: 3, total: 3},
			want:  wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonVolumesMatch, msg: []string{"Every member volume", "10Gi"}},
		},
		{
			name:  "no volume yet",
			facts: storageFacts{want: tenGi},
			want:  wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonVolumesMatch, msg: []string{"Every member volume"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testCluster()
			setStorageReady(&scope{cluster: c, storage: tt.facts})
			checkCond(t, c.Status.Conditions, etcdv1.ConditionStorageReady, testGeneration, &tt.want)
		})
	}
}

func testBackup(name string, conds ...metav1.Condition) *etcdv1.EtcdBackup {
	b := &etcdv1.EtcdBackup{}
	b.Name, b.Namespace, b.Generation = name, "ns", 1
	b.Spec.ClusterName = "demo"
	b.Status.Conditions = conds
	return b
}

func TestSetBackupReady(t *testing.T) {
	t.Parallel()
	created := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	started := created.Add(5 * time.Second)
	next := created.Add(time.Hour)
	complete := metav1.Condition{Type: etcdv1.ConditionComplete, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonSnapshotStored, ObservedGeneration: 1}
	failed := metav1.Condition{Type: etcdv1.ConditionFailed, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonSnapshotFailed, Message: "bucket gone", ObservedGeneration: 1}

	done := testBackup("demo-20250301-1000", complete)
	done.CreationTimestamp = metav1.NewTime(created)
	done.Status.URI, done.Status.Revision = "s3://b/ns/demo/demo-20250301-1000.db", 42
	doneStarted := done.DeepCopy()
	doneStarted.Status.StartTime = &metav1.Time{Time: started}
	broken := testBackup("demo-20250301-1100", failed)

	sched := &etcdv1.ClusterBackupSpec{Schedule: "0 * * * *"}
	tests := []struct {
		name       string
		spec       *etcdv1.ClusterBackupSpec
		existing   []metav1.Condition
		status     *etcdv1.ClusterBackupStatus
		facts      scheduleFacts
		want       *wantCond
		wantNext   *time.Time
		wantRecord *etcdv1.BackupRecord
		// wantNoStatus: status.backup stays nil.
		wantNoStatus bool
	}{
		{name: "no schedule, never had one", wantNoStatus: true},
		{
			name:     "no schedule any more",
			existing: []metav1.Condition{oldCond(etcdv1.ConditionBackupReady, metav1.ConditionFalse, etcdv1.ReasonBackupFailed)},
			status:   &etcdv1.ClusterBackupStatus{NextScheduleTime: &metav1.Time{Time: next}},
			want:     &wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonNoSchedule, msg: []string{"spec.backup"}},
		},
		{
			name:       "no schedule keeps the last success",
			facts:      scheduleFacts{lastSuccess: done},
			wantRecord: &etcdv1.BackupRecord{Name: done.Name, Time: metav1.NewTime(created), URI: done.Status.URI, Revision: 42},
		},
		{
			name: "invalid schedule", spec: &etcdv1.ClusterBackupSpec{Schedule: "every tuesday"},
			facts: scheduleFacts{invalid: errors.New(`invalid backup schedule "every tuesday"`)},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonInvalidSchedule, msg: []string{"every tuesday", "cron syntax"}},
		},
		{
			name: "waiting for the first backup", spec: sched, facts: scheduleFacts{next: next},
			want:     &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonWaitingForFirstBackup, msg: []string{"No scheduled backup"}},
			wantNext: &next,
		},
		{
			name: "first backup skipped", spec: sched, facts: scheduleFacts{next: next, skipped: "the cluster is not Available"},
			want:     &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonWaitingForFirstBackup, msg: []string{"waits because the cluster is not Available"}},
			wantNext: &next,
		},
		{
			name: "newest failed", spec: sched, facts: scheduleFacts{newest: broken, lastSuccess: done, next: next},
			want:       &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonBackupFailed, msg: []string{broken.Name, "bucket gone"}},
			wantNext:   &next,
			wantRecord: &etcdv1.BackupRecord{Name: done.Name, Time: metav1.NewTime(created), URI: done.Status.URI, Revision: 42},
		},
		{
			name: "newest complete, start time preferred", spec: sched,
			status: &etcdv1.ClusterBackupStatus{NextScheduleTime: &metav1.Time{Time: created}},
			facts:  scheduleFacts{newest: doneStarted, lastSuccess: doneStarted, next: next},
			want: &wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonBackupSucceeded,
				msg: []string{done.Name, done.Status.URI}},
			wantNext:   &next,
			wantRecord: &etcdv1.BackupRecord{Name: done.Name, Time: metav1.NewTime(started), URI: done.Status.URI, Revision: 42},
		},
		{
			name: "schedule never fires again", spec: sched,
			status:     &etcdv1.ClusterBackupStatus{NextScheduleTime: &metav1.Time{Time: next}},
			facts:      scheduleFacts{newest: done, lastSuccess: done},
			want:       &wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonBackupSucceeded},
			wantRecord: &etcdv1.BackupRecord{Name: done.Name, Time: metav1.NewTime(created), URI: done.Status.URI, Revision: 42},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testCluster()
			c.Spec.Backup = tt.spec
			c.Status.Conditions = tt.existing
			c.Status.Backup = tt.status.DeepCopy()
			setBackupReady(&scope{cluster: c, sched: tt.facts})
			checkCond(t, c.Status.Conditions, etcdv1.ConditionBackupReady, testGeneration, tt.want)

			st := c.Status.Backup
			if tt.wantNoStatus {
				if st != nil {
					t.Errorf("status.backup = %+v, want nil", *st)
				}
				return
			}
			if st == nil {
				if tt.wantNext != nil || tt.wantRecord != nil || tt.spec != nil {
					t.Fatal("status.backup is nil")
				}
				return
			}
			switch {
			case tt.wantNext == nil && st.NextScheduleTime != nil:
				t.Errorf("nextScheduleTime = %v, want none", st.NextScheduleTime)
			case tt.wantNext != nil && (st.NextScheduleTime == nil || !st.NextScheduleTime.Time.Equal(*tt.wantNext)):
				t.Errorf("nextScheduleTime = %v, want %v", st.NextScheduleTime, *tt.wantNext)
			}
			switch got := st.LastSuccessfulBackup; {
			case tt.wantRecord == nil && got != nil:
				t.Errorf("lastSuccessfulBackup = %+v, want none", *got)
			case tt.wantRecord != nil && got == nil:
				t.Errorf("lastSuccessfulBackup missing, want %+v", *tt.wantRecord)
			case tt.wantRecord != nil && (got.Name != tt.wantRecord.Name || got.URI != tt.wantRecord.URI ||
				got.Revision != tt.wantRecord.Revision || !got.Time.Equal(&tt.wantRecord.Time)):
				t.Errorf("lastSuccessfulBackup = %+v, want %+v", *got, *tt.wantRecord)
			}
		})
	}
}

func TestSetRestoreReady(t *testing.T) {
	t.Parallel()
	restored := &etcdv1.RestoreStatus{Key: "ns/demo/b.db", URI: "s3://bucket/ns/demo/b.db", SHA256: strings.Repeat("ab", 32)}
	tests := []struct {
		name   string
		facts  restoreFacts
		status *etcdv1.RestoreStatus
		want   *wantCond
	}{
		{name: "not wanted", facts: restoreFacts{failReason: etcdv1.ReasonBackupNotFound}, want: nil},
		{
			name: "verified", facts: restoreFacts{wanted: true, verified: true}, status: restored,
			want: &wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonSnapshotVerified, msg: []string{restored.URI, restored.SHA256}},
		},
		{
			name:  "looking",
			facts: restoreFacts{wanted: true},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonVerifyingSnapshot},
		},
		{
			name:  "backup not found",
			facts: restoreFacts{wanted: true, failReason: etcdv1.ReasonBackupNotFound, failMsg: "EtcdBackup old does not exist in namespace ns"},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonBackupNotFound, msg: []string{"EtcdBackup old does not exist"}},
		},
		{
			name:  "checksum mismatch",
			facts: restoreFacts{wanted: true, failReason: etcdv1.ReasonChecksumMismatch, failMsg: "The snapshot cannot be used, nothing was started: sha256 differs"},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonChecksumMismatch, msg: []string{"nothing was started", "sha256 differs"}},
		},
		{
			name:  "unreadable",
			facts: restoreFacts{wanted: true, failReason: etcdv1.ReasonSnapshotUnreadable, failMsg: "no snapshot at s3://bucket/x"},
			want:  &wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonSnapshotUnreadable, msg: []string{"s3://bucket/x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testCluster()
			c.Status.Restore = tt.status
			setRestoreReady(&scope{cluster: c, restore: tt.facts})
			checkCond(t, c.Status.Conditions, etcdv1.ConditionRestoreReady, testGeneration, tt.want)
		})
	}
}
