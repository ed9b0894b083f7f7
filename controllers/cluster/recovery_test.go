package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

var testDestination = etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: "backups"}}

// addBackup stores an EtcdBackup of a cluster as the backup controller
// leaves it: complete (or failed), with the time its snapshot began.
func (h *healEnv) addBackup(name, cluster string, age time.Duration, revision int64, complete bool) {
	h.t.Helper()
	b := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{etcdv1.ClusterLabel: cluster}},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: cluster, Destination: testDestination},
	}
	if err := h.c.Create(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
	h.finishBackup(name, complete, func(b *etcdv1.EtcdBackup) {
		b.Status.StartTime = &metav1.Time{Time: time.Now().Add(-age).Truncate(time.Second)}
		b.Status.Key, b.Status.SHA256, b.Status.Revision = name+".db", strings.Repeat("ab", 32), revision
	})
}

// finishBackup ends a backup as the backup controller does: Complete or
// Failed for its generation.
func (h *healEnv) finishBackup(name string, complete bool, more func(*etcdv1.EtcdBackup)) {
	h.t.Helper()
	b := &etcdv1.EtcdBackup{}
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, b); err != nil {
		h.t.Fatal(err)
	}
	typ := etcdv1.ConditionComplete
	if !complete {
		typ = etcdv1.ConditionFailed
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", ObservedGeneration: b.Generation})
	if more != nil {
		more(b)
	}
	if err := h.c.Update(context.Background(), b); err != nil {
		h.t.Fatal(err)
	}
}

// loseData makes the named members stop answering, their data gone: the
// member controller reports them DataLost.
func (h *healEnv) loseData(names ...string) {
	h.t.Helper()
	for _, name := range names {
		h.fake().SetHealthy(name, false)
		h.setMemberCondition(name, etcdv1.ConditionReady, metav1.ConditionFalse, etcdv1.ReasonDataLost, "PVC data-"+name+" is gone")
	}
}

// newRecoveryEnv is a formed cluster of 3 members, with
// spec.recovery.quorumLoss Automatic (after 1m) when automatic.
func newRecoveryEnv(t *testing.T, automatic bool) *healEnv {
	h := newHealEnv(t, 3)
	if automatic {
		h.setRecoverySpec(etcdv1.RecoverySpec{QuorumLoss: etcdv1.QuorumLossAutomatic, QuorumLossAfter: "1m"})
	}
	h.formed()
	return h
}

