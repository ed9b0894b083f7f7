package cluster

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// viewMember is a member spec for the view tests: EtcdMember name-i at peer
// URL p-i, etcd ID i+1 when it is in etcd.
type viewMember struct {
	inEtcd, learner, healthy, leader bool
	applied                          uint64
	deleting                         bool
	memberID                         string
	readyReason                      string
}

// newView builds a formed view of the members, in order (the oldest first).
func newView(ms ...viewMember) *view {
	v := &view{cluster: &etcdv1.EtcdCluster{}, formed: true, health: map[uint64]etcd.Status{}}
	for i, vm := range ms {
		m := &etcdv1.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i), Generation: 1},
			Spec:       etcdv1.EtcdMemberSpec{PeerURL: fmt.Sprintf("p%d", i), InitialClusterState: etcdv1.InitialClusterStateExisting},
			Status:     etcdv1.EtcdMemberStatus{MemberID: vm.memberID},
		}
		if vm.deleting {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		if vm.readyReason != "" {
			m.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionFalse, Reason: vm.readyReason, ObservedGeneration: 1}}
		}
		v.members = append(v.members, m)
		if !vm.inEtcd {
			continue
		}
		id := uint64(i + 1)
		v.etcdList = append(v.etcdList, etcd.Member{ID: id, Name: m.Name, PeerURLs: []string{m.Spec.PeerURL}, IsLearner: vm.learner})
		if vm.healthy {
			v.health[id] = etcd.Status{MemberID: id, RaftAppliedIndex: vm.applied}
		}
		if vm.leader {
			v.leader = id
		}
	}
	return v
}

var (
	healthyVoter   = viewMember{inEtcd: true, healthy: true}
	unhealthyVoter = viewMember{inEtcd: true}
	leaderVoter    = viewMember{inEtcd: true, healthy: true, leader: true}
	learnerMember  = viewMember{inEtcd: true, learner: true, healthy: true}
)

func TestViewRemovalKeepsQuorum(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		members []viewMember
		remove  int
		want    bool
	}{
		{name: "healthy follower of 3 healthy", members: []viewMember{leaderVoter, healthyVoter, healthyVoter}, remove: 2, want: true},
		{name: "healthy follower when another is down", members: []viewMember{leaderVoter, healthyVoter, unhealthyVoter}, remove: 1, want: false},
		{name: "the unhealthy one when another is down", members: []viewMember{leaderVoter, healthyVoter, unhealthyVoter}, remove: 2, want: true},
		{name: "a learner always", members: []viewMember{leaderVoter, unhealthyVoter, learnerMember}, remove: 2, want: true},
		{name: "the last voter never", members: []viewMember{leaderVoter}, remove: 0, want: false},
		{name: "one of 2 healthy", members: []viewMember{leaderVoter, healthyVoter}, remove: 1, want: true},
		{name: "a healthy one of 4 with one down", members: []viewMember{leaderVoter, healthyVoter, healthyVoter, unhealthyVoter}, remove: 1, want: true},
		{name: "a healthy one of 5 with two down", members: []viewMember{leaderVoter, healthyVoter, healthyVoter, unhealthyVoter, unhealthyVoter}, remove: 1, want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.members...)
			em, ok := v.inEtcd(v.members[tt.remove])
			if !ok {
				t.Fatal("member not in etcd")
			}
			if got := v.removalKeepsQuorum(em); got != tt.want {
				t.Errorf("removalKeepsQuorum = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestViewPickVictim(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		members []viewMember
		want    string
	}{
		{name: "the newest healthy follower", members: []viewMember{leaderVoter, healthyVoter, healthyVoter}, want: "m2"},
		{name: "not the leader even when newest", members: []viewMember{healthyVoter, healthyVoter, leaderVoter}, want: "m1"},
		{name: "an unhealthy voter first", members: []viewMember{unhealthyVoter, leaderVoter, healthyVoter}, want: "m0"},
		{name: "a learner before an unhealthy voter", members: []viewMember{unhealthyVoter, learnerMember, leaderVoter}, want: "m1"},
		{name: "a member etcd does not list first of all", members: []viewMember{learnerMember, {}, leaderVoter}, want: "m1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.members...)
			if got := v.pickVictim(v.active()); got.Name != tt.want {
				t.Errorf("pickVictim = %s, want %s", got.Name, tt.want)
			}
		})
	}
}

