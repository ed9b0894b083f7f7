package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestStorageReplacement: a change of spec.storage that a volume cannot
// take replaces the members one at a time (a new member added, promoted,
// then the old one removed), followers first and the leader last, with the
// cluster Available throughout and never more than one member extra; one
// the volumes can take (a larger size, the class left out) replaces none.
func TestStorageReplacement(t *testing.T) {
	t.Parallel()
	gi := ptr.To(resource.MustParse("1Gi"))
	tests := []struct {
		name     string
		from     etcdv1.StorageSpec
		change   func(*etcdv1.StorageSpec)
		replaced bool
	}{
		{name: "another StorageClass", from: etcdv1.StorageSpec{Size: gi}, change: func(s *etcdv1.StorageSpec) { s.StorageClassName = ptr.To("fast") }, replaced: true},
		{name: "a smaller volume", from: etcdv1.StorageSpec{Size: gi}, change: func(s *etcdv1.StorageSpec) { s.Size = ptr.To(resource.MustParse("512Mi")) }, replaced: true},
		{name: "from memory to volumes", from: etcdv1.StorageSpec{Size: gi, Medium: etcdv1.StorageMediumMemory}, change: func(s *etcdv1.StorageSpec) { s.Medium = "" }, replaced: true},
		{name: "a larger volume", from: etcdv1.StorageSpec{Size: gi}, change: func(s *etcdv1.StorageSpec) { s.Size = ptr.To(resource.MustParse("2Gi")) }},
		{name: "the class left out", from: etcdv1.StorageSpec{Size: gi, StorageClassName: ptr.To("slow")}, change: func(s *etcdv1.StorageSpec) { s.StorageClassName = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.6.16", tt.from)
			old := map[string]bool{}
			for _, m := range e.members() {
				old[m.Name] = true
			}
			leader := e.leaderName()
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { tt.change(&s.Storage) })
			most := e.replaceToEnd(80)
			if most > 4 {
				t.Errorf("%d members at once, want at most one more than spec.replicas", most)
			}
			ms := e.members()
			if len(ms) != 3 || len(e.fake().Members()) != 3 {
				t.Fatalf("%d EtcdMembers, %d in etcd after the change, want 3", len(ms), len(e.fake().Members()))
			}
			replaced := e.eventsFor(eventMemberReplaced, "")
			if !tt.replaced {
				for _, m := range ms {
					if !old[m.Name] {
						t.Errorf("member %s was made for a change the volumes take", m.Name)
					}
				}
				if len(replaced) != 0 {
					t.Errorf("replaced %q", replaced)
				}
				return
			}
			for _, m := range ms {
				if old[m.Name] {
					t.Errorf("member %s is still there", m.Name)
				}
				if why := (&view{cluster: e.cluster()}).outdatedStorage(&m); why != "" {
					t.Errorf("member %s: %s", m.Name, why)
				}
				if _, ok := m.Annotations[etcdv1.ReplacesAnnotation]; !ok {
					t.Errorf("member %s does not say whom it replaced", m.Name)
				}
			}
			if len(replaced) != 3 || !strings.Contains(replaced[2], "Member "+leader+" ") {
				t.Errorf("MemberReplaced events %q, want 3, the leader %s last", replaced, leader)
			}
			for i := 1; i <= 3; i++ {
				step := fmt.Sprintf("(%d of 3)", i)
				if !slices.ContainsFunc(e.progressing, func(c metav1.Condition) bool {
					return c.Reason == etcdv1.ReasonReplacingMembers && strings.Contains(c.Message, step)
				}) {
					t.Errorf("Progressing never said ReplacingMembers %s", step)
				}
			}
			if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Status != metav1.ConditionFalse {
				t.Errorf("Progressing = %+v at the end", p)
			}
		})
	}
}

// replaceToEnd runs passes, playing the member controller, until the
// members are what the spec asks for and nothing progresses; it returns the
// most members there were at once.
func (e *rollEnv) replaceToEnd(limit int) int {
	e.t.Helper()
	most := 0
	for range limit {
		e.pass()
		most = max(most, len(e.members()))
		e.playMemberController()
		c := e.cluster()
		v := &view{cluster: c}
		outdated := slices.ContainsFunc(e.members(), func(m etcdv1.EtcdMember) bool { return v.outdatedStorage(&m) != "" })
		if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); !outdated && len(e.members()) == 3 && p.Status == metav1.ConditionFalse {
			return most
		}
	}
	e.t.Fatalf("the replacement did not end in %d passes; Progressing %+v", limit, condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing))
	return most
}