func TestRestoreFromLatestBackup(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name      string
		automatic bool
		// restartAt restarts the operator after this many passes once the
		// intent is stored (0: never).
		restartAt int
	}{
		{name: "annotation"},
		{name: "automatic, every member lost its data", automatic: true},
		{name: "restart while the members are released", restartAt: 2},
		{name: "restart once the cluster ID is cleared", restartAt: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newRecoveryEnv(t, tt.automatic)
			oldID := h.cluster().Status.ClusterID
			var old []string
			for _, m := range h.sortedMembers() {
				old = append(old, m.Name)
			}
			h.addBackup("older", "demo", 2*time.Hour, 100, true)
			h.addBackup("newest", "demo", time.Hour, 200, true)
			h.addBackup("failed", "demo", 10*time.Minute, 300, false)
			h.addBackup("other", "other", time.Minute, 400, true)

			h.loseData(old...)
			h.pass()
			h.pass()
			if tt.automatic {
				if rs := h.cluster().Status.Recovery; rs != nil {
					t.Fatalf("recovery started before quorumLossAfter: %+v", rs)
				}
				h.backdateCluster(etcdv1.ConditionAvailable, 2*time.Minute)
			} else {
				h.annotate(etcdv1.RecoverFromLatestBackup)
			}
			// 1. The intent is stored; nothing is released yet.
			h.pass()
			rs := h.recovery()
			if rs.Phase != etcdv1.RecoveryRestoring || rs.Backup != "newest" || rs.Revision != 200 || rs.Automatic != tt.automatic || rs.Member != "" {
				t.Fatalf("status.recovery = %+v, want Restoring from backup newest at revision 200, automatic %v", rs, tt.automatic)
			}
			for _, name := range old {
				if m := h.member(name); m.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain || !m.DeletionTimestamp.IsZero() {
					t.Fatalf("%s touched in the pass that stored the intent", name)
				}
			}
			if a := condition(h.cluster().Status.Conditions, etcdv1.ConditionAvailable); a.Reason != etcdv1.ReasonRestoringBackup {
				t.Errorf("Available = %+v, want RestoringBackup", a)
			}
			if h.eventCount("Warning", "QuorumRecoveryStarted", "newest") != 1 {
				t.Errorf("no QuorumRecoveryStarted event naming the backup: %v", h.evs)
			}

			// 2. The members keep their volumes, then go; 3. a new cluster
			// is bootstrapped from the snapshot.
			var first *etcdv1.EtcdMember
			for i := 1; i < 20 && first == nil; i++ {
				if i == tt.restartAt {
					h.restartOperator()
				}
				h.playMembers(true)
				h.pass()
				for _, m := range h.members() {
					if !slices.Contains(old, m.Name) {
						first = &m
					}
				}
			}
			if first == nil {
				t.Fatalf("no member made from the backup; members %v, recovery %+v", h.members(), h.recovery())
			}
			for _, name := range old {
				m, ok := h.deleted[name]
				switch {
				case !ok:
					t.Errorf("old member %s was not deleted", name)
				case m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain || !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation):
					t.Errorf("%s deleted before it kept its volume: policy %q, %+v", name, m.Spec.DeletionPolicy, m.Status.Conditions)
				}
				if !h.removing(name) {
					t.Errorf("old member %s still there", name)
				}
			}
			if got := h.members(); len(got) != 1 {
				t.Fatalf("%d members bootstrap the restored cluster, want 1", len(got))
			}
			r := first.Spec.Restore
			if r == nil || r.Key != "newest.db" || r.SHA256 != strings.Repeat("ab", 32) || r.Destination.PVC == nil || first.Spec.InitialClusterState != etcdv1.InitialClusterStateNew {
				t.Fatalf("first member %s: restore %+v, state %s; want the newest backup, new", first.Name, r, first.Spec.InitialClusterState)
			}
			if h.cluster().Status.ClusterID != "" {
				t.Errorf("cluster ID %s kept while the new cluster starts", h.cluster().Status.ClusterID)
			}
			if h.eventCount("Normal", "MembersReleased", old...) != 1 {
				t.Errorf("no MembersReleased event naming the old members: %v", h.evs)
			}

			// 4. The new cluster answers; it grows back to its size.
			h.fake().RestoreSnapshot([3]string{first.Name, first.Spec.PeerURL, first.Spec.ClientURL})
			h.setMemberCondition(first.Name, etcdv1.ConditionReady, metav1.ConditionTrue, etcdv1.ReasonPodReady, "")
			h.pass()
			if rs := h.recovery(); rs.Phase != etcdv1.RecoveryRegrowing {
				t.Fatalf("status.recovery = %+v once the restored member answers, want Regrowing", rs)
			}
			for i := 0; i < 80 && h.recovery().Phase != etcdv1.RecoveryDone; i++ {
				h.playMembers(true)
				h.pass()
			}
			c := h.cluster()
			rs = h.recovery()
			if rs.Phase != etcdv1.RecoveryDone || rs.Backup != "newest" || !strings.Contains(rs.Message, "backup newest") {
				t.Fatalf("status.recovery = %+v, want Done from backup newest; Progressing %+v", rs, condition(c.Status.Conditions, etcdv1.ConditionProgressing))
			}
			if c.Status.ClusterID == "" || c.Status.ClusterID == oldID {
				t.Errorf("cluster ID %q after the restore, want a new one (was %s)", c.Status.ClusterID, oldID)
			}
			if _, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
				t.Errorf("annotation kept after the restore")
			}
			if a := condition(c.Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionTrue {
				t.Errorf("Available = %+v after the restore", a)
			}
			voters := 0
			for _, em := range h.fake().Members() {
				if !em.IsLearner {
					voters++
				}
			}
			if voters != 3 || len(h.members()) != 3 {
				t.Errorf("%d voters, %d EtcdMembers after the restore, want 3", voters, len(h.members()))
			}
			for _, m := range h.members() {
				if slices.Contains(old, m.Name) {
					t.Errorf("old member name %s reused", m.Name)
				}
			}
			for _, reason := range []string{"QuorumRestored", "QuorumRecovered"} {
				if h.eventCount("Normal", reason, "newest") != 1 {
					t.Errorf("want one %s event naming the backup: %v", reason, h.evs)
				}
			}
			if len(h.forcedMembers()) != 0 {
				t.Errorf("members forced in a restore: %v", h.forcedMembers())
			}
		})
	}
}