func TestViewLost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		member viewMember
		formed bool
		want   bool
	}{
		{name: "in etcd", member: healthyVoter, formed: true},
		{name: "added once, gone from etcd", member: viewMember{memberID: "1"}, formed: true, want: true},
		{name: "never added (a joiner not yet added)", member: viewMember{}, formed: true},
		{name: "gone from etcd, but etcd did not answer", member: viewMember{memberID: "1"}},
		{name: "its data lost, whatever etcd says", member: viewMember{inEtcd: true, readyReason: etcdv1.ReasonDataLost}, formed: true, want: true},
		{name: "its Pod lost with its node", member: viewMember{inEtcd: true, readyReason: etcdv1.ReasonPodLost}, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.member)
			v.formed = tt.formed
			if got := v.lost(v.members[0]); got != tt.want {
				t.Errorf("lost = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestViewSuccessor(t *testing.T) {
	t.Parallel()
	ahead := func(vm viewMember, applied uint64) viewMember { vm.applied = applied; return vm }
	for _, tt := range []struct {
		name    string
		members []viewMember
		wantID  uint64
		wantOK  bool
	}{
		{name: "the healthy voter furthest ahead", members: []viewMember{ahead(leaderVoter, 10), ahead(healthyVoter, 8), ahead(healthyVoter, 9)}, wantID: 3, wantOK: true},
		{name: "never a learner, however far ahead", members: []viewMember{ahead(leaderVoter, 10), ahead(learnerMember, 99), ahead(healthyVoter, 1)}, wantID: 3, wantOK: true},
		{name: "never an unhealthy voter", members: []viewMember{leaderVoter, unhealthyVoter}},
		{name: "none but the leader", members: []viewMember{leaderVoter}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.members...)
			got, ok := v.successor(v.leader, nil)
			if ok != tt.wantOK || (ok && got.ID != tt.wantID) {
				t.Errorf("successor = %d, %t; want %d, %t", got.ID, ok, tt.wantID, tt.wantOK)
			}
		})
	}
}

func TestViewMembers(t *testing.T) {
	t.Parallel()
	v := newView(leaderVoter, viewMember{inEtcd: true, healthy: true, deleting: true}, unhealthyVoter, learnerMember)
	if got := len(v.active()); got != 3 {
		t.Errorf("active = %d members, want 3 (the one being deleted left out)", got)
	}
	if all, healthy := v.voters(); all != 3 || healthy != 2 {
		t.Errorf("voters = %d, %d healthy; want 3, 2 (the learner left out)", all, healthy)
	}
	if m := v.memberByID(3); m == nil || m.Name != "m2" {
		t.Errorf("memberByID(3) = %v, want m2", m)
	}
	if m := v.memberByID(2); m != nil {
		t.Errorf("memberByID(2) = %s, want none: it is being deleted", m.Name)
	}
	if !v.isLeader(v.members[0]) || v.isLeader(v.members[2]) {
		t.Error("isLeader: want m0 only")
	}
	if v.allHealthyVoters() {
		t.Error("allHealthyVoters with a voter down and a learner")
	}
	if !v.hasMember("m3") || v.hasMember("m9") {
		t.Error("hasMember: want m3 and not m9")
	}
}

