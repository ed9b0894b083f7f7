package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// rollEnv is a formed cluster under a rollout. The test plays the member
// controller (it restarts a member whose spec changed and reports it Ready
// for its generation) and the etcd processes (the restarted member runs its
// spec's version). Each pass records what the cluster showed.
type rollEnv struct {
	*env

	// order is the order in which the members' Pod specs changed.
	order []string
	// progressing is the Progressing condition after each pass.
	progressing []metav1.Condition
	// evs are the events of every pass.
	evs []string
}

// memberGenerations makes the fake API server raise an EtcdMember's
// generation when its spec changes, as a real one does: the rollout reads
// a member's Ready condition only for the member's generation.
func memberGenerations() interceptor.Funcs {
	bump := func(ctx context.Context, c client.Client, obj client.Object) {
		m, ok := obj.(*etcdv1.EtcdMember)
		if !ok {
			return
		}
		cur := &etcdv1.EtcdMember{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
			return
		}
		if !equality.Semantic.DeepEqual(cur.Spec, m.Spec) {
			m.Generation = cur.Generation + 1
		}
	}
	return interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			bump(ctx, c, obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			bump(ctx, c, obj)
			return c.Patch(ctx, obj, p, opts...)
		},
	}
}

// newRollEnv is a formed cluster of replicas members that run version, as
// its spec asks, with the given storage.
func newRollEnv(t *testing.T, replicas int32, version string, storage etcdv1.StorageSpec) *rollEnv {
	t.Helper()
	e := &rollEnv{env: newEnv(t, replicas, memberGenerations())}
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version, s.Storage = version, storage })
	e.mustReconcile()
	var ms [][3]string
	for _, m := range e.members() {
		ms = append(ms, [3]string{m.Name, m.Spec.PeerURL, m.Spec.ClientURL})
	}
	e.fake().Bootstrap(ms...)
	for _, m := range e.members() {
		e.fake().SetVersion(m.Name, version)
		e.setReady(m.Name, true, etcdv1.ReasonPodReady, "")
	}
	e.mustReconcile()
	c := e.cluster()
	if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonConverged || c.Status.Version != version || c.Status.Rollout != nil {
		t.Fatalf("cluster not formed at %s: Progressing %+v, version %q, rollout %+v", version, p, c.Status.Version, c.Status.Rollout)
	}
	e.events()
	return e
}

// setReady plays the member controller's Ready condition for the member's
// current generation.
func (e *rollEnv) setReady(name string, ready bool, reason, msg string) {
	e.t.Helper()
	m := e.member(name)
	st := metav1.ConditionFalse
	if ready {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionReady, Status: st, Reason: reason, Message: msg, ObservedGeneration: m.Generation})
	if err := e.c.Status().Update(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
}

// playMemberController starts each member etcd registered whose etcd has
// not started, and restarts each member that is not Ready for its
// generation: its Pod runs its spec now, its etcd its spec's version.
func (e *rollEnv) playMemberController() (restarted []string) {
	e.t.Helper()
	return e.playMemberControllerBut("")
}

// playMemberControllerBut is playMemberController for every member but
// the one named skip, whose Pod does not run.
func (e *rollEnv) playMemberControllerBut(skip string) (restarted []string) {
	e.t.Helper()
	for _, m := range e.members() {
		if !m.DeletionTimestamp.IsZero() || m.Name == skip {
			continue
		}
		started := false
		for _, em := range e.fake().Members() {
			if slices.Contains(em.PeerURLs, m.Spec.PeerURL) {
				if !em.Started() {
					e.fake().Start(m.Spec.PeerURL, m.Name, m.Spec.ClientURL, true)
				}
				started = true
			}
		}
		if !started || kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			continue
		}
		e.fake().SetVersion(m.Name, m.Spec.Version)
		e.fake().SetHealthy(m.Name, true)
		e.setReady(m.Name, true, etcdv1.ReasonPodReady, "")
		restarted = append(restarted, m.Name)
	}
	return restarted
}

