package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// healEnv is a formed cluster whose members fail. The test plays etcd
// (members stop answering, one restarts alone with --force-new-cluster,
// learners start) and the member controller (Ready and VolumeRetained for
// the member's generation). It records what the reconciler did to the
// members through the API: each time it turned a member's
// spec.forceNewCluster on, and each member as stored when it was deleted.
type healEnv struct {
	*env

	mu sync.Mutex
	// forced counts, by member, the writes that turned forceNewCluster on.
	forced map[string]int
	// deleted is each member as stored when its deletion was asked.
	deleted map[string]etcdv1.EtcdMember
	// failClusterStatus makes the cluster's status writes fail, as if the
	// operator died before it wrote the status.
	failClusterStatus bool
	// evs are the events of every pass.
	evs []string
	// fenced names, in order, each member the member controller (played
	// by playFences) stopped for a fence.
	fenced []string
	// unstoppable names members whose Pod does not stop when fenced (a
	// node that does not answer).
	unstoppable map[string]bool
	// undecodable names members the operator's cache holds as it holds an
	// object it cannot decode: metadata alone, marked.
	undecodable map[string]bool
}

func newHealEnv(t *testing.T, replicas int32) *healEnv {
	t.Helper()
	h := &healEnv{forced: map[string]int{}, deleted: map[string]etcdv1.EtcdMember{}}
	gen := memberGenerations()
	h.env = newEnv(t, replicas, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			h.watchForce(ctx, c, obj)
			return gen.Update(ctx, c, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			h.watchForce(ctx, c, obj)
			return gen.Patch(ctx, c, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*etcdv1.EtcdMember); ok {
				cur := &etcdv1.EtcdMember{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err == nil {
					h.mu.Lock()
					if _, seen := h.deleted[cur.Name]; !seen {
						h.deleted[cur.Name] = *cur
					}
					h.mu.Unlock()
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if ml, ok := list.(*etcdv1.EtcdMemberList); ok {
				h.mu.Lock()
				defer h.mu.Unlock()
				for i, m := range ml.Items {
					if h.undecodable[m.Name] {
						meta := *m.ObjectMeta.DeepCopy()
						meta.Annotations = map[string]string{etcdv1.UndecodableAnnotation: "cannot decode " + m.Name}
						ml.Items[i] = etcdv1.EtcdMember{TypeMeta: m.TypeMeta, ObjectMeta: meta}
					}
				}
			}
			return nil
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if appliedKind(obj) == "EtcdCluster" && h.failClusterStatus {
				return fmt.Errorf("operator killed before the status write")
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	return h
}

// watchForce counts a write that turns a member's forceNewCluster on.
func (h *healEnv) watchForce(ctx context.Context, c client.Client, obj client.Object) {
	m, ok := obj.(*etcdv1.EtcdMember)
	if !ok || !m.Spec.ForceNewCluster {
		return
	}
	cur := &etcdv1.EtcdMember{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil || cur.Spec.ForceNewCluster {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forced[m.Name]++
}

func (h *healEnv) forcedCount(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.forced[name]
}

// pass plays the member controller's fencing, then runs one reconcile and
// keeps its events.
func (h *healEnv) pass() {
	h.t.Helper()
	h.playFences()
	h.mustReconcile()
	h.evs = append(h.evs, h.events()...)
}

// eventCount counts the events of this type and reason whose message
// contains each of the words.
func (h *healEnv) eventCount(typ, reason string, words ...string) int {
	n := 0
	for _, ev := range h.evs {
		if !strings.HasPrefix(ev, typ+" "+reason+" ") {
			continue
		}
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(ev, w) }) {
			n++
		}
	}
	return n
}

// sortedMembers are the EtcdMembers by name.
func (h *healEnv) sortedMembers() []etcdv1.EtcdMember {
	ms := h.members()
	slices.SortFunc(ms, func(a, b etcdv1.EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	return ms
}

// leaderAndFollowers names the member etcd has as leader and the others.
func (h *healEnv) leaderAndFollowers() (leader string, followers []string) {
	h.t.Helper()
	for _, m := range h.sortedMembers() {
		id, err := etcd.ParseID(m.Status.MemberID)
		if err != nil {
			h.t.Fatalf("%s: %v", m.Name, err)
		}
		if id == h.fake().Leader() {
			leader = m.Name
		} else {
			followers = append(followers, m.Name)
		}
	}
	return leader, followers
}

func (h *healEnv) setRaftIndex(member string, index uint64) {
	h.fake().SetRaftIndex(member, index)
}

// setMemberCondition plays the member controller: the condition for the
// member's current generation.
func (h *healEnv) setMemberCondition(name, typ string, status metav1.ConditionStatus, reason, msg string) {
	h.t.Helper()
	m := h.member(name)
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: m.Generation})
	if err := h.c.Status().Update(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
}

// backdate moves the last transition of a condition into the past.
func backdate(conds []metav1.Condition, typ string, by time.Duration) bool {
	for i := range conds {
		if conds[i].Type == typ {
			conds[i].LastTransitionTime = metav1.NewTime(time.Now().Add(-by))
			return true
		}
	}
	return false
}

func (h *healEnv) backdateMember(name, typ string, by time.Duration) {
	h.t.Helper()
	m := h.member(name)
	if !backdate(m.Status.Conditions, typ, by) {
		h.t.Fatalf("%s has no %s condition: %+v", name, typ, m.Status.Conditions)
	}
	if err := h.c.Status().Update(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
}

func (h *healEnv) backdateCluster(typ string, by time.Duration) {
	h.t.Helper()
	c := h.cluster()
	if !backdate(c.Status.Conditions, typ, by) {
		h.t.Fatalf("the cluster has no %s condition: %+v", typ, c.Status.Conditions)
	}
	if err := h.c.Status().Update(context.Background(), c); err != nil {
		h.t.Fatal(err)
	}
}

// annotate names the member to recover the quorum from, as a person does.
func (h *healEnv) annotate(member string) {
	h.t.Helper()
	c := h.cluster()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1.RecoverQuorumAnnotation] = member
	if err := h.c.Update(context.Background(), c); err != nil {
		h.t.Fatal(err)
	}
}

// setRecoverySpec sets spec.recovery, as a user does.
func (h *healEnv) setRecoverySpec(rs etcdv1.RecoverySpec) {
	h.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Recovery = rs })
}

// loseQuorum makes the named members stop answering; their member
// controller reports their Pods not ready.
func (h *healEnv) loseQuorum(gone ...string) {
	h.t.Helper()
	for _, name := range gone {
		h.fake().SetHealthy(name, false)
		h.setMemberCondition(name, etcdv1.ConditionReady, metav1.ConditionFalse, etcdv1.ReasonPodNotReady, "Pod "+name+" is not ready: node lost")
	}
}

// playMembers plays etcd and the member controller between passes: a
// learner etcd lists starts, a voter that answers is Ready for its
// generation, and, with retain, a member asked to keep its volume reports
// VolumeRetained for its generation.
func (h *healEnv) playMembers(retain bool) {
	h.t.Helper()
	listed := h.fake().Members()
	for _, m := range h.members() {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		i := slices.IndexFunc(listed, func(em etcd.Member) bool { return slices.Contains(em.PeerURLs, m.Spec.PeerURL) })
		if i >= 0 && !listed[i].Started() {
			h.fake().Start(m.Spec.PeerURL, m.Name, m.Spec.ClientURL, true)
		}
		_, answers := h.fake().Status(context.Background(), m.Spec.ClientURL)
		if i >= 0 && !listed[i].IsLearner && answers == nil && !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			h.setMemberCondition(m.Name, etcdv1.ConditionReady, metav1.ConditionTrue, etcdv1.ReasonPodReady, "")
		}
		if retain && m.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain && !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation) {
			h.setMemberCondition(m.Name, etcdv1.ConditionVolumeRetained, metav1.ConditionTrue, etcdv1.ReasonVolumeReleased, "set by the test")
		}
	}
}

// playFences plays the member controller on fenced members: the Pod of
// each stops (its etcd no longer answers) and Ready says Fenced for the
// member's generation.
func (h *healEnv) playFences() {
	h.t.Helper()
	for _, m := range h.members() {
		if !m.Spec.Fenced || h.unstoppable[m.Name] {
			continue
		}
		h.fake().SetHealthy(m.Name, false)
		if r := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); r == nil || r.Reason != etcdv1.ReasonFenced || r.ObservedGeneration != m.Generation {
			h.fenced = append(h.fenced, m.Name)
			h.setMemberCondition(m.Name, etcdv1.ConditionReady, metav1.ConditionFalse, etcdv1.ReasonFenced, "set by the test")
		}
	}
}

// fenceThenForce checks the last two steps before a member is forced: one
// pass fences every other member and forces nothing, saying it waits for
// their Pods; once they are stopped (playFences), the next forces keep.
func (h *healEnv) fenceThenForce(keep string) {
	h.t.Helper()
	h.pass()
	if f := h.forcedMembers(); len(f) != 0 {
		h.t.Fatalf("forced %v before the other members were fenced", f)
	}
	var others []string
	for _, m := range h.members() {
		if m.Name == keep {
			if m.Spec.Fenced {
				h.t.Errorf("the member to force, %s, is fenced", keep)
			}
			continue
		}
		others = append(others, m.Name)
		if !m.Spec.Fenced {
			h.t.Errorf("member %s not fenced before %s is forced", m.Name, keep)
		}
	}
	if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); !strings.Contains(p.Message, "fenced") {
		h.t.Errorf("Progressing = %+v, want it to say it waits for the fenced members", p)
	}
	if n := h.eventCount("Warning", "MembersFenced", others...); n != 1 {
		h.t.Errorf("%d MembersFenced events naming %v, want 1: %v", n, others, h.evs)
	}
	h.pass()
	if f := h.forcedMembers(); !slices.Equal(f, []string{keep}) {
		h.t.Fatalf("forced members = %v once the others are fenced, want [%s]", f, keep)
	}
	for _, name := range others {
		if !slices.Contains(h.fenced, name) {
			h.t.Errorf("member %s's Pod was not stopped before %s was forced", name, keep)
		}
	}
}

// removing says whether the member is being deleted or gone.
func (h *healEnv) removing(name string) bool {
	h.t.Helper()
	m := &etcdv1.EtcdMember{}
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, m)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return !m.DeletionTimestamp.IsZero()
}