func TestViewOutdatedStorage(t *testing.T) {
	t.Parallel()
	gi, mi512 := ptr.To(resource.MustParse("1Gi")), ptr.To(resource.MustParse("512Mi"))
	for _, tt := range []struct {
		name       string
		want, have etcdv1.StorageSpec
		outdated   string
	}{
		{name: "the same", want: etcdv1.StorageSpec{Size: gi}, have: etcdv1.StorageSpec{Size: gi}},
		{name: "another class", want: etcdv1.StorageSpec{StorageClassName: ptr.To("fast")}, have: etcdv1.StorageSpec{StorageClassName: ptr.To("slow")}, outdated: "StorageClass slow, spec.storage asks for fast"},
		{name: "a class named where the default was", want: etcdv1.StorageSpec{StorageClassName: ptr.To("fast")}, outdated: "StorageClass (the default class)"},
		{name: "the class left out", have: etcdv1.StorageSpec{StorageClassName: ptr.To("slow")}},
		{name: "smaller", want: etcdv1.StorageSpec{Size: mi512}, have: etcdv1.StorageSpec{Size: gi}, outdated: "of 1Gi, spec.storage asks for 512Mi"},
		{name: "larger grows online", want: etcdv1.StorageSpec{Size: gi}, have: etcdv1.StorageSpec{Size: mi512}},
		{name: "to memory", want: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory}, outdated: "on a PersistentVolumeClaim, spec.storage asks for tmpfs"},
		{name: "from memory", have: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory}, outdated: "on tmpfs (medium Memory), spec.storage asks for a PersistentVolumeClaim"},
		{name: "a smaller tmpfs rolls", want: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory, Size: mi512}, have: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory, Size: gi}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(healthyVoter)
			v.cluster.Spec.Storage = tt.want
			v.members[0].Spec.Storage = tt.have
			got := v.outdatedStorage(v.members[0])
			if (got == "") != (tt.outdated == "") || !strings.Contains(got, tt.outdated) {
				t.Errorf("outdatedStorage = %q, want %q", got, tt.outdated)
			}
		})
	}
}

func TestViewReplacement(t *testing.T) {
	t.Parallel()
	fast := ptr.To("fast")
	for _, tt := range []struct {
		name    string
		members []viewMember
		// current names the members already on the new class, replaces
		// sets the annotation on a member (index: replaced name).
		current  []int
		replaces map[int]string
		next     string
		nCurrent int
		// replacing is "new/old" of the replacement under way.
		replacing string
	}{
		{name: "followers first", members: []viewMember{leaderVoter, healthyVoter, healthyVoter}, next: "m1"},
		{name: "the leader last", members: []viewMember{leaderVoter, healthyVoter, healthyVoter}, current: []int{1, 2}, next: "m0", nCurrent: 2},
		{name: "none left", members: []viewMember{healthyVoter, healthyVoter}, current: []int{0, 1}, nCurrent: 2},
		{
			name: "under way", members: []viewMember{leaderVoter, healthyVoter, healthyVoter, learnerMember},
			current: []int{3}, replaces: map[int]string{3: "m1"}, next: "m1", nCurrent: 1, replacing: "m3/m1",
		},
		{
			name: "the replaced member gone", members: []viewMember{leaderVoter, {inEtcd: true, healthy: true, deleting: true}, healthyVoter, healthyVoter},
			current: []int{3}, replaces: map[int]string{3: "m1"}, next: "m2", nCurrent: 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.members...)
			v.cluster.Spec.Storage.StorageClassName = fast
			for _, i := range tt.current {
				v.members[i].Spec.Storage.StorageClassName = fast
			}
			for i, old := range tt.replaces {
				v.members[i].Annotations = map[string]string{etcdv1.ReplacesAnnotation: old}
			}
			next, current := v.nextToReplace()
			if name := nameOf(next); name != tt.next || current != tt.nCurrent {
				t.Errorf("nextToReplace = %q, %d; want %q, %d", name, current, tt.next, tt.nCurrent)
			}
			n, o := v.replacing()
			if got := nameOf(n) + "/" + nameOf(o); (tt.replacing == "" && n != nil) || (tt.replacing != "" && got != tt.replacing) {
				t.Errorf("replacing = %s, want %q", got, tt.replacing)
			}
		})
	}
}