// pass reconciles once and checks what must hold in every pass of a
// rollout: at most one member's Pod spec changes, and only while every
// other member is Ready for its generation; the cluster stays Available.
// It returns the member whose Pod spec changed, if any.
func (e *rollEnv) pass() string {
	e.t.Helper()
	before := map[string]etcdv1.EtcdMember{}
	for _, m := range e.members() {
		before[m.Name] = m
	}
	e.mustReconcile()
	var changed []string
	for _, m := range e.members() {
		b, ok := before[m.Name]
		if ok && resources.PodSpecHash(&b) != resources.PodSpecHash(&m) {
			changed = append(changed, m.Name)
		}
	}
	if len(changed) > 1 {
		e.t.Fatalf("members %v took a new Pod spec in one pass, want one at a time", changed)
	}
	c := e.cluster()
	if a := condition(c.Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionTrue {
		e.t.Errorf("Available = %+v during the rollout, want True", a)
	}
	e.progressing = append(e.progressing, condition(c.Status.Conditions, etcdv1.ConditionProgressing))
	e.evs = append(e.evs, e.events()...)
	if len(changed) == 0 {
		return ""
	}
	for name, b := range before {
		if name != changed[0] && b.DeletionTimestamp.IsZero() && !kube.IsTrue(b.Status.Conditions, etcdv1.ConditionReady, b.Generation) {
			e.t.Errorf("member %s took a new Pod spec while %s was not Ready for its generation", changed[0], name)
		}
	}
	e.order = append(e.order, changed[0])
	return changed[0]
}

// passUntilChange runs up to limit passes until one changes a member's Pod
// spec, and returns that member, or "" when none did.
func (e *rollEnv) passUntilChange(limit int) string {
	e.t.Helper()
	for range limit {
		if m := e.pass(); m != "" {
			return m
		}
	}
	return ""
}

// rollToEnd runs passes, restarting each member the rollout changed, until
// no rollout is left.
func (e *rollEnv) rollToEnd(limit int) {
	e.t.Helper()
	for range limit {
		e.pass()
		c := e.cluster()
		p := condition(c.Status.Conditions, etcdv1.ConditionProgressing)
		if restarted := e.playMemberController(); len(restarted) == 0 && c.Status.Rollout == nil && p.Status == metav1.ConditionFalse {
			return
		}
	}
	e.t.Fatalf("the rollout did not end in %d passes; Progressing %+v", limit, condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing))
}

// hold runs passes and fails the test when one changes a member's Pod spec.
func (e *rollEnv) hold(passes int, why string) {
	e.t.Helper()
	for range passes {
		if m := e.pass(); m != "" {
			e.t.Fatalf("member %s took a new Pod spec while %s", m, why)
		}
	}
}

// leaderName is the member the fake etcd has as leader.
func (e *rollEnv) leaderName() string {
	id := e.fake().Leader()
	for _, em := range e.fake().Members() {
		if em.ID == id {
			return em.Name
		}
	}
	return ""
}