// forcedMembers names the members whose spec asks for --force-new-cluster.
func (h *healEnv) forcedMembers() []string {
	var out []string
	for _, m := range h.members() {
		if m.Spec.ForceNewCluster {
			out = append(out, m.Name)
		}
	}
	return out
}

// recovery is the stored status.recovery, or a zero one.
func (h *healEnv) recovery() etcdv1.RecoveryStatus {
	if rs := h.cluster().Status.Recovery; rs != nil {
		return *rs
	}
	return etcdv1.RecoveryStatus{}
}

// restartOperator replaces the reconciler with a fresh one, as a new
// operator process that knows only what the API server stored.
func (h *healEnv) restartOperator() {
	h.r = &Reconciler{Client: h.c, APIReader: h.c, Recorder: h.rec, Etcd: h.etcd, Options: h.r.Options}
}

// apartFromCollector keeps a healing test away from TestClusterCollector.
// Every env is the cluster ns/demo, whose members' database sizes the
// package keeps in the global dbSizes, and TestClusterCollector expects no
// sizes for its own ns/demo. So a healing test runs its cases in parallel
// with each other but not alongside the package's parallel tests (a
// top-level test that does not call t.Parallel ends before those start),
// and leaves no sizes behind.
func apartFromCollector(t *testing.T) {
	t.Cleanup(func() { dbSizes.Delete("ns/demo") })
}