func nameOf(m *etcdv1.EtcdMember) string {
	if m == nil {
		return ""
	}
	return m.Name
}

func TestViewDatabaseTooLarge(t *testing.T) {
	t.Parallel()
	v := newView(leaderVoter, healthyVoter)
	v.health[2] = etcd.Status{MemberID: 2, DBSize: 200 << 20}
	for _, tt := range []struct {
		name  string
		quota *int64
		full  string
	}{
		{name: "fits", quota: ptr.To(int64(256 << 20))},
		{name: "does not fit", quota: ptr.To(int64(128 << 20)), full: "the database of m1"},
		{name: "etcd's default quota", quota: nil},
	} {
		got := v.databaseTooLarge(etcdv1.EtcdMemberSpec{Options: etcdv1.EtcdOptions{QuotaBackendBytes: tt.quota}})
		if (got == "") != (tt.full == "") || !strings.Contains(got, tt.full) {
			t.Errorf("%s: databaseTooLarge = %q, want %q", tt.name, got, tt.full)
		}
	}
}

// TestLearnerSlots: more than one learner only while every member in etcd
// runs with room for it: voters Ready for their generation with
// --max-learners, learners made with it, and every member to add a
// prepared joiner; the smallest value counts.
func TestLearnerSlots(t *testing.T) {
	t.Parallel()
	ready := func(m *etcdv1.EtcdMember) {
		m.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonPodReady, ObservedGeneration: 1}}
	}
	tests := []struct {
		name    string
		members []viewMember
		setup   func(v *view)
		want    int
		why     string
	}{
		{name: "every voter Ready with 4, a joiner to add", members: []viewMember{healthyVoter, healthyVoter, {}}, want: 4},
		{name: "the smallest value counts", members: []viewMember{healthyVoter, healthyVoter, {}},
			setup: func(v *view) { v.members[1].Spec.MaxLearners = 2 }, want: 2},
		{name: "a voter without the flag", members: []viewMember{healthyVoter, healthyVoter, {}},
			setup: func(v *view) { v.members[0].Spec.MaxLearners = 0 }, want: 1, why: "default --max-learners"},
		{name: "a voter not Ready for its generation", members: []viewMember{healthyVoter, healthyVoter, {}},
			setup: func(v *view) { v.members[0].Status.Conditions = nil }, want: 1, why: "may not run its current spec"},
		{name: "a learner counts with its own spec", members: []viewMember{healthyVoter, {inEtcd: true, learner: true}, {}},
			setup: func(v *view) { v.members[1].Spec.MaxLearners = 3; v.members[1].Status.Conditions = nil }, want: 3},
		{name: "a member to add without the gate", members: []viewMember{healthyVoter, healthyVoter, {}},
			setup: func(v *view) { v.members[2].Spec.AgentImage = "" }, want: 1, why: "not behind the join gate"},
		{name: "a member in etcd without an EtcdMember", members: []viewMember{healthyVoter, {}},
			setup: func(v *view) { v.etcdList = append(v.etcdList, etcd.Member{ID: 99, PeerURLs: []string{"stranger"}}) }, want: 1, why: "no EtcdMember"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newView(tt.members...)
			for _, m := range v.members {
				m.Spec.MaxLearners, m.Spec.AgentImage = 4, "raftsman:test"
				ready(m)
			}
			if tt.setup != nil {
				tt.setup(v)
			}
			got, why := v.learnerSlots()
			if got != tt.want || (tt.why != "" && !strings.Contains(why, tt.why)) {
				t.Errorf("learnerSlots = %d (%s), want %d (%s)", got, why, tt.want, tt.why)
			}
		})
	}
}