// followers are the members, by name, that do not lead.
func (e *rollEnv) followers() []string {
	var out []string
	for _, m := range e.members() {
		if m.Name != e.leaderName() {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (e *rollEnv) lastProgressing() metav1.Condition {
	return e.progressing[len(e.progressing)-1]
}

// eventsFor are the recorded events of one reason about one member.
func (e *rollEnv) eventsFor(reason, member string) []string {
	var out []string
	for _, ev := range e.evs {
		if strings.Contains(ev, " "+reason+" ") && (member == "" || strings.Contains(ev, member+" ")) {
			out = append(out, ev)
		}
	}
	return out
}

// checkRolledOut checks the end of a rollout: every member has the spec
// version and image, etcd runs that version, each member was updated once
// (with one MemberUpdated event), and status.rollout is gone.
func (e *rollEnv) checkRolledOut(version, image string, updated []string) {
	e.t.Helper()
	c := e.cluster()
	if c.Status.Rollout != nil {
		e.t.Errorf("status.rollout = %+v after the rollout, want none", c.Status.Rollout)
	}
	if c.Status.Version != version {
		e.t.Errorf("status.version = %q, want %q", c.Status.Version, version)
	}
	if p := condition(c.Status.Conditions, etcdv1.ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != etcdv1.ReasonConverged {
		e.t.Errorf("Progressing = %+v after the rollout, want False Converged", p)
	}
	// A client that waits for Progressing False of the spec's generation
	// (kubectl wait) must not find the change done before it is.
	for i, p := range e.progressing[:max(len(e.progressing)-1, 0)] {
		if p.Status != metav1.ConditionTrue {
			e.t.Errorf("pass %d of %d: Progressing = %s %s %q before the rollout ended, want True", i+1, len(e.progressing), p.Status, p.Reason, p.Message)
		}
	}
	if d := condition(c.Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		e.t.Errorf("Degraded = %+v after the rollout", d)
	}
	for _, m := range e.members() {
		if m.Spec.Version != version || m.Spec.Image != image {
			e.t.Errorf("%s runs %s %s, want %s %s", m.Name, m.Spec.Version, m.Spec.Image, version, image)
		}
	}
	for _, ms := range c.Status.Members {
		if ms.Version != version {
			e.t.Errorf("etcd member %s reports %s, want %s", ms.Name, ms.Version, version)
		}
	}
	for _, name := range updated {
		if n := len(e.eventsFor("MemberUpdated", name)); n != 1 {
			e.t.Errorf("%d MemberUpdated events for %s, want 1; events %q", n, name, e.evs)
		}
	}
	if n := len(e.eventsFor("MemberUpdated", "")); n != len(updated) {
		e.t.Errorf("%d MemberUpdated events, want %d", n, len(updated))
	}
}

func etcdImage(version string) string { return "quay.io/coreos/etcd:v" + version }

func TestVersionUpgradeRollsOneMemberAtATime(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.5.35", etcdv1.StorageSpec{})
	leader := e.leaderName()
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.6.16" })

	for turn := range 3 {
		// The leader's turn takes one pass more: leadership moves first.
		m := e.passUntilChange(3)
		if m == "" {
			t.Fatalf("turn %d: no member updated; Progressing %+v", turn+1, e.lastProgressing())
		}
		got := e.member(m)
		if got.Spec.Version != "3.6.16" || got.Spec.Image != etcdImage("3.6.16") {
			t.Errorf("%s: version %s image %s, want 3.6.16", m, got.Spec.Version, got.Spec.Image)
		}
		if ro := e.cluster().Status.Rollout; ro == nil || ro.Member != m || ro.Total != 3 || ro.Updated != int32(turn) || ro.Since == nil {
			t.Errorf("turn %d: status.rollout = %+v, want member %s, %d of 3 updated", turn+1, ro, m, turn)
		}
		moves := e.fake().Calls("MoveLeader")
		switch {
		case m == leader && turn != 2:
			t.Errorf("the leader %s was updated at turn %d, want last", m, turn+1)
		case m == leader:
			now := e.leaderName()
			if moves != 1 || now == leader || e.member(now).Spec.Version != "3.6.16" {
				t.Errorf("leader %s updated after %d MoveLeader calls, with %s leading; want one call and an updated member leading", m, moves, now)
			}
			if len(e.eventsFor("LeaderMoved", leader)) != 1 {
				t.Errorf("no LeaderMoved event for %s in %q", leader, e.evs)
			}
		case moves != 0:
			t.Errorf("MoveLeader called %d times before the leader's turn", moves)
		}

		// The member controller restarts the Pod: not Ready for the new
		// generation, and etcd does not answer meanwhile.
		e.fake().SetHealthy(m, false)
		e.hold(2, m+" restarts")
		if p := e.lastProgressing(); p.Status != metav1.ConditionTrue || p.Reason != etcdv1.ReasonRollingUpdate || !strings.Contains(p.Message, m) {
			t.Errorf("Progressing while %s restarts = %+v, want RollingUpdate naming it", m, p)
		}
		if restarted := e.playMemberController(); !slices.Equal(restarted, []string{m}) {
			t.Fatalf("restarted %v, want [%s]", restarted, m)
		}
	}
	if e.pass() != "" {
		t.Fatal("a member changed after every member was updated")
	}
	if e.order[2] != leader {
		t.Errorf("update order %v, want the leader %s last", e.order, leader)
	}
	if !slices.ContainsFunc(e.progressing, func(c metav1.Condition) bool {
		return c.Reason == etcdv1.ReasonRollingUpdate && strings.Contains(c.Message, "(2 of 3)")
	}) {
		t.Errorf("no RollingUpdate message with (2 of 3) in %+v", e.progressing)
	}
	e.checkRolledOut("3.6.16", etcdImage("3.6.16"), e.order)
	if n := e.fake().Calls("Downgrade"); n != 0 {
		t.Errorf("an upgrade called Downgrade %d times", n)
	}
}

// TestRolloutWaitsForSettledMembers: a member that is not healthy or not
// caught up holds every other member back, and the message names it.
func TestRolloutWaitsForSettledMembers(t *testing.T) {
	t.Parallel()
	unhealthy := func(e *rollEnv, name string) { e.fake().SetHealthy(name, false) }
	lagging := func(e *rollEnv, name string) { e.fake().SetLag(name, 5000) }
	const noAnswer, behind = "etcd does not answer its status request", "it has applied index"
	tests := []struct {
		name string
		// updatedFirst: the rollout updates one member before the test
		// makes members sick.
		updatedFirst bool
		// sick makes members sick and returns, in stages, what the message
		// says of each: while the members of a stage are sick, nothing
		// changes and the message names them; then they heal.
		sick func(e *rollEnv, updated string) []map[string]string
	}{
		{
			name:         "an updated member does not answer",
			updatedFirst: true,
			sick: func(e *rollEnv, updated string) []map[string]string {
				unhealthy(e, updated)
				return []map[string]string{{updated: noAnswer}}
			},
		},
		{
			name:         "an updated member lags",
			updatedFirst: true,
			sick: func(e *rollEnv, updated string) []map[string]string {
				lagging(e, updated)
				return []map[string]string{{updated: behind}}
			},
		},
		{
			name: "two followers lag before the rollout starts",
			sick: func(e *rollEnv, _ string) []map[string]string {
				stage := map[string]string{}
				for _, f := range e.followers() {
					lagging(e, f)
					stage[f] = behind
				}
				return []map[string]string{stage}
			},
		},
		{
			// The member the rollout restarted is waited for; once it is
			// settled, the one that does not answer is the only one left
			// unsettled and goes next (TestRolloutRestartsALoneUnsettledMemberFirst).
			name:         "an updated member lags and one still to update does not answer",
			updatedFirst: true,
			sick: func(e *rollEnv, updated string) []map[string]string {
				other := e.followers()[slices.IndexFunc(e.followers(), func(n string) bool { return n != updated })]
				lagging(e, updated)
				unhealthy(e, other)
				return []map[string]string{{updated: behind}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.5.35", etcdv1.StorageSpec{})
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.6.16" })
			updated := ""
			if tt.updatedFirst {
				if updated = e.passUntilChange(2); updated == "" {
					t.Fatal("no first member updated")
				}
				e.playMemberController()
			}
			for _, stage := range tt.sick(e, updated) {
				e.hold(3, fmt.Sprintf("%v are not settled", stage))
				p := e.lastProgressing()
				if p.Status != metav1.ConditionTrue || p.Reason != etcdv1.ReasonRollingUpdate {
					t.Errorf("Progressing = %+v, want True RollingUpdate", p)
				}
				for name, why := range stage {
					if !strings.Contains(p.Message, name) || !strings.Contains(p.Message, why) {
						t.Errorf("Progressing message %q does not name %s saying %q", p.Message, name, why)
					}
					e.fake().SetHealthy(name, true)
					e.fake().SetLag(name, 0)
				}
			}
			e.rollToEnd(12)
			e.checkRolledOut("3.6.16", etcdImage("3.6.16"), e.order)
			if len(e.order) != 3 {
				t.Errorf("update order %v, want each member once", e.order)
			}
		})
	}
}

// TestRolloutRestartsALoneUnsettledMemberFirst: when the only member that
// is not settled still runs the old spec, it goes first, as the one stuck
// member whose spec changed again does: every other member is settled, and
// the new spec may be what it needs (more memory for one that runs out).
// No other member changes until it is settled.
func TestRolloutRestartsALoneUnsettledMemberFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		sick, heal func(e *rollEnv, name string)
	}{
		{
			name: "its Pod fails",
			sick: func(e *rollEnv, name string) {
				e.fake().SetHealthy(name, false)
				e.setReady(name, false, etcdv1.ReasonPodFailing, "CrashLoopBackOff: etcd exited with code 2")
			},
		},
		{
			name: "it does not answer",
			sick: func(e *rollEnv, name string) { e.fake().SetHealthy(name, false) },
		},
		{
			name: "it lags",
			sick: func(e *rollEnv, name string) { e.fake().SetLag(name, 5000) },
			heal: func(e *rollEnv, name string) { e.fake().SetLag(name, 0) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.5.35", etcdv1.StorageSpec{})
			sick := e.followers()[1]
			tt.sick(e, sick)
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.6.16" })
			if m := e.passUntilChange(2); m != sick {
				t.Fatalf("first member updated = %q, want the unsettled %s", m, sick)
			}
			e.hold(2, sick+" is not settled on its new spec")
			if tt.heal != nil {
				tt.heal(e, sick)
			}
			e.playMemberController()
			e.rollToEnd(12)
			e.checkRolledOut("3.6.16", etcdImage("3.6.16"), e.order)
		})
	}
}

// TestRolloutWaitsForScaling: while spec.replicas differs from the number
// of members, no member takes the new spec; members added meanwhile get it
// at once, and the rollout then updates the others.
func TestRolloutWaitsForScaling(t *testing.T) {
	t.Parallel()
	// hold is a finalizer of someone else's that keeps a removed member's
	// EtcdMember after it left etcd.
	const hold = "example.com/hold"
	tests := []struct {
		name     string
		from, to int32
		// held: every member carries hold, and a removed one is released
		// only after a few passes.
		held bool
	}{
		{name: "scale up", from: 3, to: 5},
		{name: "scale down", from: 5, to: 3},
		{name: "scale down, a removed member held by another finalizer", from: 4, to: 3, held: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, tt.from, "3.5.35", etcdv1.StorageSpec{})
			var old []string
			for _, m := range e.members() {
				old = append(old, m.Name)
				if tt.held {
					m.Finalizers = append(m.Finalizers, hold)
					if err := e.c.Update(context.Background(), &m); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version, s.Replicas = "3.6.16", ptr.To(tt.to) })
			heldPasses := 0
			for pass := 0; ; pass++ {
				if pass == 40 {
					t.Fatalf("scaling did not end; Progressing %+v", e.lastProgressing())
				}
				if !e.scaling(tt.to) {
					break
				}
				if m := e.pass(); m != "" {
					t.Fatalf("member %s took a new Pod spec while the cluster scales from %d to %d", m, tt.from, tt.to)
				}
				e.playMemberController()
				for _, m := range e.members() {
					if m.DeletionTimestamp.IsZero() || slices.Contains(m.Finalizers, etcdv1.MemberFinalizer) {
						continue
					}
					// Out of etcd and released by the operator, but
					// still there.
					if heldPasses++; heldPasses < 3 {
						continue
					}
					m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == hold })
					if err := e.c.Update(context.Background(), &m); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.held && heldPasses < 3 {
				t.Errorf("the removed member was held for %d passes, want 3", heldPasses)
			}
			for _, m := range e.members() {
				if !slices.Contains(old, m.Name) && m.Spec.Version != "3.6.16" {
					t.Errorf("member %s added during the rollout runs %s, want 3.6.16", m.Name, m.Spec.Version)
				}
			}
			e.rollToEnd(20)
			var updated []string
			for _, m := range e.members() {
				if slices.Contains(old, m.Name) {
					updated = append(updated, m.Name)
				}
			}
			if len(updated) != 3 {
				t.Fatalf("%d of the first members left, want 3", len(updated))
			}
			e.checkRolledOut("3.6.16", etcdImage("3.6.16"), updated)
			if n := len(e.fake().Members()); n != int(tt.to) {
				t.Errorf("etcd has %d members, want %d", n, tt.to)
			}
		})
	}
}

// scaling says whether the members differ from the spec: another count,
// one being removed, or a learner.
func (e *rollEnv) scaling(want int32) bool {
	ms := e.members()
	if len(ms) != int(want) || slices.ContainsFunc(ms, func(m etcdv1.EtcdMember) bool { return !m.DeletionTimestamp.IsZero() }) {
		return true
	}
	return len(e.fake().Members()) != int(want) || slices.ContainsFunc(e.fake().Members(), func(m etcd.Member) bool { return m.IsLearner || !m.Started() })
}

// TestStuckRolloutStopsAndResumes: a member whose new Pod cannot run stops
// the rollout (Degraded RolloutStuck, one Warning event, no other member
// touched); a new spec resumes it with the stuck member first.
func TestStuckRolloutStopsAndResumes(t *testing.T) {
	t.Parallel()
	const pullErr = `ErrImagePull: failed to pull image "quay.io/coreos/etcd:v3.6.16": not found`
	tests := []struct {
		name string
		// timeout replaces the operator's rollout timeout.
		timeout time.Duration
		// stick makes the updated member fail to come back.
		stick func(e *rollEnv, name string)
		want  string
		// fix is what the user does; nil when the member recovers alone.
		fix                  func(s *etcdv1.EtcdClusterSpec)
		recover              func(e *rollEnv, name string)
		wantVersion, wantImg string
	}{
		{
			name: "image cannot be pulled, version set back",
			stick: func(e *rollEnv, name string) {
				e.setReady(name, false, etcdv1.ReasonPodFailing, pullErr)
			},
			want:        pullErr,
			fix:         func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.5.35" },
			wantVersion: "3.5.35", wantImg: etcdImage("3.5.35"),
		},
		{
			name: "image cannot be pulled, another image set",
			stick: func(e *rollEnv, name string) {
				e.setReady(name, false, etcdv1.ReasonPodFailing, pullErr)
			},
			want:        pullErr,
			fix:         func(s *etcdv1.EtcdClusterSpec) { s.Image = "mirror.example/etcd:v3.6.16" },
			wantVersion: "3.6.16", wantImg: "mirror.example/etcd:v3.6.16",
		},
		{
			name:    "not Ready within the rollout timeout, then recovers",
			timeout: time.Nanosecond,
			stick: func(e *rollEnv, name string) {
				e.setReady(name, false, etcdv1.ReasonPodNotReady, "etcd is not ready")
			},
			want: "not healthy and caught up 1ns after its restart: etcd is not ready",
			recover: func(e *rollEnv, name string) {
				e.fake().SetVersion(name, "3.6.16")
				e.fake().SetHealthy(name, true)
				e.setReady(name, true, etcdv1.ReasonPodReady, "")
			},
			wantVersion: "3.6.16", wantImg: etcdImage("3.6.16"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.5.35", etcdv1.StorageSpec{})
			if tt.timeout != 0 {
				e.r.Options.RolloutTimeout = tt.timeout
			}
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.6.16" })
			stuck := e.passUntilChange(2)
			if stuck == "" {
				t.Fatal("no first member updated")
			}
			e.fake().SetHealthy(stuck, false)
			tt.stick(e, stuck)
			e.hold(2, stuck+" is stuck")

			c := e.cluster()
			d := condition(c.Status.Conditions, etcdv1.ConditionDegraded)
			if d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonRolloutStuck || !strings.Contains(d.Message, stuck) || !strings.Contains(d.Message, tt.want) {
				t.Errorf("Degraded = %+v, want RolloutStuck naming %s and saying %q", d, stuck, tt.want)
			}
			if evs := e.eventsFor("RolloutStuck", ""); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ") || !strings.Contains(evs[0], stuck) {
				t.Errorf("RolloutStuck events = %q, want one Warning naming %s", evs, stuck)
			}
			if ro := c.Status.Rollout; ro == nil || ro.Member != stuck {
				t.Errorf("status.rollout = %+v, want the stuck member %s", ro, stuck)
			}

			if tt.fix != nil {
				e.setSpec(tt.fix)
				// It is down already: it goes first, the others wait.
				if m := e.pass(); m != stuck {
					t.Fatalf("first member changed after the fix = %q, want the stuck %s", m, stuck)
				}
				if m := e.member(stuck); m.Spec.Version != tt.wantVersion || m.Spec.Image != tt.wantImg {
					t.Errorf("%s: %s %s after the fix, want %s %s", stuck, m.Spec.Version, m.Spec.Image, tt.wantVersion, tt.wantImg)
				}
			} else {
				tt.recover(e, stuck)
			}
			e.playMemberController()
			e.rollToEnd(12)
			var all []string
			for _, m := range e.members() {
				all = append(all, m.Name)
			}
			want := all
			if tt.wantVersion == "3.5.35" {
				want = []string{stuck} // the others never left 3.5.35
			}
			e.checkRolledOut(tt.wantVersion, tt.wantImg, want)
			if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Reason == etcdv1.ReasonRolloutStuck {
				t.Errorf("Degraded = %+v after the rollout ended", d)
			}
		})
	}
}