func TestCorruptMemberIsReplacedAndAlarmCleared(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name string
		// corrupt are the followers (by index) with a CORRUPT alarm.
		corrupt []int
		// down is the follower (by index) that does not answer, or -1.
		down int
		// wantDeleted are the followers deleted after the first pass.
		wantDeleted []int
	}{
		{name: "a corrupt follower is replaced", corrupt: []int{0}, down: -1, wantDeleted: []int{0}},
		{name: "two corrupt followers go one at a time", corrupt: []int{0, 1}, down: -1, wantDeleted: []int{0}},
		{name: "not while its removal would lose the quorum", corrupt: []int{0}, down: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 3)
			h.formed()
			_, followers := h.leaderAndFollowers()
			var corrupt []string
			for _, i := range tt.corrupt {
				corrupt = append(corrupt, followers[i])
				h.fake().RaiseAlarm(followers[i], etcd.AlarmCorrupt)
			}
			if tt.down >= 0 {
				h.fake().SetHealthy(followers[tt.down], false)
			}
			h.pass()

			c := h.cluster()
			if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonCorrupt || !strings.Contains(d.Message, corrupt[0]) {
				t.Errorf("Degraded = %+v, want True Corrupt naming %s", d, corrupt[0])
			}
			for _, name := range corrupt {
				if !slices.ContainsFunc(c.Status.Alarms, func(a etcdv1.ClusterAlarm) bool { return a.Type == etcd.AlarmCorrupt && a.Member == name }) {
					t.Errorf("status.alarms = %+v, want a CORRUPT alarm of %s", c.Status.Alarms, name)
				}
			}
			var deleted []string
			for _, name := range followers {
				if h.removing(name) {
					deleted = append(deleted, name)
				}
			}
			var want []string
			for _, i := range tt.wantDeleted {
				want = append(want, followers[i])
			}
			if !slices.Equal(deleted, want) {
				t.Fatalf("deleted after the first pass: %v, want %v", deleted, want)
			}
			for _, name := range want {
				if n := h.eventCount("Warning", "MemberCorrupt", name); n != 1 {
					t.Errorf("%d MemberCorrupt events for %s, want 1; events: %v", n, name, h.evs)
				}
			}

			if len(want) == 0 {
				// The rest would have no quorum: nothing moves, and it
				// says why.
				h.pass()
				h.pass()
				if h.removing(corrupt[0]) || h.eventCount("Warning", "MemberCorrupt") != 0 {
					t.Errorf("corrupt member %s deleted while its removal would lose the quorum; events: %v", corrupt[0], h.evs)
				}
				if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonQuorumAtRisk || !strings.Contains(p.Message, corrupt[0]) {
					t.Errorf("Progressing = %+v, want QuorumAtRisk naming %s", p, corrupt[0])
				}
				if n := h.fake().Calls("MemberRemove"); n != 0 {
					t.Errorf("MemberRemove called %d times", n)
				}
				return
			}

			// The member leaves etcd; then its alarm is cleared.
			for range 3 {
				h.pass()
			}
			for _, em := range h.fake().Members() {
				if em.Name == corrupt[0] {
					t.Errorf("corrupt member %s still in etcd", corrupt[0])
				}
			}
			alarms, err := h.fake().Alarms(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(alarms, func(a etcd.Alarm) bool {
				return etcd.FormatID(a.MemberID) == h.deleted[corrupt[0]].Status.MemberID
			}) {
				t.Errorf("the alarm of removed member %s is still raised: %+v", corrupt[0], alarms)
			}
			if n := h.eventCount("Normal", "AlarmCleared", h.deleted[corrupt[0]].Status.MemberID); n != 1 {
				t.Errorf("%d AlarmCleared events for %s, want 1; events: %v", n, corrupt[0], h.evs)
			}
			if len(corrupt) == 1 {
				if len(alarms) != 0 {
					t.Errorf("fake etcd alarms = %+v, want none", alarms)
				}
				h.converge(30)
				c := h.cluster()
				if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionFalse || len(c.Status.Alarms) != 0 {
					t.Errorf("after the replacement: Degraded %+v, alarms %+v", d, c.Status.Alarms)
				}
				if n := len(h.fake().Members()); n != 3 || len(h.members()) != 3 {
					t.Errorf("after the replacement: %d etcd members, %d EtcdMembers, want 3", n, len(h.members()))
				}
			}
		})
	}
}

func TestNoSpaceAlarmIsReported(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name   string
		leader bool
	}{
		{name: "on a follower"},
		{name: "on the leader", leader: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 3)
			h.formed()
			leader, followers := h.leaderAndFollowers()
			name := followers[0]
			if tt.leader {
				name = leader
			}
			h.fake().RaiseAlarm(name, etcd.AlarmNoSpace)
			h.pass()
			h.pass()

			c := h.cluster()
			if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonNoSpace || !strings.Contains(d.Message, name) {
				t.Errorf("Degraded = %+v, want True NoSpace naming %s", d, name)
			}
			want := []etcdv1.ClusterAlarm{{Type: etcd.AlarmNoSpace, MemberID: h.member(name).Status.MemberID, Member: name}}
			if !slices.Equal(c.Status.Alarms, want) {
				t.Errorf("status.alarms = %+v, want %+v", c.Status.Alarms, want)
			}
			for _, m := range h.members() {
				if !m.DeletionTimestamp.IsZero() {
					t.Errorf("member %s deleted for a NOSPACE alarm", m.Name)
				}
			}
			if n := h.fake().Calls("DisarmAlarm"); n != 0 {
				t.Errorf("DisarmAlarm called %d times for a NOSPACE alarm", n)
			}
		})
	}
}