// TestNoRestoreWhileDataMayBeLeft: a restore from a backup loses the
// writes made after it, so it never starts by itself while a member may
// still hold data, nor without a complete backup.
func TestNoRestoreWhileDataMayBeLeft(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name      string
		automatic bool
		dataLost  int  // of the 3 members, the first ones lost their data
		podLost   bool // the others' Pods were lost with their node (else they are down)
		backup    bool
		want      string // in the Progressing message
	}{
		{name: "automatic, one member may still have data", automatic: true, dataLost: 2, backup: true, want: etcdv1.RecoverFromLatestBackup},
		{name: "automatic, one member lost with its node", automatic: true, dataLost: 2, podLost: true, backup: true, want: etcdv1.RecoverFromLatestBackup},
		{name: "automatic, no backup", automatic: true, dataLost: 3, want: "no Complete EtcdBackup"},
		{name: "annotation, no backup", dataLost: 3, want: "no Complete EtcdBackup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newRecoveryEnv(t, tt.automatic)
			if tt.backup {
				h.addBackup("newest", "demo", time.Hour, 200, true)
			} else {
				h.addBackup("failed", "demo", time.Hour, 200, false)
			}
			ms := h.sortedMembers()
			for i, m := range ms {
				switch {
				case i < tt.dataLost:
					h.loseData(m.Name)
				case tt.podLost:
					h.fake().SetHealthy(m.Name, false)
					h.setMemberCondition(m.Name, etcdv1.ConditionReady, metav1.ConditionFalse, etcdv1.ReasonPodLost, "Pod lost with its node")
				default:
					h.loseQuorum(m.Name)
				}
			}
			h.pass()
			h.pass()
			if tt.automatic {
				h.backdateCluster(etcdv1.ConditionAvailable, 2*time.Minute)
			} else {
				h.annotate(etcdv1.RecoverFromLatestBackup)
			}
			h.pass()
			h.pass()
			if rs := h.cluster().Status.Recovery; rs != nil {
				t.Fatalf("recovery started: %+v", rs)
			}
			if got := len(h.members()); got != 3 {
				t.Errorf("%d members, want the 3 untouched", got)
			}
			if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonQuorumLost || !strings.Contains(p.Message, tt.want) {
				t.Errorf("Progressing = %+v, want QuorumLost saying %q", p, tt.want)
			}
		})
	}
}