// TestStuckReplacementStops: a new member that never starts stops the
// replacement (Degraded ReplacementStuck, one Warning event), keeps the old
// member and is not added again; setting spec.storage back removes it.
func TestStuckReplacementStops(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))})
	e.r.Options.LearnerTimeout = time.Minute
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Storage.StorageClassName = ptr.To("missing") })
	var n etcdv1.EtcdMember
	for range 10 {
		e.pass() // the member controller never starts it: its volume never binds
		for _, m := range e.members() {
			if m.Annotations[etcdv1.ReplacesAnnotation] != "" && m.Status.Role == etcdv1.RoleLearner {
				n = m
			}
		}
		if n.Name != "" {
			break
		}
	}
	if n.Name == "" {
		t.Fatalf("no learner made to replace a member: %+v", e.members())
	}
	replaced := n.Annotations[etcdv1.ReplacesAnnotation]
	m := e.member(n.Name)
	if !backdate(m.Status.Conditions, etcdv1.ConditionRegistered, 2*time.Minute) {
		t.Fatalf("%s has no Registered condition", n.Name)
	}
	if err := e.c.Status().Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.pass()
	}
	d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded)
	if d.Reason != etcdv1.ReasonReplacementStuck || !strings.Contains(d.Message, replaced) || !strings.Contains(d.Message, n.Name) {
		t.Errorf("Degraded = %+v, want ReplacementStuck naming %s and %s", d, replaced, n.Name)
	}
	if got := len(e.eventsFor(eventReplacementStuck, "")); got != 1 {
		t.Errorf("%d ReplacementStuck events, want 1: %q", got, e.evs)
	}
	if e.removing(n.Name) || e.removing(replaced) || len(e.members()) != 4 {
		t.Errorf("members changed while stuck: %+v", e.members())
	}
	if calls := e.fake().Calls("MemberAddAsLearner"); calls != 1 {
		t.Errorf("MemberAddAsLearner calls = %d, want 1", calls)
	}
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Storage.StorageClassName = nil })
	e.replaceToEnd(30)
	if e.member(replaced) == nil || slices.ContainsFunc(e.members(), func(m etcdv1.EtcdMember) bool { return m.Name == n.Name }) {
		t.Errorf("members after the spec went back: %+v, want %s kept and %s gone", e.members(), replaced, n.Name)
	}
}

// removing says whether the named member is being deleted.
func (e *rollEnv) removing(name string) bool {
	m := e.member(name)
	return m != nil && !m.DeletionTimestamp.IsZero()
}

// TestVolumeThatCannotFollowIsReplaced: a member whose Pod the scheduler
// cannot place next to its volume (a new node selector the rollout gave
// it) is replaced while it is down, and the rollout goes on with the
// others.
func TestVolumeThatCannotFollowIsReplaced(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))})
	old := map[string]bool{}
	for _, m := range e.members() {
		old[m.Name] = true
	}
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) {
		s.PodTemplate.NodeSelector = map[string]etcdv1.LabelValue{"zone": "b"}
	})
	stuck := e.passUntilChange(10)
	if stuck == "" {
		t.Fatal("the rollout restarted no member")
	}
	// Its new Pod cannot be placed where its volume is.
	e.fake().SetHealthy(stuck, false)
	e.setReady(stuck, false, etcdv1.ReasonUnschedulable, "Pod "+stuck+" cannot be scheduled: 0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) didn't match Pod's node affinity/selector")
	for range 40 {
		e.mustReconcile()
		e.evs = append(e.evs, e.events()...)
		e.playMemberControllerBut(stuck)
		c := e.cluster()
		if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); p.Status == metav1.ConditionFalse && len(e.members()) == 3 {
			break
		}
	}
	ms := e.members()
	if len(ms) != 3 || slices.ContainsFunc(ms, func(m etcdv1.EtcdMember) bool { return m.Name == stuck }) {
		t.Fatalf("members %v, want 3 without %s; Progressing %+v; events %q", memberNamesOf(ms), stuck, condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing), e.evs)
	}
	for _, m := range ms {
		if m.Spec.PodTemplate.NodeSelector["zone"] != "b" {
			t.Errorf("member %s has node selector %v after the rollout", m.Name, m.Spec.PodTemplate.NodeSelector)
		}
	}
	if got := e.eventsFor(eventMemberReplaced, stuck); len(got) != 1 {
		t.Errorf("MemberReplaced events for %s: %q", stuck, got)
	}
}

func memberNamesOf(ms []etcdv1.EtcdMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