func TestStuckLearnerIsReplaced(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name string
		// registeredFor is how long ago the learner was registered.
		registeredFor time.Duration
		// started: its etcd started but never caught up.
		started bool
		// staleInitial: its --initial-cluster names a member etcd no longer
		// lists; failingFor: its Pod has been failing (Ready PodFailing)
		// this long.
		staleInitial bool
		failingFor   time.Duration
		wantStuck    bool
		wantWhy      string
	}{
		{name: "never started, past the timeout", registeredFor: 10 * time.Minute, wantStuck: true, wantWhy: "did not start"},
		{name: "started, never caught up, past the timeout", registeredFor: 10 * time.Minute, started: true, wantStuck: true, wantWhy: "did not catch up"},
		{name: "never started, within the timeout", registeredFor: time.Minute},
		{name: "just added", registeredFor: 0},
		// A member removed after the learner's --initial-cluster was
		// written: etcd refuses it on every start.
		{name: "initial cluster no longer etcd's", staleInitial: true, wantStuck: true, wantWhy: "cannot join"},
		{name: "crash-looping", failingFor: 30 * time.Second, wantStuck: true, wantWhy: "cannot start"},
		{name: "failing a moment", failingFor: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 1)
			h.r.Options.LearnerTimeout = 5 * time.Minute
			h.formed()
			h.setReplicas(2)
			h.pass()
			var learner etcdv1.EtcdMember
			for _, m := range h.members() {
				if m.Status.Role == etcdv1.RoleLearner {
					learner = m
				}
			}
			if learner.Name == "" {
				t.Fatalf("no learner added: %+v", h.members())
			}
			if tt.started {
				h.fake().Start(learner.Spec.PeerURL, learner.Name, learner.Spec.ClientURL, false)
			}
			if tt.registeredFor > 0 {
				h.backdateMember(learner.Name, etcdv1.ConditionRegistered, tt.registeredFor)
			}
			if tt.staleInitial {
				m := h.member(learner.Name)
				m.Spec.InitialCluster = "gone=https://gone.demo-peer.ns.svc:2380," + m.Spec.InitialCluster
				if err := h.c.Update(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			if tt.failingFor > 0 {
				h.setMemberCondition(learner.Name, etcdv1.ConditionReady, metav1.ConditionFalse, etcdv1.ReasonPodFailing, "CrashLoopBackOff (last exit code 1)")
				h.backdateMember(learner.Name, etcdv1.ConditionReady, tt.failingFor)
			}
			h.pass()

			if got := h.removing(learner.Name); got != tt.wantStuck {
				t.Fatalf("learner deleted = %v, want %v", got, tt.wantStuck)
			}
			if n := h.eventCount("Warning", "LearnerStuck", learner.Name, tt.wantWhy); (n == 1) != tt.wantStuck || n > 1 {
				t.Errorf("%d LearnerStuck events for %s (%q); events: %v", n, learner.Name, tt.wantWhy, h.evs)
			}
			if !tt.wantStuck {
				if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonPromotingLearner {
					t.Errorf("Progressing = %+v, want PromotingLearner", p)
				}
				return
			}
			if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonLearnerStuck || !strings.Contains(p.Message, learner.Name) {
				t.Errorf("Progressing = %+v, want LearnerStuck naming %s", p, learner.Name)
			}
			// It leaves etcd, and a new learner takes its place.
			for range 4 {
				h.pass()
			}
			if slices.ContainsFunc(h.fake().Members(), func(em etcd.Member) bool { return slices.Contains(em.PeerURLs, learner.Spec.PeerURL) }) {
				t.Errorf("stuck learner %s still in etcd", learner.Name)
			}
			if n := h.fake().Calls("MemberAddAsLearner"); n != 2 {
				t.Errorf("MemberAddAsLearner calls = %d, want 2 (the stuck learner and its replacement)", n)
			}
			if h.eventCount("Warning", "LearnerStuck") != 1 {
				t.Errorf("the new learner was taken as stuck too; events: %v", h.evs)
			}
		})
	}
}

// TestQuorumLossIsReportedOnce: etcd has no quorum; the status names the
// members gone and what the reachable one holds, one Warning event marks
// it, and with the Manual policy and no annotation nothing is forced.
func TestQuorumLossIsReportedOnce(t *testing.T) {
	apartFromCollector(t)
	h := newHealEnv(t, 3)
	h.formed()
	ms := h.sortedMembers()
	keep, gone := ms[0].Name, []string{ms[1].Name, ms[2].Name}
	h.setRaftIndex(keep, 4242)
	h.loseQuorum(gone...)
	for range 4 {
		h.pass()
	}

	c := h.cluster()
	a := condition(c.Status.Conditions, etcdv1.ConditionAvailable)
	if a.Status != metav1.ConditionFalse || a.Reason != etcdv1.ReasonQuorumLost {
		t.Errorf("Available = %+v, want False QuorumLost", a)
	}
	for _, want := range []string{gone[0], gone[1], "node lost", keep + " (raft index 4242"} {
		if !strings.Contains(a.Message, want) {
			t.Errorf("Available message %q does not say %q", a.Message, want)
		}
	}
	if n := h.eventCount("Warning", "QuorumLost"); n != 1 {
		t.Errorf("%d QuorumLost events over 4 passes, want 1; events: %v", n, h.evs)
	}
	if f := h.forcedMembers(); len(f) != 0 {
		t.Errorf("members forced without an annotation: %v", f)
	}
	if c.Status.Recovery != nil {
		t.Errorf("status.recovery = %+v, want none", c.Status.Recovery)
	}
	if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonQuorumLost || !strings.Contains(p.Message, etcdv1.RecoverQuorumAnnotation) {
		t.Errorf("Progressing = %+v, want QuorumLost saying how to recover", p)
	}
}