// TestSnapshotBeforeForcing: with a backup destination, the member a
// recovery forces is snapshotted first, and forced once the snapshot ends
// (complete or failed).
func TestSnapshotBeforeForcing(t *testing.T) {
	apartFromCollector(t)
	for _, complete := range []bool{true, false} {
		t.Run(map[bool]string{true: "snapshot complete", false: "snapshot failed"}[complete], func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 3)
			h.setSpec(func(s *etcdv1.EtcdClusterSpec) {
				s.Backup = &etcdv1.ClusterBackupSpec{Schedule: "@daily", Destination: testDestination}
			})
			h.formed()
			ms := h.sortedMembers()
			keep := ms[0].Name
			h.loseQuorum(ms[1].Name, ms[2].Name)
			h.pass()
			h.pass()
			h.annotate(keep)
			h.pass()
			rs := h.recovery()
			if rs.Phase != etcdv1.RecoveryForcing || rs.Snapshot == "" {
				t.Fatalf("status.recovery = %+v, want Forcing with a snapshot named", rs)
			}
			h.pass()
			h.pass()
			b := &etcdv1.EtcdBackup{}
			if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: rs.Snapshot}, b); err != nil {
				t.Fatalf("no EtcdBackup %s: %v", rs.Snapshot, err)
			}
			if b.Spec.Member != keep || b.Spec.ClusterName != "demo" || b.Spec.Destination.PVC == nil || len(b.OwnerReferences) != 0 {
				t.Errorf("EtcdBackup spec %+v, owners %v; want member %s of demo to the cluster's destination, not owned", b.Spec, b.OwnerReferences, keep)
			}
			if f := h.forcedMembers(); len(f) != 0 {
				t.Fatalf("forced %v before the snapshot ended", f)
			}
			if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); !strings.Contains(p.Message, rs.Snapshot) {
				t.Errorf("Progressing = %+v, want it to name the snapshot", p)
			}
			for _, m := range ms[1:] {
				if !h.member(m.Name).Spec.Fenced {
					t.Errorf("member %s not fenced while the snapshot of %s is taken", m.Name, keep)
				}
			}
			h.finishBackup(rs.Snapshot, complete, nil)
			h.pass()
			if f := h.forcedMembers(); !slices.Equal(f, []string{keep}) {
				t.Fatalf("forced %v once the snapshot ended, want [%s]", f, keep)
			}
			want := map[bool]string{true: "RecoverySnapshotTaken", false: "RecoverySnapshotFailed"}[complete]
			typ := map[bool]string{true: "Normal", false: "Warning"}[complete]
			if h.eventCount(typ, want, keep) != 1 {
				t.Errorf("want one %s event: %v", want, h.evs)
			}
		})
	}
}

// TestRestoreStopsBeforeReleasing: until the point of no return is stored,
// a restore from a backup stops with nothing changed when etcd regains its
// quorum or the backup goes; after it, it goes on, and a member already
// being removed keeps its volume too.
func TestRestoreStopsBeforeReleasing(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name string
		// right after the intent is stored, or (late) once the point of no
		// return is stored:
		quorumBack, backupGone, late bool
		want                         string // in status.recovery.message; "" when the restore goes on
	}{
		{name: "quorum back", quorumBack: true, want: "regained its quorum"},
		{name: "backup deleted", backupGone: true, want: "is gone or no longer Complete"},
		{name: "neither: the members go"},
		{name: "quorum back after the point of no return", quorumBack: true, late: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newRecoveryEnv(t, false)
			h.addBackup("newest", "demo", time.Hour, 200, true)
			ms := h.sortedMembers()
			// A member whose removal waits for the quorum.
			removing := ms[2].Name
			if err := h.c.Delete(context.Background(), h.member(removing)); err != nil {
				t.Fatal(err)
			}
			h.loseData(ms[0].Name, ms[1].Name, ms[2].Name)
			h.pass()
			h.annotate(etcdv1.RecoverFromLatestBackup)
			h.pass()
			if rs := h.recovery(); rs.Phase != etcdv1.RecoveryRestoring {
				t.Fatalf("status.recovery = %+v, want Restoring", rs)
			}
			if tt.late {
				h.pass()
				if rs := h.recovery(); rs.ReplacedClusterID == "" {
					t.Fatalf("status.recovery = %+v, want the point of no return stored", rs)
				}
			}
			if tt.quorumBack {
				for _, m := range ms {
					h.fake().SetHealthy(m.Name, true)
				}
			}
			if tt.backupGone {
				if err := h.c.Delete(context.Background(), &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "newest", Namespace: "ns"}}); err != nil {
					t.Fatal(err)
				}
			}
			kept := false
			for range 5 {
				h.playMembers(true)
				// playMembers skips a member being deleted; its member
				// controller keeps its volume all the same.
				m := &etcdv1.EtcdMember{}
				if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: removing}, m); err == nil &&
					m.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain && !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation) {
					kept = true
					h.setMemberCondition(removing, etcdv1.ConditionVolumeRetained, metav1.ConditionTrue, etcdv1.ReasonVolumeReleased, "set by the test")
				}
				h.pass()
			}
			rs := h.recovery()
			if tt.want == "" {
				if rs.Phase != etcdv1.RecoveryRestoring || rs.ReplacedClusterID == "" || !h.removing(ms[0].Name) || !h.removing(ms[1].Name) {
					t.Fatalf("status.recovery = %+v; want the members released, the old cluster ID recorded", rs)
				}
				if !kept {
					t.Errorf("the member being removed, %s, was not asked to keep its volume", removing)
				}
				return
			}
			if rs.Phase != etcdv1.RecoveryDone || !strings.Contains(rs.Message, tt.want) || rs.ReplacedClusterID != "" {
				t.Fatalf("status.recovery = %+v, want Done saying %q", rs, tt.want)
			}
			for _, m := range ms[:2] {
				if h.removing(m.Name) {
					t.Errorf("%s deleted although the restore stopped", m.Name)
				}
				if p := h.member(m.Name).Spec.DeletionPolicy; p == etcdv1.DeletionPolicyRetain {
					t.Errorf("%s asked to keep its volume although the restore stopped before the point of no return", m.Name)
				}
			}
			if h.cluster().Status.ClusterID == "" {
				t.Errorf("cluster ID cleared although the restore stopped")
			}
			if _, ok := h.cluster().Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
				t.Errorf("annotation kept after the restore stopped")
			}
			typ := map[bool]string{true: "Normal", false: "Warning"}[tt.quorumBack]
			if h.eventCount(typ, "QuorumRecoveryCancelled") != 1 {
				t.Errorf("want one QuorumRecoveryCancelled event: %v", h.evs)
			}
		})
	}
}