// TestBlockedVersionChangeRestartsNothing: a version the running members
// cannot go to restarts no member, and Progressing names the way there.
func TestBlockedVersionChangeRestartsNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, from, to string
		msgHas         []string
		// then is the version the message names, which rolls out.
		then string
	}{
		{name: "3.5 below the upgrade minimum", from: "3.5.20", to: "3.6.16", msgHas: []string{"3.5.32", "3.5.20"}, then: "3.5.32"},
		{name: "two minors up", from: "3.5.35", to: "3.7.3", msgHas: []string{"3.6.x", "3.7.3"}, then: "3.6.16"},
		{name: "3.6 below the 3.7 minimum", from: "3.6.10", to: "3.7.3", msgHas: []string{"3.6.11"}, then: "3.6.11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, tt.from, etcdv1.StorageSpec{})
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = tt.to })
			e.hold(3, "the version change is blocked")
			p := e.lastProgressing()
			if p.Status != metav1.ConditionTrue || p.Reason != etcdv1.ReasonUpgradeBlocked {
				t.Errorf("Progressing = %+v, want True UpgradeBlocked", p)
			}
			for _, s := range tt.msgHas {
				if !strings.Contains(p.Message, s) {
					t.Errorf("Progressing message %q does not name %s", p.Message, s)
				}
			}
			if n := e.fake().Calls("Downgrade") + e.fake().Calls("MoveLeader"); n != 0 {
				t.Errorf("%d Downgrade or MoveLeader calls for a blocked change", n)
			}
			if v := e.cluster().Status.Version; v != tt.from {
				t.Errorf("status.version = %s, want %s", v, tt.from)
			}

			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = tt.then })
			e.rollToEnd(12)
			e.checkRolledOut(tt.then, etcdImage(tt.then), e.order)
		})
	}
}