// TestManualQuorumRecovery: the annotation names the reachable member; it
// restarts alone with --force-new-cluster, the members left behind keep
// their volumes, and the cluster grows back. restart replaces the
// reconciler at the named point, as an operator restart does; reannotate
// then names another member than the one recorded.
func TestManualQuorumRecovery(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name      string
		replicas  int32
		reachable int // the first members by name answer, the others are gone
		// restartAt is the phase of the stored status.recovery after
		// which the operator restarts ("" for none); flagged: after the
		// flag was set.
		restartAt string
		flagged   bool
		// reannotate names the second reachable member in the annotation
		// once the recovery from the first is recorded.
		reannotate bool
		// crash fails the status write of the pass that records the intent.
		crash bool
	}{
		{name: "straight through", replicas: 3, reachable: 1},
		{name: "restart once the intent is stored", replicas: 3, reachable: 1, restartAt: etcdv1.RecoveryForcing},
		{name: "restart once the flag is set", replicas: 3, reachable: 1, restartAt: etcdv1.RecoveryForcing, flagged: true},
		{name: "restart while regrowing", replicas: 3, reachable: 1, restartAt: etcdv1.RecoveryRegrowing},
		{name: "crash before the intent is stored", replicas: 3, reachable: 1, crash: true},
		{name: "restart and another member named", replicas: 5, reachable: 2, restartAt: etcdv1.RecoveryForcing, reannotate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, tt.replicas)
			h.formed()
			ms := h.sortedMembers()
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			keep, gone := names[0], names[tt.reachable:]
			h.setRaftIndex(keep, 4242)
			for _, other := range names[1:tt.reachable] {
				h.setRaftIndex(other, 4000) // behind: the annotation may name keep
			}
			h.loseQuorum(gone...)
			h.pass()
			h.pass()
			if a := condition(h.cluster().Status.Conditions, etcdv1.ConditionAvailable); a.Reason != etcdv1.ReasonQuorumLost {
				t.Fatalf("Available = %+v, want QuorumLost", a)
			}

			h.annotate(keep)
			if tt.crash {
				h.failClusterStatus = true
				if _, err := h.reconcile(); err == nil {
					t.Fatal("want the injected status error")
				}
				h.evs = append(h.evs, h.events()...)
				h.failClusterStatus = false
				if f := h.forcedMembers(); len(f) != 0 {
					t.Fatalf("members forced before the intent was stored: %v", f)
				}
			}
			// 1. The intent is stored, nothing forced yet.
			h.pass()
			rs := h.recovery()
			if rs.Phase != etcdv1.RecoveryForcing || rs.Member != keep || rs.RaftIndex != 4242 || rs.Automatic {
				t.Fatalf("status.recovery = %+v, want Forcing from %s at raft index 4242, not automatic", rs, keep)
			}
			if f := h.forcedMembers(); len(f) != 0 {
				t.Fatalf("members forced in the pass that stored the intent: %v", f)
			}
			if n := h.eventCount("Warning", "QuorumRecoveryStarted", keep); n < 1 {
				t.Errorf("no QuorumRecoveryStarted event for %s: %v", keep, h.evs)
			}
			if tt.reannotate {
				h.annotate(names[1])
			}
			if tt.restartAt == etcdv1.RecoveryForcing && !tt.flagged {
				h.restartOperator()
			}

			// 2. Every other member is fenced, then the recorded member
			// is forced, once.
			h.fenceThenForce(keep)
			if tt.flagged {
				h.restartOperator()
			}
			// Its Pod restarts with the flag; etcd has no quorum meanwhile.
			h.pass()
			h.pass()
			if n := h.forcedCount(keep); n != 1 {
				t.Errorf("forceNewCluster set %d times on %s, want 1", n, keep)
			}

			// 3. etcd runs as that one member: the flag is cleared.
			h.fake().ForceNewCluster(keep)
			h.pass()
			rs = h.recovery()
			if rs.Phase != etcdv1.RecoveryRegrowing || rs.Member != keep {
				t.Fatalf("status.recovery = %+v, want Regrowing from %s", rs, keep)
			}
			if f := h.forcedMembers(); len(f) != 0 {
				t.Errorf("forceNewCluster still set on %v once etcd runs alone", f)
			}
			if h.eventCount("Normal", "QuorumRestored", keep) != 1 {
				t.Errorf("no QuorumRestored event: %v", h.evs)
			}
			if tt.restartAt == etcdv1.RecoveryRegrowing {
				h.restartOperator()
			}

			// 4. A member left behind keeps its volume before it goes.
			h.playMembers(false)
			h.pass()
			h.pass()
			retained := 0
			for _, name := range names[1:] {
				m := h.member(name)
				if !m.DeletionTimestamp.IsZero() {
					t.Errorf("%s deleted before its volume was kept", name)
				}
				if m.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain {
					retained++
				}
			}
			if retained == 0 {
				t.Fatalf("no member left behind was asked to keep its volume")
			}

			// 5. The cluster grows back to its size.
			for i := 0; i < 80 && h.recovery().Phase != etcdv1.RecoveryDone; i++ {
				h.playMembers(true)
				h.pass()
				// The pass that removes the annotation is the one that
				// stores Done: never one without the other.
				c := h.cluster()
				if _, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; !ok && h.recovery().Phase != etcdv1.RecoveryDone {
					t.Errorf("annotation removed, but status.recovery is %+v", h.recovery())
				}
			}
			c := h.cluster()
			rs = h.recovery()
			if rs.Phase != etcdv1.RecoveryDone || rs.FinishedAt == nil || rs.Member != keep {
				t.Fatalf("status.recovery = %+v, want Done from %s; Progressing %+v", rs, keep, condition(c.Status.Conditions, etcdv1.ConditionProgressing))
			}
			if _, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
				t.Errorf("annotation %s kept after the recovery", etcdv1.RecoverQuorumAnnotation)
			}
			if n := h.eventCount("Normal", "QuorumRecovered", keep); n != 1 {
				t.Errorf("%d QuorumRecovered events, want 1: %v", n, h.evs)
			}
			if a := condition(c.Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionTrue {
				t.Errorf("Available = %+v after the recovery", a)
			}
			voters := 0
			for _, em := range h.fake().Members() {
				if !em.IsLearner {
					voters++
				}
				if slices.Contains(names[1:], em.Name) {
					t.Errorf("member left behind %s is in etcd again", em.Name)
				}
			}
			if voters != int(tt.replicas) || len(h.fake().Members()) != int(tt.replicas) {
				t.Errorf("etcd has %d voters of %d members, want %d voters", voters, len(h.fake().Members()), tt.replicas)
			}
			if got := h.members(); len(got) != int(tt.replicas) || !slices.ContainsFunc(got, func(m etcdv1.EtcdMember) bool { return m.Name == keep }) {
				t.Errorf("EtcdMembers = %d (keeping %s?), want %d", len(got), keep, tt.replicas)
			}
			for _, name := range names[1:] {
				m, ok := h.deleted[name]
				switch {
				case !ok:
					t.Errorf("member left behind %s was not deleted", name)
				case m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain:
					t.Errorf("%s deleted with deletionPolicy %q, want Retain", name, m.Spec.DeletionPolicy)
				case !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation):
					t.Errorf("%s deleted before VolumeRetained was True for its generation: %+v", name, m.Status.Conditions)
				}
			}
			if _, ok := h.deleted[keep]; ok {
				t.Errorf("the member recovered from, %s, was deleted", keep)
			}
			for _, name := range names {
				want := 0
				if name == keep {
					want = 1
				}
				if n := h.forcedCount(name); n != want {
					t.Errorf("forceNewCluster set %d times on %s, want %d", n, name, want)
				}
			}

			// Done stays done.
			h.pass()
			if rs := h.recovery(); rs.Phase != etcdv1.RecoveryDone || len(h.forcedMembers()) != 0 {
				t.Errorf("after Done: recovery %+v, forced %v", rs, h.forcedMembers())
			}
		})
	}
}