// TestStaleRecoverAnnotationIsRemoved: an annotation set while etcd has
// its quorum is removed with a Warning, so that it cannot start a recovery
// at a later loss.
func TestStaleRecoverAnnotationIsRemoved(t *testing.T) {
	apartFromCollector(t)
	h := newRecoveryEnv(t, false)
	h.addBackup("newest", "demo", time.Hour, 200, true)
	h.annotate(etcdv1.RecoverFromLatestBackup)
	h.pass()
	c := h.cluster()
	if _, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
		t.Fatalf("annotation kept on a healthy cluster")
	}
	if c.Status.Recovery != nil {
		t.Errorf("recovery %+v on a healthy cluster", c.Status.Recovery)
	}
	if h.eventCount("Warning", "RecoverQuorumIgnored", etcdv1.RecoverFromLatestBackup) != 1 {
		t.Errorf("want one RecoverQuorumIgnored event: %v", h.evs)
	}
	// A later loss waits for a person again.
	h.loseData(h.sortedMembers()[0].Name, h.sortedMembers()[1].Name, h.sortedMembers()[2].Name)
	h.pass()
	h.pass()
	if rs := h.cluster().Status.Recovery; rs != nil {
		t.Errorf("recovery %+v started by the old annotation", rs)
	}
}

// TestBackupOfAnEarlierClusterIsNotRestored: backups outlive their cluster;
// one taken before this EtcdCluster was created is of another cluster that
// had its name.
func TestBackupOfAnEarlierClusterIsNotRestored(t *testing.T) {
	apartFromCollector(t)
	h := newRecoveryEnv(t, false)
	c := h.cluster()
	c.CreationTimestamp = metav1.NewTime(time.Now().Add(-30 * time.Minute).Truncate(time.Second))
	if err := h.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got := h.cluster().CreationTimestamp; got.IsZero() {
		t.Skip("the fake client does not keep a creation time")
	}
	h.addBackup("mine", "demo", 20*time.Minute, 100, true)
	h.addBackup("earlier-cluster", "demo", time.Hour, 900, true)
	h.addBackup("earlier-still", "demo", 2*time.Hour, 800, true)
	s := &scope{view: view{cluster: h.cluster()}}
	b, err := h.r.latestBackup(context.Background(), s)
	if err != nil || b == nil || b.Name != "mine" {
		t.Fatalf("latest backup = %v (%v), want mine", b, err)
	}
}