// TestMinorDowngradeGoesThroughEtcd: a minor downgrade enables etcd's
// downgrade first, restarts no member until etcd moved every member's data
// format to the older minor, then rolls like an upgrade.
func TestMinorDowngradeGoesThroughEtcd(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{})
	leader := e.leaderName()
	for _, m := range e.members() {
		e.fake().SetStorageVersion(m.Name, "3.6.0")
	}
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.5.35" })

	e.hold(1, "etcd's downgrade is being enabled")
	if got := e.fake().DowngradeTarget(); got != "3.5" {
		t.Fatalf("etcd's downgrade target = %q, want 3.5", got)
	}
	if n := e.fake().Calls("Downgrade"); n != 2 {
		t.Errorf("Downgrade calls = %d, want validate and enable", n)
	}
	if len(e.eventsFor("DowngradeEnabled", "")) != 1 {
		t.Errorf("no DowngradeEnabled event in %q", e.evs)
	}

	// etcd has not moved the data format yet.
	e.hold(3, "the data format is still 3.6")
	p := e.lastProgressing()
	if p.Reason != etcdv1.ReasonRollingUpdate || !strings.Contains(p.Message, "data format") {
		t.Errorf("Progressing = %+v, want RollingUpdate waiting for the data format", p)
	}
	for _, m := range e.members() {
		if !strings.Contains(p.Message, m.Name) {
			t.Errorf("Progressing message %q does not name %s", p.Message, m.Name)
		}
	}
	if ro := e.cluster().Status.Rollout; ro == nil || ro.DowngradeTarget != "3.5" {
		t.Errorf("status.rollout = %+v, want downgrade target 3.5", ro)
	}

	for _, m := range e.members() {
		e.fake().SetStorageVersion(m.Name, "3.5.0")
	}
	e.rollToEnd(12)
	e.checkRolledOut("3.5.35", etcdImage("3.5.35"), e.order)
	if len(e.order) != 3 || e.order[2] != leader {
		t.Errorf("update order %v, want each member once and the leader %s last", e.order, leader)
	}
	if n := e.fake().Calls("MoveLeader"); n != 1 {
		t.Errorf("MoveLeader calls = %d, want 1", n)
	}
	if n := e.fake().Calls("Downgrade"); n != 2 {
		t.Errorf("Downgrade calls = %d, want the first 2 only", n)
	}
	if got := e.fake().DowngradeTarget(); got != "" {
		t.Errorf("etcd's downgrade still enabled to %q after every member runs 3.5", got)
	}
}