// TestQuorumBackBeforeForcing: etcd regains its quorum by itself after the
// intent was stored and before the flag was set; the recovery ends with
// nothing forced, and a later loss does not start a recovery from the old
// annotation.
func TestQuorumBackBeforeForcing(t *testing.T) {
	apartFromCollector(t)
	h := newHealEnv(t, 3)
	h.formed()
	ms := h.sortedMembers()
	keep, gone := ms[0].Name, []string{ms[1].Name, ms[2].Name}
	h.loseQuorum(gone...)
	h.pass()
	h.annotate(keep)
	h.pass()
	if rs := h.recovery(); rs.Phase != etcdv1.RecoveryForcing {
		t.Fatalf("status.recovery = %+v, want Forcing", rs)
	}

	for _, name := range gone {
		h.fake().SetHealthy(name, true)
	}
	h.playMembers(false)
	h.pass()
	rs := h.recovery()
	if rs.Phase != etcdv1.RecoveryDone || rs.FinishedAt == nil {
		t.Errorf("status.recovery = %+v, want Done", rs)
	}
	if n := h.eventCount("Normal", "QuorumRecoveryCancelled"); n != 1 {
		t.Errorf("%d QuorumRecoveryCancelled events, want 1: %v", n, h.evs)
	}
	for range 3 {
		h.pass()
	}
	if f := h.forcedMembers(); len(f) != 0 || h.forcedCount(keep) != 0 {
		t.Errorf("forced %v (%d writes) after the quorum came back by itself", f, h.forcedCount(keep))
	}
	if n := len(h.fake().Members()); n != 3 {
		t.Errorf("etcd members = %d, want the 3 it had", n)
	}
	if a := condition(h.cluster().Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionTrue {
		t.Errorf("Available = %+v, want True", a)
	}
	// The operator removes the annotation when the recovery is done
	// (RecoverQuorumAnnotation): left in place, it would restart the
	// cluster from that member at the next loss with no one deciding.
	if v, ok := h.cluster().Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
		t.Errorf("annotation %s=%s kept after the recovery ended", etcdv1.RecoverQuorumAnnotation, v)
	}
	h.loseQuorum(gone...)
	for range 3 {
		h.pass()
	}
	if rs := h.recovery(); rs.Phase != etcdv1.RecoveryDone || len(h.forcedMembers()) != 0 {
		t.Errorf("a later quorum loss started a recovery nobody asked for: recovery %+v, forced %v", rs, h.forcedMembers())
	}
}

// TestFencingWaitsForEveryPod: the member named is forced only once every
// other member's Pod is stopped; one that does not stop (its node does not
// answer) holds the recovery, named in the condition. A quorum that comes
// back while the recovery waits (that member's etcd was running after all)
// cancels it, nothing forced, and every member gets its Pod back.
func TestFencingWaitsForEveryPod(t *testing.T) {
	apartFromCollector(t)
	for _, back := range []bool{false, true} {
		t.Run(map[bool]string{false: "the Pod stops late", true: "the quorum comes back"}[back], func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 3)
			h.formed()
			ms := h.sortedMembers()
			keep, stuck, gone := ms[0].Name, ms[1].Name, ms[2].Name
			h.unstoppable = map[string]bool{stuck: true}
			h.loseQuorum(stuck, gone)
			h.pass()
			h.annotate(keep)
			h.pass()
			for range 3 {
				h.pass()
			}
			if f := h.forcedMembers(); len(f) != 0 {
				t.Fatalf("forced %v while the Pod of %s still runs", f, stuck)
			}
			if !h.member(stuck).Spec.Fenced || !h.member(gone).Spec.Fenced {
				t.Fatalf("members not fenced: %s %v, %s %v", stuck, h.member(stuck).Spec.Fenced, gone, h.member(gone).Spec.Fenced)
			}
			p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing)
			if !strings.Contains(p.Message, stuck) || strings.Contains(p.Message, gone+",") || !strings.Contains(p.Message, "--force") {
				t.Errorf("Progressing = %+v, want it to name %s alone and say what a person can do", p, stuck)
			}
			if back {
				h.fake().SetHealthy(stuck, true)
				h.pass()
				rs := h.recovery()
				if rs.Phase != etcdv1.RecoveryDone || h.eventCount("Normal", "QuorumRecoveryCancelled") != 1 {
					t.Fatalf("status.recovery = %+v, want Done, cancelled: %v", rs, h.evs)
				}
				for _, m := range h.members() {
					if m.Spec.Fenced {
						t.Errorf("member %s still fenced after the recovery was cancelled", m.Name)
					}
				}
				if f := h.forcedMembers(); len(f) != 0 || h.forcedCount(keep) != 0 {
					t.Errorf("forced %v after the quorum came back", f)
				}
				return
			}
			delete(h.unstoppable, stuck)
			h.pass()
			h.pass()
			if f := h.forcedMembers(); !slices.Equal(f, []string{keep}) {
				t.Fatalf("forced %v once every other Pod stopped, want [%s]", f, keep)
			}
		})
	}
}

// TestUndecodableMemberHoldsTheCluster: an EtcdMember the operator cannot
// decode (marked, its spec unknown) is not taken for a missing member: no
// other is added in its place, and a lost quorum is not recovered, since
// it could not be fenced; Degraded and Progressing name it.
func TestUndecodableMemberHoldsTheCluster(t *testing.T) {
	apartFromCollector(t)
	h := newHealEnv(t, 3)
	h.formed()
	ms := h.sortedMembers()
	keep, bad := ms[0].Name, ms[2].Name
	h.mu.Lock()
	h.undecodable = map[string]bool{bad: true}
	h.mu.Unlock()
	for range 3 {
		h.pass()
	}
	if n := len(h.members()); n != 3 {
		t.Errorf("%d EtcdMembers, want the 3 there were: none added for the undecodable one", n)
	}
	c := h.cluster()
	if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonMemberUndecodable || !strings.Contains(d.Message, bad) {
		t.Errorf("Degraded = %+v, want True MemberUndecodable naming %s", d, bad)
	}
	if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonMemberUndecodable {
		t.Errorf("Progressing = %+v, want MemberUndecodable", p)
	}
	h.loseQuorum(ms[1].Name, bad)
	h.annotate(keep)
	for range 3 {
		h.pass()
	}
	if rs := h.recovery(); rs.Phase != "" {
		t.Errorf("status.recovery = %+v: a recovery started while a member cannot be decoded", rs)
	}
	for _, m := range h.members() {
		if m.Spec.Fenced || m.Spec.ForceNewCluster {
			t.Errorf("member %s fenced %v, forced %v while a member cannot be decoded", m.Name, m.Spec.Fenced, m.Spec.ForceNewCluster)
		}
	}
}

// TestPanicInAStatusCallEndsNoPass: the status requests of a pass run in
// goroutines of their own, where a panic would end the operator for every
// tenant; one is recovered, the member counts as not answering for that
// pass, and the next pass sees it healthy again.
func TestPanicInAStatusCallEndsNoPass(t *testing.T) {
	apartFromCollector(t)
	h := newHealEnv(t, 3)
	h.formed()
	h.fake().FailNext("Status", etcd.Panic("a bug in a client library"))
	h.pass()
	c := h.cluster()
	if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("Degraded = %+v after a status call panicked, want True", d)
	}
	if a := condition(c.Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionTrue {
		t.Errorf("Available = %+v: two of three members answered", a)
	}
	h.pass()
	if d := condition(h.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v on the next pass, want False", d)
	}
}