// TestDowngradeCancelledWhenSpecGoesBack: spec.version back to the higher
// minor while etcd's downgrade is enabled cancels it, and members that
// went down already come back.
func TestDowngradeCancelledWhenSpecGoesBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// downgraded members before spec.version goes back.
		downgraded int
	}{
		{name: "before any member restarted", downgraded: 0},
		{name: "after one member restarted", downgraded: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{})
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.5.35" })
			// The first pass enables the downgrade and restarts nothing;
			// the fake reports no storage version, so the next may.
			if m := e.pass(); m != "" {
				t.Fatalf("member %s changed in the pass that enables the downgrade", m)
			}
			if got := e.fake().DowngradeTarget(); got != "3.5" {
				t.Fatalf("etcd's downgrade target = %q, want 3.5", got)
			}
			for range tt.downgraded {
				if m := e.pass(); m == "" {
					t.Fatalf("no member restarted on 3.5.35; Progressing %+v", e.lastProgressing())
				}
				e.playMemberController()
			}
			calls := e.fake().Calls("Downgrade")

			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.6.16" })
			e.hold(1, "etcd's downgrade is being cancelled")
			if got := e.fake().DowngradeTarget(); got != "" {
				t.Errorf("etcd's downgrade target = %q after spec.version went back, want none", got)
			}
			if n := e.fake().Calls("Downgrade"); n != calls+1 {
				t.Errorf("Downgrade calls = %d, want one cancel after %d", n, calls)
			}
			if len(e.eventsFor("DowngradeCancelled", "")) != 1 {
				t.Errorf("no DowngradeCancelled event in %q", e.evs)
			}
			e.rollToEnd(12)
			if len(e.order) != 2*tt.downgraded {
				t.Errorf("update order %v, want the %d downgraded members down and back", e.order, tt.downgraded)
			}
			// A member that went down and back is announced once, on the
			// spec it ends with.
			var back []string
			for _, m := range e.order {
				if !slices.Contains(back, m) {
					back = append(back, m)
				}
			}
			e.checkRolledOut("3.6.16", etcdImage("3.6.16"), back)
			if ro := e.cluster().Status.Rollout; ro != nil {
				t.Errorf("status.rollout = %+v after the cancel", ro)
			}
		})
	}
}