// TestAutomaticQuorumRecovery: with spec.recovery.quorumLoss Automatic the
// reachable member with the highest raft index is chosen once the quorum
// has been lost for quorumLossAfter, and not before, and only when every
// member that does not answer is known to have lost its data: a member
// only paused or cut off may hold acknowledged writes the reachable ones
// never saw.
func TestAutomaticQuorumRecovery(t *testing.T) {
	apartFromCollector(t)
	tests := []struct {
		name     string
		lostFor  time.Duration
		indexes  [2]uint64 // of the two reachable members, by name
		dataLost int       // of the three gone members, how many lost their data
		deleting int       // of those, how many are being deleted (replaced)
		wantFrom int       // index of the member chosen, -1 for none
		want     string    // in the Progressing message when none
	}{
		{name: "the second member is ahead", lostFor: 2 * time.Minute, indexes: [2]uint64{100, 200}, dataLost: 3, wantFrom: 1},
		{name: "the first member is ahead", lostFor: 2 * time.Minute, indexes: [2]uint64{300, 200}, dataLost: 3, wantFrom: 0},
		{name: "not before quorumLossAfter", lostFor: 30 * time.Second, indexes: [2]uint64{100, 200}, dataLost: 3, wantFrom: -1, want: "Automatic"},
		{name: "a member gone may hold writes", lostFor: 2 * time.Minute, indexes: [2]uint64{100, 200}, dataLost: 2, wantFrom: -1, want: "may still hold acknowledged writes"},
		{name: "every member gone may hold writes", lostFor: 2 * time.Minute, indexes: [2]uint64{300, 200}, dataLost: 0, wantFrom: -1, want: etcdv1.RecoverQuorumAnnotation},
		// Members already being replaced for their lost data (their removal
		// waits for the quorum) hold nothing either.
		{name: "members lost and being replaced", lostFor: 2 * time.Minute, indexes: [2]uint64{100, 200}, dataLost: 3, deleting: 2, wantFrom: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHealEnv(t, 5)
			h.setRecoverySpec(etcdv1.RecoverySpec{QuorumLoss: etcdv1.QuorumLossAutomatic, QuorumLossAfter: "1m"})
			h.formed()
			ms := h.sortedMembers()
			reachable := []string{ms[0].Name, ms[1].Name}
			for i, name := range reachable {
				h.setRaftIndex(name, tt.indexes[i])
			}
			for i, m := range ms[2:] {
				if i < tt.deleting {
					if err := h.c.Delete(context.Background(), h.member(m.Name)); err != nil {
						t.Fatal(err)
					}
				}
				if i < tt.dataLost {
					h.loseData(m.Name)
				} else {
					h.loseQuorum(m.Name)
				}
			}
			h.pass()
			h.pass()
			if rs := h.cluster().Status.Recovery; rs != nil {
				t.Fatalf("recovery started as soon as the quorum was lost: %+v", rs)
			}
			h.backdateCluster(etcdv1.ConditionAvailable, tt.lostFor)
			h.pass()

			if tt.wantFrom < 0 {
				h.pass()
				if rs := h.cluster().Status.Recovery; rs != nil || len(h.forcedMembers()) != 0 {
					t.Errorf("recovery %+v, forced %v", rs, h.forcedMembers())
				}
				if p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonQuorumLost || !strings.Contains(p.Message, tt.want) {
					t.Errorf("Progressing = %+v, want QuorumLost saying %q", p, tt.want)
				}
				return
			}
			want := reachable[tt.wantFrom]
			rs := h.recovery()
			if rs.Phase != etcdv1.RecoveryForcing || rs.Member != want || !rs.Automatic || uint64(rs.RaftIndex) != tt.indexes[tt.wantFrom] {
				t.Fatalf("status.recovery = %+v, want Forcing from %s (raft index %d), automatic", rs, want, tt.indexes[tt.wantFrom])
			}
			if f := h.forcedMembers(); len(f) != 0 {
				t.Fatalf("members forced in the pass that stored the intent: %v", f)
			}
			h.pass()
			h.pass()
			if f := h.forcedMembers(); !slices.Equal(f, []string{want}) || h.forcedCount(want) != 1 {
				t.Errorf("forced members = %v (%d writes), want [%s] once", f, h.forcedCount(want), want)
			}
		})
	}
}

// TestManualRecoveryFromAMemberBehind: the annotation naming a member
// behind another reachable member is refused with a message naming the one
// ahead; the same member confirmed with the accept-loss annotation is
// forced, and both annotations go once the recovery is done.
func TestManualRecoveryFromAMemberBehind(t *testing.T) {
	apartFromCollector(t)
	h := newHealEnv(t, 5)
	h.formed()
	ms := h.sortedMembers()
	behind, ahead := ms[0].Name, ms[1].Name
	h.setRaftIndex(behind, 100)
	h.setRaftIndex(ahead, 200)
	h.loseQuorum(ms[2].Name, ms[3].Name, ms[4].Name)
	h.pass()
	h.annotate(behind)
	h.pass()
	h.pass()
	if rs := h.cluster().Status.Recovery; rs != nil || len(h.forcedMembers()) != 0 {
		t.Fatalf("recovery %+v, forced %v from a member behind another", rs, h.forcedMembers())
	}
	p := condition(h.cluster().Status.Conditions, etcdv1.ConditionProgressing)
	for _, want := range []string{behind, ahead, etcdv1.RecoverQuorumAcceptLossAnnotation} {
		if p.Reason != etcdv1.ReasonQuorumLost || !strings.Contains(p.Message, want) {
			t.Errorf("Progressing = %+v, want QuorumLost naming %q", p, want)
		}
	}

	c := h.cluster()
	c.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation] = behind
	if err := h.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.pass()
	if rs := h.recovery(); rs.Phase != etcdv1.RecoveryForcing || rs.Member != behind {
		t.Fatalf("status.recovery = %+v, want Forcing from %s once confirmed", rs, behind)
	}
	h.fenceThenForce(behind)
}

// appliedKind is the kind an apply configuration writes.
func appliedKind(obj runtime.ApplyConfiguration) string {
	raw, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return ""
	}
	return tm.Kind
}