// TestStorageSizeChange: a Memory member's tmpfs size is part of its Pod
// and rolls like the rest; a PVC member's volume grows in place, with no
// new Pod spec, unless the quota is the default, which grows with the
// volume and rolls out.
func TestStorageSizeChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		medium  etcdv1.StorageMedium
		quota   *int64
		rolling bool
	}{
		{name: "memory", medium: etcdv1.StorageMediumMemory, rolling: true},
		{name: "volume, default quota", medium: etcdv1.StorageMediumDefault, rolling: true},
		{name: "volume, quota set", medium: etcdv1.StorageMediumDefault, quota: ptr.To(int64(100 << 20)), rolling: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{Medium: tt.medium, Size: ptr.To(resource.MustParse("1Gi"))})
			if tt.quota != nil {
				e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Options.QuotaBackendBytes = tt.quota })
				e.rollToEnd(12)
				e.order, e.progressing = nil, nil
			}
			updated := len(e.eventsFor("MemberUpdated", ""))
			hashes := map[string]string{}
			for _, m := range e.members() {
				hashes[m.Name] = resources.PodSpecHash(&m)
			}
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Storage.Size = ptr.To(resource.MustParse("2Gi")) })
			e.rollToEnd(12)
			for _, m := range e.members() {
				if m.Spec.Storage.Size == nil || m.Spec.Storage.Size.Cmp(resource.MustParse("2Gi")) != 0 {
					t.Errorf("%s: size %v, want 2Gi", m.Name, m.Spec.Storage.Size)
				}
				if changed := resources.PodSpecHash(&m) != hashes[m.Name]; changed != tt.rolling {
					t.Errorf("%s: Pod spec changed %t, want %t", m.Name, changed, tt.rolling)
				}
			}
			if tt.rolling {
				if len(e.order) != 3 {
					t.Errorf("update order %v, want each member once", e.order)
				}
				e.checkRolledOut("3.6.16", etcdImage("3.6.16"), e.order)
				if tt.quota == nil {
					for _, m := range e.members() {
						if q := m.Spec.Options.QuotaBackendBytes; q == nil || *q != resources.DefaultQuota(2<<30) {
							t.Errorf("%s: quota %v, want the default for 2Gi, %d", m.Name, q, resources.DefaultQuota(2<<30))
						}
					}
				}
				return
			}
			if len(e.order) != 0 || len(e.eventsFor("MemberUpdated", "")) != updated {
				t.Errorf("a volume size change restarted %v", e.order)
			}
			if slices.ContainsFunc(e.progressing, func(c metav1.Condition) bool { return c.Reason == etcdv1.ReasonRollingUpdate }) {
				t.Errorf("Progressing said RollingUpdate for a volume size change: %+v", e.progressing)
			}
			if ro := e.cluster().Status.Rollout; ro != nil {
				t.Errorf("status.rollout = %+v for a volume size change", ro)
			}
		})
	}
}

// TestUpgradeTo37SnapshotsFirst: before any member starts 3.7, every member
// snapshots (a downgrade to 3.5 enabled, then cancelled once every data
// format is 3.5), and the upgrade waits for the data formats to be 3.6
// again; then it rolls like any other.
func TestUpgradeTo37SnapshotsFirst(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{})
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Version = "3.7.3" })

	e.hold(1, "the downgrade that makes the members snapshot is enabled")
	if got := e.fake().DowngradeTarget(); got != "3.5" {
		t.Fatalf("etcd's downgrade target = %q, want 3.5", got)
	}
	if len(e.eventsFor("SnapshottingForUpgrade", "")) != 1 {
		t.Errorf("no SnapshottingForUpgrade event in %q", e.evs)
	}
	e.hold(1, "the downgrade is cancelled")
	if got := e.fake().DowngradeTarget(); got != "" {
		t.Fatalf("etcd's downgrade target = %q once every member snapshotted, want none", got)
	}
	if n := e.fake().Calls("Downgrade"); n != 3 {
		t.Errorf("Downgrade calls = %d, want validate, enable and cancel", n)
	}
	if ro := e.cluster().Status.Rollout; ro == nil || ro.SnapshottedFor != "3.7" {
		t.Errorf("status.rollout = %+v, want snapshottedFor 3.7", ro)
	}
	if len(e.eventsFor("SnapshottedForUpgrade", "")) != 1 {
		t.Errorf("no SnapshottedForUpgrade event in %q", e.evs)
	}

	// etcd takes a few seconds to bring the data formats back to 3.6.
	for _, m := range e.members() {
		e.fake().SetStorageVersion(m.Name, "3.5.0")
	}
	e.hold(2, "the data formats are 3.5")
	if p := e.lastProgressing(); p.Reason != etcdv1.ReasonRollingUpdate || !strings.Contains(p.Message, "data format") {
		t.Errorf("Progressing = %+v, want RollingUpdate waiting for the data formats", p)
	}
	for _, m := range e.members() {
		e.fake().SetStorageVersion(m.Name, "3.6.0")
	}
	e.rollToEnd(12)
	e.checkRolledOut("3.7.3", etcdImage("3.7.3"), e.order)
	if len(e.order) != 3 {
		t.Errorf("update order %v, want each member once", e.order)
	}
	if n := e.fake().Calls("Downgrade"); n != 3 {
		t.Errorf("Downgrade calls = %d after the upgrade, want the 3 of the snapshots only", n)
	}
}

// TestLegacyMembersKeepEtcdDefaults: members made before the operator
// filled in default options (no quota in their spec) are not rolled to the
// defaults: a smaller quota could put a running database over it.
func TestLegacyMembersKeepEtcdDefaults(t *testing.T) {
	t.Parallel()
	e := newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))})
	for _, m := range e.members() {
		m.Spec.Options = etcdv1.EtcdOptions{}
		if err := e.c.Update(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
		e.setReady(m.Name, true, etcdv1.ReasonPodReady, "")
	}
	e.order = nil
	e.rollToEnd(12)
	if len(e.order) != 0 {
		t.Errorf("members %v rolled to the default options", e.order)
	}
	for _, m := range e.members() {
		if m.Spec.Options.QuotaBackendBytes != nil || m.Spec.Options.AutoCompactionMode != "" {
			t.Errorf("%s options %+v, want none filled in", m.Name, m.Spec.Options)
		}
	}
}

// TestMaxLearnersRollsOut: a member made before --max-learners is not
// rolled out to a spec that has it, and applyRolling gives it the value;
// the value follows the version (none on 3.5).
func TestMaxLearnersRollsOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		have int32
		want int32
		same bool
	}{
		{"made before the flag", 0, 4, false},
		{"has it", 4, 4, true},
		{"a downgrade to 3.5 drops it", 4, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &etcdv1.EtcdMember{Spec: etcdv1.EtcdMemberSpec{Version: "3.6.16", MaxLearners: tt.have}}
			want := etcdv1.EtcdMemberSpec{Version: "3.6.16", MaxLearners: tt.want}
			if got := rolledOut(m, want); got != tt.same {
				t.Errorf("rolledOut = %v, want %v", got, tt.same)
			}
			applyRolling(&m.Spec, want)
			if m.Spec.MaxLearners != tt.want {
				t.Errorf("after applyRolling MaxLearners = %d, want %d", m.Spec.MaxLearners, tt.want)
			}
		})
	}
}
