package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/resources"
)

// env is one cluster under test: a fake API server, a fake etcd, and the
// reconciler. The test plays the member controller and the etcd processes.
type env struct {
	t    *testing.T
	c    client.Client
	r    *Reconciler
	etcd *etcd.FakeFactory
	rec  *events.FakeRecorder
	key  types.NamespacedName
}

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newEnv(t *testing.T, replicas int32, funcs interceptor.Funcs) *env {
	t.Helper()
	// The finalizer is there from the start: the fake client's apply of
	// it conflicts with its own typed defaults (the API server's does not;
	// envtest adds it for real).
	c := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1", Generation: 1, Finalizers: []string{etcdv1.ClusterFinalizer}},
		Spec:       etcdv1.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.16", TLS: etcdv1.TLSSpec{Disabled: true}},
		// The tls controller's part of the contract.
		Status: etcdv1.EtcdClusterStatus{Conditions: []metav1.Condition{{
			Type: etcdv1.ConditionTLSReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonTLSDisabled, ObservedGeneration: 1,
		}}},
	}
	cl := fake.NewClientBuilder().WithTypeConverters(testenv.TypeConverters(t)...).WithScheme(testScheme(t)).
		WithObjects(c).
		WithStatusSubresource(&etcdv1.EtcdCluster{}, &etcdv1.EtcdMember{}).
		WithInterceptorFuncs(funcs).
		Build()
	ef := etcd.NewFakeFactory()
	rec := events.NewFakeRecorder(100)
	opts := DefaultOptions()
	opts.RetryInterval = 100 * time.Millisecond
	opts.WaitInterval, opts.UnhealthyInterval, opts.StuckInterval = 500*time.Millisecond, time.Second, 2500*time.Millisecond
	// The members the operator makes run with its --max-learners.
	ef.MaxLearners = int(opts.MaxLearners)
	return &env{t: t, c: cl, etcd: ef, rec: rec, key: client.ObjectKeyFromObject(c),
		r: &Reconciler{Client: cl, APIReader: cl, Recorder: rec, Etcd: ef, Options: opts}}
}

func (e *env) reconcile() (ctrl.Result, error) {
	e.t.Helper()
	return e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: e.key})
}

func (e *env) mustReconcile() ctrl.Result {
	e.t.Helper()
	res, err := e.reconcile()
	if err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (e *env) fake() *etcd.Fake { return e.etcd.Cluster(e.key.String()) }

func (e *env) cluster() *etcdv1.EtcdCluster {
	e.t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := e.c.Get(context.Background(), e.key, c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) members() []etcdv1.EtcdMember {
	e.t.Helper()
	l := &etcdv1.EtcdMemberList{}
	if err := e.c.List(context.Background(), l, client.InNamespace("ns")); err != nil {
		e.t.Fatal(err)
	}
	return l.Items
}

func (e *env) member(name string) *etcdv1.EtcdMember {
	e.t.Helper()
	m := &etcdv1.EtcdMember{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) setReplicas(n int32) {
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Replicas = ptr.To(n) })
}

// setSpec changes the cluster's spec as a user does, and plays the tls
// controller, which confirms TLSReady for each generation.
func (e *env) setSpec(change func(*etcdv1.EtcdClusterSpec)) {
	e.t.Helper()
	c := e.cluster()
	change(&c.Spec)
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		e.t.Fatal(err)
	}
	c = e.cluster()
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionTLSReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonTLSDisabled, ObservedGeneration: c.Generation})
	if err := e.c.Status().Update(context.Background(), c); err != nil {
		e.t.Fatal(err)
	}
}

// formed bootstraps the fake etcd from the initial members and reconciles.
func (e *env) formed() {
	e.t.Helper()
	e.mustReconcile()
	var ms [][3]string
	for _, m := range e.members() {
		ms = append(ms, [3]string{m.Name, m.Spec.PeerURL, m.Spec.ClientURL})
	}
	e.fake().Bootstrap(ms...)
	// The member controller reports the Pods Ready once etcd has a quorum.
	for _, m := range e.members() {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{
			Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonPodReady,
			ObservedGeneration: m.Generation, LastTransitionTime: metav1.Now(),
		})
		if err := e.c.Status().Update(context.Background(), &m); err != nil {
			e.t.Fatal(err)
		}
	}
	e.mustReconcile()
}

// converge reconciles, starting each added learner like its Pod would, until
// nothing is left to do or the pass limit is hit.
func (e *env) converge(passes int) {
	e.t.Helper()
	for range passes {
		res := e.mustReconcile()
		for _, m := range e.members() {
			for _, em := range e.fake().Members() {
				if slices.Contains(em.PeerURLs, m.Spec.PeerURL) && !em.Started() {
					e.fake().Start(m.Spec.PeerURL, m.Name, m.Spec.ClientURL, true)
				}
			}
		}
		if res.RequeueAfter == e.r.Options.HealthInterval {
			return
		}
	}
	e.t.Fatalf("no convergence after %d passes; progressing: %+v", passes, meta.FindStatusCondition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing))
}

func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestBootstrapCreatesInitialMembersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.mustReconcile()

	ms := e.members()
	if len(ms) != 3 {
		t.Fatalf("members = %d, want 3", len(ms))
	}
	for _, m := range ms {
		if m.Spec.InitialClusterState != etcdv1.InitialClusterStateNew {
			t.Errorf("%s: state %s, want New", m.Name, m.Spec.InitialClusterState)
		}
		if m.Spec.InitialCluster != ms[0].Spec.InitialCluster || strings.Count(m.Spec.InitialCluster, "=") != 3 {
			t.Errorf("%s: initial cluster %q differs or is incomplete", m.Name, m.Spec.InitialCluster)
		}
		if m.Spec.ClusterToken != "uid-1" {
			t.Errorf("%s: token %q, want the cluster UID", m.Name, m.Spec.ClusterToken)
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered); c != nil {
			t.Errorf("%s: Registered = %+v before etcd answers; an initial member starts without it", m.Name, c)
		}
		if !slices.Contains(m.Finalizers, etcdv1.MemberFinalizer) {
			t.Errorf("%s: no membership finalizer", m.Name)
		}
	}
	for _, name := range []string{"demo", "demo-peer"} {
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.Service{}); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "demo"}, pdb); err != nil || pdb.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("pdb: %v %+v", err, pdb.Spec.MinAvailable)
	}
	c := e.cluster()
	if a := condition(c.Status.Conditions, etcdv1.ConditionAvailable); a.Status != metav1.ConditionFalse || a.Reason != etcdv1.ReasonBootstrapping {
		t.Errorf("Available = %+v, want False Bootstrapping", a)
	}

	// The Pods start: etcd forms, and the operator records the IDs.
	e.formed()
	c = e.cluster()
	if c.Status.ClusterID == "" || c.Status.ReadyReplicas != 3 || len(c.Status.Members) != 3 {
		t.Fatalf("status after formation: %+v", c.Status)
	}
	for _, cond := range []struct{ t, status, reason string }{
		{etcdv1.ConditionAvailable, "True", etcdv1.ReasonQuorumHealthy},
		{etcdv1.ConditionProgressing, "False", etcdv1.ReasonConverged},
		{etcdv1.ConditionDegraded, "False", etcdv1.ReasonMembersHealthy},
	} {
		if got := condition(c.Status.Conditions, cond.t); string(got.Status) != cond.status || got.Reason != cond.reason || got.ObservedGeneration != c.Generation {
			t.Errorf("%s = %+v, want %s %s", cond.t, got, cond.status, cond.reason)
		}
	}
	for _, m := range e.members() {
		if m.Status.MemberID == "" || m.Status.Role != etcdv1.RoleVoter {
			t.Errorf("%s: id %q role %q", m.Name, m.Status.MemberID, m.Status.Role)
		}
	}
	if n := e.fake().Calls("MemberAddAsLearner"); n != 0 {
		t.Errorf("bootstrap called MemberAddAsLearner %d times", n)
	}
	if evs := e.events(); !slices.ContainsFunc(evs, func(s string) bool { return strings.Contains(s, "Bootstrapped") }) {
		t.Errorf("no Bootstrapped event in %v", evs)
	}
}

func TestBootstrapResumesAfterCrash(t *testing.T) {
	t.Parallel()
	// The second member create fails, as if the operator died there.
	creates := 0
	e := newEnv(t, 3, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*etcdv1.EtcdMember); ok {
			creates++
			if creates == 2 {
				return errors.New("connection refused")
			}
		}
		return c.Create(ctx, obj, opts...)
	}})
	if _, err := e.reconcile(); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("reconcile error = %v, want the injected one", err)
	}
	first := e.members()
	if len(first) != 1 {
		t.Fatalf("members after crash = %d, want 1", len(first))
	}
	e.mustReconcile()
	ms := e.members()
	if len(ms) != 3 {
		t.Fatalf("members = %d, want 3", len(ms))
	}
	for _, m := range ms {
		if m.Spec.InitialCluster != first[0].Spec.InitialCluster {
			t.Errorf("%s joined another initial cluster: %q vs %q", m.Name, m.Spec.InitialCluster, first[0].Spec.InitialCluster)
		}
		if !strings.Contains(first[0].Spec.InitialCluster, m.Name+"=") {
			t.Errorf("%s is not in the initial cluster %q", m.Name, first[0].Spec.InitialCluster)
		}
	}
}

// TestScaleUpPreparesEveryJoiner: a scale by two makes both EtcdMembers
// in one pass (their Pods are prepared at once), and adds both as learners
// at once only when every member in etcd runs with room for two learners;
// otherwise one at a time, the second waiting with a message that says so.
// A learner that has not started does not hold back the promotion of one
// that has.
func TestScaleUpPreparesEveryJoiner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		maxLearners int32 // the operator's --max-learners
		unflagged   bool  // the first member made by an operator without it
		noGate      bool  // no agent image: joiners start from their spec's list
		atOnce      int
		slotsWhy    string
	}{
		{name: "every member with --max-learners", maxLearners: 4, atOnce: 2},
		{name: "a member made before the flag", maxLearners: 4, unflagged: true, atOnce: 1, slotsWhy: "etcd's default --max-learners"},
		{name: "the operator's --max-learners 1", maxLearners: 1, atOnce: 1, slotsWhy: "etcd's default --max-learners"},
		{name: "joiners without the gate", maxLearners: 4, noGate: true, atOnce: 1, slotsWhy: "not behind the join gate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 1, interceptor.Funcs{})
			e.r.Options.MaxLearners = tt.maxLearners
			if !tt.noGate {
				e.r.Options.AgentImage = "raftsman:test"
			}
			e.formed()
			// The fake etcd would take four learners: what limits them is
			// the operator's view of the members' flags.
			e.fake().SetMaxLearners(4)
			if tt.unflagged {
				m := e.members()[0]
				m.Spec.MaxLearners = 0
				if err := e.c.Update(context.Background(), &m); err != nil {
					t.Fatal(err)
				}
				// Ready for its new generation: it runs without the flag.
				m.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonPodReady, ObservedGeneration: m.Generation, LastTransitionTime: metav1.Now()}}
				if err := e.c.Status().Update(context.Background(), &m); err != nil {
					t.Fatal(err)
				}
			}
			e.setReplicas(3)

			e.mustReconcile()
			ms := e.members()
			if len(ms) != 3 {
				t.Fatalf("members = %d after one pass, want 3: both joiners made at once", len(ms))
			}
			var joiners []etcdv1.EtcdMember
			for _, m := range ms {
				if m.Spec.InitialClusterState == etcdv1.InitialClusterStateExisting {
					joiners = append(joiners, m)
				}
			}
			if len(joiners) != 2 {
				t.Fatalf("joiners = %d, want 2", len(joiners))
			}
			want := resources.MaxLearners("3.6.16", tt.maxLearners)
			for _, j := range joiners {
				if j.Spec.MaxLearners != want {
					t.Errorf("joiner %s made with --max-learners %d, want %d", j.Name, j.Spec.MaxLearners, want)
				}
			}
			if n := e.fake().Calls("MemberAddAsLearner"); n != tt.atOnce {
				t.Fatalf("MemberAddAsLearner calls after one pass = %d, want %d", n, tt.atOnce)
			}
			if tt.slotsWhy != "" {
				p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing)
				if !strings.Contains(p.Message, "waits to be added") || !strings.Contains(p.Message, tt.slotsWhy) {
					t.Errorf("Progressing = %q, want it to say the second joiner waits, and why (%s)", p.Message, tt.slotsWhy)
				}
			}

			// The learner added last starts first: it is promoted while the
			// other has not started.
			learners := []etcd.Member{}
			for _, em := range e.fake().Members() {
				if em.IsLearner {
					learners = append(learners, em)
				}
			}
			last := learners[len(learners)-1]
			for _, j := range joiners {
				if slices.Contains(last.PeerURLs, j.Spec.PeerURL) {
					e.fake().Start(j.Spec.PeerURL, j.Name, j.Spec.ClientURL, true)
				}
			}
			e.mustReconcile()
			if n := e.fake().Calls("MemberPromote"); n != 1 {
				t.Errorf("MemberPromote calls = %d, want 1: the started learner while the other has not started", n)
			}
			if tt.unflagged {
				return // a rollout gives the member the flag: it needs Pods
			}

			e.converge(30)
			if n := e.fake().Calls("MemberAddAsLearner"); n != 2 {
				t.Errorf("MemberAddAsLearner calls = %d, want 2", n)
			}
			for _, em := range e.fake().Members() {
				if em.IsLearner {
					t.Errorf("member %s is still a learner", em.Name)
				}
			}
			c := e.cluster()
			if c.Status.ReadyReplicas != 3 || condition(c.Status.Conditions, etcdv1.ConditionProgressing).Reason != etcdv1.ReasonConverged {
				t.Errorf("status = %+v", c.Status)
			}
			evs := strings.Join(e.events(), "\n")
			if strings.Count(evs, "MemberAdded") != 2 || strings.Count(evs, "MemberPromoted") != 2 {
				t.Errorf("events = %s", evs)
			}
		})
	}
}

func TestCrashAfterMemberAddIsAdoptedNotRepeated(t *testing.T) {
	t.Parallel()
	// The status write after MemberAddAsLearner fails, as if the operator
	// died between the etcd call and recording it.
	failStatus := false
	e := newEnv(t, 1, interceptor.Funcs{SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
		if failStatus {
			return errors.New("operator killed")
		}
		return c.SubResource(sub).Apply(ctx, obj, opts...)
	}})
	e.formed()
	e.setReplicas(2)
	failStatus = true
	if _, err := e.reconcile(); err == nil {
		t.Fatal("want the injected status error")
	}
	failStatus = false
	if n := e.fake().Calls("MemberAddAsLearner"); n != 1 {
		t.Fatalf("MemberAddAsLearner calls = %d, want 1", n)
	}
	e.mustReconcile()
	if n := e.fake().Calls("MemberAddAsLearner"); n != 1 {
		t.Errorf("MemberAddAsLearner repeated after the crash: %d calls", n)
	}
	for _, m := range e.members() {
		if m.Status.MemberID == "" {
			t.Errorf("%s: member ID not adopted from etcd", m.Name)
		}
	}
	e.converge(20)
	if got := len(e.fake().Members()); got != 2 {
		t.Errorf("etcd members = %d, want 2", got)
	}
}

func TestNotYetIsRetriedWithReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, interceptor.Funcs{})
	e.formed()
	e.setReplicas(2)
	e.fake().FailNext("MemberAddAsLearner", etcd.ErrNotYet)
	res, err := e.reconcile()
	if err != nil {
		t.Fatalf("not-yet must not be an error: %v", err)
	}
	if res.RequeueAfter != e.r.Options.RetryInterval {
		t.Errorf("requeue = %v, want the retry interval", res.RequeueAfter)
	}
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Status != metav1.ConditionTrue || p.Reason != etcdv1.ReasonWaitingForHealth {
		t.Errorf("Progressing = %+v, want True WaitingForClusterHealth", p)
	}

	// A learner behind the leader is promoted only once it caught up.
	e.mustReconcile()
	var learner etcdv1.EtcdMember
	for _, m := range e.members() {
		if m.Status.Role == etcdv1.RoleLearner {
			learner = m
		}
	}
	e.fake().Start(learner.Spec.PeerURL, learner.Name, learner.Spec.ClientURL, false)
	res = e.mustReconcile()
	if res.RequeueAfter != e.r.Options.RetryInterval {
		t.Errorf("requeue = %v, want the retry interval", res.RequeueAfter)
	}
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonPromotingLearner {
		t.Errorf("Progressing = %+v, want PromotingLearner", p)
	}
	e.fake().SetInSync(learner.Spec.PeerURL, true)
	e.converge(10)
	if e.member(learner.Name).Status.Role != etcdv1.RoleVoter {
		t.Errorf("learner not promoted")
	}
}

func TestScaleDownPicksVictimAndKeepsQuorum(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		from, to  int32
		unhealthy int // index of an unhealthy member, -1 for none
		leader    int // index of the leader
		wantGone  int // index of the member removed, -1 for none
		wantCond  string
	}{
		{name: "follower goes, not the leader", from: 3, to: 2, unhealthy: -1, leader: 2, wantGone: 1, wantCond: etcdv1.ReasonConverged},
		{name: "unhealthy member goes first", from: 3, to: 2, unhealthy: 0, leader: 1, wantGone: 0, wantCond: etcdv1.ReasonConverged},
		{name: "leader moves away when it must go", from: 2, to: 1, unhealthy: -1, leader: 1, wantGone: 1, wantCond: etcdv1.ReasonConverged},
		{name: "never below quorum of healthy voters", from: 5, to: 4, unhealthy: -1, leader: 0, wantGone: 4, wantCond: etcdv1.ReasonConverged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.from, interceptor.Funcs{})
			e.formed()
			ms := e.members()
			slices.SortFunc(ms, func(a, b etcdv1.EtcdMember) int { return strings.Compare(a.Name, b.Name) })
			if tt.unhealthy >= 0 {
				e.fake().SetHealthy(ms[tt.unhealthy].Name, false)
			}
			e.fake().SetLeader(ms[tt.leader].Name)
			// The newest member is the natural victim among equals; make
			// the expected order deterministic by name.
			e.setReplicas(tt.to)
			e.converge(20)
			left := map[string]bool{}
			for _, em := range e.fake().Members() {
				left[em.Name] = true
			}
			if len(left) != int(tt.to) {
				t.Fatalf("etcd members = %v, want %d", left, tt.to)
			}
			if tt.unhealthy >= 0 && left[ms[tt.unhealthy].Name] {
				t.Errorf("unhealthy member %s kept while a healthy one went", ms[tt.unhealthy].Name)
			}
			if tt.unhealthy < 0 && tt.to > 1 && !left[ms[tt.leader].Name] {
				t.Errorf("the leader %s was removed while followers could go", ms[tt.leader].Name)
			}
			if len(e.members()) != int(tt.to) {
				t.Errorf("EtcdMembers = %d, want %d", len(e.members()), tt.to)
			}
			if c := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); c.Reason != tt.wantCond {
				t.Errorf("Progressing = %+v", c)
			}
			if !strings.Contains(strings.Join(e.events(), "\n"), "MemberRemoved") {
				t.Errorf("no MemberRemoved event")
			}
		})
	}
}

func TestRemovalRefusedWithoutHealthyQuorum(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	ms := e.members()
	// One member is down and someone deletes the EtcdMember of a healthy
	// one: removing it would leave one healthy voter of two.
	e.fake().SetHealthy(ms[0].Name, false)
	if err := e.c.Delete(context.Background(), &ms[1]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.mustReconcile()
	}
	if n := e.fake().Calls("MemberRemove"); n != 0 {
		t.Errorf("MemberRemove called %d times while it would leave no healthy quorum", n)
	}
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonQuorumAtRisk {
		t.Errorf("Progressing = %+v, want QuorumAtRisk", p)
	}
	if !slices.Contains(e.member(ms[1].Name).Finalizers, etcdv1.MemberFinalizer) {
		t.Errorf("the member was released before leaving etcd")
	}
	// Once the other member is back, the removal goes through.
	e.fake().SetHealthy(ms[0].Name, true)
	e.converge(10)
	if n := e.fake().Calls("MemberRemove"); n != 1 {
		t.Errorf("MemberRemove calls = %d, want 1", n)
	}
	if got := len(e.fake().Members()); got != 3 {
		t.Errorf("etcd members = %d, want 3 after the replacement", got)
	}
}

func TestLostMemberIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	lost := e.members()[1]
	meta.SetStatusCondition(&lost.Status.Conditions, metav1.Condition{
		Type: etcdv1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1.ReasonDataLost,
		ObservedGeneration: lost.Generation,
	})
	if err := e.c.Status().Update(context.Background(), &lost); err != nil {
		t.Fatal(err)
	}
	e.converge(30)
	names := []string{}
	for _, m := range e.members() {
		names = append(names, m.Name)
	}
	if slices.Contains(names, lost.Name) || len(names) != 3 {
		t.Errorf("members = %v, want 3 without %s", names, lost.Name)
	}
	for _, em := range e.fake().Members() {
		if em.Name == lost.Name {
			t.Errorf("lost member still in etcd")
		}
	}
	if n := e.fake().Calls("MemberAddAsLearner"); n != 1 {
		t.Errorf("MemberAddAsLearner calls = %d, want 1", n)
	}
}

func TestRemovalAfterCrashIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	m := e.members()[2]
	// The operator removed the member from etcd and died before releasing it.
	id, _ := etcd.ParseID(m.Status.MemberID)
	if err := e.fake().MemberRemove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	e.setReplicas(2)
	if err := e.c.Delete(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	e.converge(10)
	if got := len(e.members()); got != 2 {
		t.Errorf("EtcdMembers = %d, want 2", got)
	}
	if got := len(e.fake().Members()); got != 2 {
		t.Errorf("etcd members = %d, want 2", got)
	}
}

func TestIdleClusterWritesNothing(t *testing.T) {
	t.Parallel()
	writes := 0
	count := func() { writes++ }
	e := newEnv(t, 3, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			count()
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	e.formed()
	e.converge(5)
	writes = 0
	for range 5 {
		if res := e.mustReconcile(); res.RequeueAfter != e.r.Options.HealthInterval {
			t.Fatalf("idle cluster requeue = %v, want the health interval", res.RequeueAfter)
		}
	}
	if writes != 0 {
		t.Errorf("idle healthy cluster made %d API writes, want 0", writes)
	}
}

// TestIdleTLSClusterReadsNoSecret: the cache holds Secrets' metadata only,
// and a pass builds its etcd client from the client Secret: read from the
// API server once per version of the Secret, not at every pass.
func TestIdleTLSClusterReadsNoSecret(t *testing.T) {
	t.Parallel()
	reads := 0
	e := newEnv(t, 3, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			// A typed Get is the APIReader's: the cache serves Secrets'
			// metadata only.
			if _, ok := obj.(*corev1.Secret); ok {
				reads++
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	c := e.cluster()
	c.Spec.TLS.Disabled = false
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.tlsReady("rev-1")
	e.formed()
	e.converge(5)
	if reads != 1 {
		t.Errorf("forming the cluster read the client Secret %d times, want once", reads)
	}
	reads = 0
	for range 5 {
		if res := e.mustReconcile(); res.RequeueAfter != e.r.Options.HealthInterval {
			t.Fatalf("idle cluster requeue = %v, want the health interval", res.RequeueAfter)
		}
	}
	if reads != 0 {
		t.Errorf("5 idle passes read %d Secrets from the API server, want 0", reads)
	}

	// A renewed certificate: read once, and etcd reached with it.
	sec := &corev1.Secret{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "demo-client-tls"}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["tls.crt"] = []byte("renewed")
	if err := e.c.Update(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	reads = 0
	for range 3 {
		e.mustReconcile()
	}
	if creds := e.fake().LastCredentials(); reads != 1 || string(creds.CertPEM) != "renewed" {
		t.Errorf("after the renewal etcd was reached with %q after %d reads of the Secret, want %q after 1", creds.CertPEM, reads, "renewed")
	}
}

func TestDeleteReleasesMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	if err := e.c.Delete(context.Background(), e.cluster()); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	for _, m := range e.members() {
		if slices.Contains(m.Finalizers, etcdv1.MemberFinalizer) {
			t.Errorf("%s keeps its finalizer", m.Name)
		}
	}
	if err := e.c.Get(context.Background(), e.key, &etcdv1.EtcdCluster{}); err == nil {
		t.Errorf("cluster still exists after its finalizer should be gone")
	}
	if n := e.fake().Calls("MemberRemove"); n != 0 {
		t.Errorf("deleting the whole cluster called MemberRemove %d times", n)
	}
}

func TestUnhealthyMemberIsCheckedSoon(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	e.formed()
	e.fake().SetHealthy(e.members()[0].Name, false)
	if res := e.mustReconcile(); res.RequeueAfter >= e.r.Options.HealthInterval {
		t.Errorf("requeue with an unhealthy member = %v, want sooner than the health interval", res.RequeueAfter)
	}
	if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonMembersUnhealthy {
		t.Errorf("Degraded = %+v", d)
	}
	e.fake().SetHealthy(e.members()[0].Name, true)
	if res := e.mustReconcile(); res.RequeueAfter != e.r.Options.HealthInterval {
		t.Errorf("requeue when healthy = %v, want the health interval", res.RequeueAfter)
	}
	if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v after recovery", d)
	}
}

// TestTLSClusterWaitsForTLSReady: a cluster with TLS creates no member until
// the tls controller's TLSReady is True for its generation; then members get
// https URLs and the Secret names of status.tls, and the operator reaches
// etcd with the client certificate.
func TestTLSClusterWaitsForTLSReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	c := e.cluster()
	c.Spec.TLS.Disabled = false
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	res := e.mustReconcile()
	if n := len(e.members()); n != 0 {
		t.Fatalf("%d members created before TLSReady", n)
	}
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonWaitingForTLS || res.IsZero() {
		t.Errorf("Progressing = %+v, result %+v; want WaitingForTLS and a backstop requeue", p, res)
	}

	e.tlsReady("rev-1")
	e.mustReconcile()
	ms := e.members()
	if len(ms) != 3 {
		t.Fatalf("members = %d after TLSReady, want 3", len(ms))
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.Spec.PeerURL, "https://") || !strings.HasPrefix(m.Spec.ClientURL, "https://") || !strings.Contains(m.Spec.InitialCluster, "=https://") {
			t.Errorf("%s: URLs %s %s %s, want https", m.Name, m.Spec.PeerURL, m.Spec.ClientURL, m.Spec.InitialCluster)
		}
		if m.Spec.TLS == nil || m.Spec.TLS.PeerSecretName != "demo-peer-tls" || m.Spec.TLS.ServerSecretName != "demo-server-tls" || !m.Spec.TLS.ClientCertAuth {
			t.Errorf("%s: tls %+v", m.Name, m.Spec.TLS)
		}
	}
	e.formed()
	if creds := e.fake().LastCredentials(); string(creds.CertPEM) != "cert" || string(creds.CAPEM) != "ca" {
		t.Errorf("etcd reached with %q/%q, want the client Secret's certificate", creds.CertPEM, creds.CAPEM)
	}
}

// TestSpecChangeOutsideTLSWaitsForNoTLSPass: a later generation whose
// spec.tls did not change acts on the TLSReady the tls controller set for
// an earlier one (a scale starts at once); one that changed spec.tls waits
// for a TLSReady of its own.
func TestSpecChangeOutsideTLSWaitsForNoTLSPass(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	c := e.cluster()
	c.Spec.TLS.Disabled = false
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.tlsReady("rev-1")
	e.formed()

	c = e.cluster()
	c.Spec.Replicas = ptr.To(int32(4))
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if n := len(e.members()); n != 4 {
		t.Errorf("members = %d after a scale to 4 with TLSReady of the generation before, want 4", n)
	}
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason == etcdv1.ReasonWaitingForTLS {
		t.Errorf("Progressing = %+v: a scale waited for the tls controller", p)
	}

	c = e.cluster()
	c.Spec.Replicas = ptr.To(int32(5))
	c.Spec.TLS.CertificateLifetime = &metav1.Duration{Duration: 48 * time.Hour}
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonWaitingForTLS {
		t.Errorf("Progressing = %+v after a change of spec.tls, want WaitingForTLS", p)
	}
	if n := len(e.members()); n != 4 {
		t.Errorf("members = %d after a change of spec.tls before TLSReady, want 4", n)
	}
}

// tlsReady plays the tls controller: the client Secret, status.tls with the
// trust revision, and TLSReady for the current generation.
func (e *env) tlsReady(rev string) {
	e.t.Helper()
	c := e.cluster()
	c.Status.TLS = &etcdv1.TLSStatus{PeerSecretName: "demo-peer-tls", ServerSecretName: "demo-server-tls", ClientSecretName: "demo-client-tls", CASecretName: "demo-ca", TrustRevision: rev, SpecHash: c.TLSSpecHash()}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionTLSReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonCertificatesReady, ObservedGeneration: c.Generation})
	if err := e.c.Status().Update(context.Background(), c); err != nil {
		e.t.Fatal(err)
	}
	client := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-client-tls", Namespace: "ns"},
		Data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key"), "ca.crt": []byte("ca")}}
	if err := e.c.Create(context.Background(), client); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

// TestNewTrustRestartsMembersOneAtATime: a new trust revision (a CA
// rotation) reaches one member at a time, only while all are Ready and
// healthy, and the leader last.
func TestNewTrustRestartsMembersOneAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, interceptor.Funcs{})
	c := e.cluster()
	c.Spec.TLS.Disabled = false
	c.Generation++
	if err := e.c.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	e.tlsReady("rev-1")
	e.formed()
	leader := ""
	for _, m := range e.members() {
		if m.Spec.TLS == nil || m.Spec.TLS.TrustRevision != "rev-1" {
			t.Fatalf("%s: tls %+v, want trust revision rev-1", m.Name, m.Spec.TLS)
		}
		if id, _ := etcd.ParseID(m.Status.MemberID); id == e.fake().Leader() {
			leader = m.Name
		}
	}
	c = e.cluster()
	c.Status.TLS.TrustRevision = "rev-2"
	if err := e.c.Status().Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	var order []string
	for range 3 {
		var restarted []etcdv1.EtcdMember
		// The leader's turn takes two passes: leadership moves first.
		for pass := 0; pass < 2 && len(restarted) == 0; pass++ {
			e.mustReconcile()
			for _, m := range e.members() {
				if m.Spec.TLS.TrustRevision == "rev-2" && !slices.Contains(order, m.Name) {
					restarted = append(restarted, m)
				}
			}
		}
		if len(restarted) != 1 {
			t.Fatalf("%d members moved to the new trust in one pass, want 1", len(restarted))
		}
		m := restarted[0]
		order = append(order, m.Name)
		if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Reason != etcdv1.ReasonRollingUpdate {
			t.Errorf("Progressing = %+v, want RollingUpdate", p)
		}
		// The member controller restarts its Pod: not Ready, so nothing
		// else moves meanwhile.
		setReady := func(ready bool) {
			m := e.member(m.Name)
			st := metav1.ConditionFalse
			if ready {
				st = metav1.ConditionTrue
			}
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionReady, Status: st, Reason: etcdv1.ReasonPodReady, ObservedGeneration: m.Generation})
			if err := e.c.Status().Update(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		setReady(false)
		e.mustReconcile()
		moved := 0
		for _, o := range e.members() {
			if o.Spec.TLS.TrustRevision == "rev-2" {
				moved++
			}
		}
		if moved != len(order) {
			t.Fatalf("%d members on the new trust while %s restarts, want %d", moved, m.Name, len(order))
		}
		// The member controller reports the new Pod Ready.
		setReady(true)
	}
	if order[2] != leader {
		t.Errorf("restart order %v, want the leader %s last", order, leader)
	}
	e.mustReconcile()
	if p := condition(e.cluster().Status.Conditions, etcdv1.ConditionProgressing); p.Status != metav1.ConditionFalse {
		t.Errorf("Progressing = %+v after every member restarted", p)
	}
	if n := len(slices.DeleteFunc(e.events(), func(s string) bool { return !strings.Contains(s, "MemberUpdated") })); n != 3 {
		t.Errorf("%d MemberUpdated events, want 3", n)
	}
}

// TestBootstrapFromAStaleCacheMakesNoSecondCluster: a pass that runs before
// the cache shows the initial members just created makes the same members
// again, not a second set that would bootstrap a second etcd cluster.
func TestBootstrapFromAStaleCacheMakesNoSecondCluster(t *testing.T) {
	t.Parallel()
	stale := false
	e := newEnv(t, 3, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*etcdv1.EtcdMemberList); ok && stale {
				return nil // the cache has not seen the members yet
			}
			return c.List(ctx, list, opts...)
		},
	})
	e.mustReconcile()
	first := e.members()
	stale = true
	e.mustReconcile()
	stale = false
	ms := e.members()
	if len(ms) != 3 || len(first) != 3 {
		t.Fatalf("%d members after a pass on a stale cache (%d before), want 3", len(ms), len(first))
	}
	for i := range ms {
		if ms[i].Spec.InitialCluster != first[0].Spec.InitialCluster {
			t.Errorf("%s: initial cluster %q, want %q", ms[i].Name, ms[i].Spec.InitialCluster, first[0].Spec.InitialCluster)
		}
	}
}

// TestForeignObjectsAreLeftAlone: a Service or PDB under a name the cluster
// needs that the cluster does not own is never updated; Degraded says
// NameConflict and names it. hidden: the cache does not hold it (another
// shard's, or unlabelled), so only the create finds it, and the API reader
// tells whose it is.
func TestForeignObjectsAreLeftAlone(t *testing.T) {
	t.Parallel()
	foreignSvc := func() client.Object {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", Labels: map[string]string{"app": "other"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "other"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	}
	foreignPDB := func() client.Object {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(7)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}}
	}
	tests := []struct {
		name   string
		obj    func() client.Object
		hidden bool
		want   string
	}{
		{name: "a Service of the client Service's name", obj: foreignSvc, want: "Service demo"},
		{name: "a PDB of the cluster's name", obj: foreignPDB, want: "PodDisruptionBudget demo"},
		{name: "a Service the cache does not hold", obj: foreignSvc, hidden: true, want: "Service demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 3, interceptor.Funcs{})
			orig := tt.obj()
			live := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(orig.DeepCopyObject().(client.Object)).Build()
			if tt.hidden {
				// The cache misses it; the API server has it.
				e.r.Client = &hiddenCreate{Client: e.c, live: live}
			} else if err := e.c.Create(context.Background(), orig.DeepCopyObject().(client.Object)); err != nil {
				t.Fatal(err)
			}
			e.r.APIReader = live
			e.mustReconcile()
			e.mustReconcile()

			got := tt.obj()
			if err := live.Get(context.Background(), client.ObjectKeyFromObject(orig), got); err != nil {
				t.Fatal(err)
			}
			if !tt.hidden {
				if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(orig), got); err != nil {
					t.Fatal(err)
				}
			}
			if len(got.GetOwnerReferences()) > 0 {
				t.Errorf("the foreign object was taken over: owners %v", got.GetOwnerReferences())
			}
			switch o := got.(type) {
			case *corev1.Service:
				if o.Spec.Selector["app"] != "other" || o.Spec.Ports[0].Port != 80 {
					t.Errorf("the foreign Service was changed: %+v", o.Spec)
				}
			case *policyv1.PodDisruptionBudget:
				if o.Spec.MinAvailable.IntValue() != 7 {
					t.Errorf("the foreign PDB was changed: %+v", o.Spec)
				}
			}
			d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded)
			if d.Status != metav1.ConditionTrue || d.Reason != etcdv1.ReasonNameConflict || !strings.Contains(d.Message, tt.want) {
				t.Errorf("Degraded = %+v, want True NameConflict naming %s", d, tt.want)
			}
		})
	}
}

// hiddenCreate is a client whose Create of an object the live client holds
// fails with AlreadyExists, as the API server answers for an object the
// cache does not hold.
type hiddenCreate struct {
	client.Client
	live client.Client
}

func (h *hiddenCreate) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	have := obj.DeepCopyObject().(client.Object)
	if err := h.live.Get(ctx, client.ObjectKeyFromObject(obj), have); err == nil {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, obj.GetName())
	}
	return h.Client.Create(ctx, obj, opts...)
}

// TestMemberPodTroubleIsDegraded: what the member controller says of a Pod
// the API server refuses or the scheduler cannot place (its Ready reason,
// for the member's generation) makes the cluster Degraded with the same
// reason and the member's message; a stale condition does not.
func TestMemberPodTroubleIsDegraded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason string
		stale  bool
		want   string // Degraded reason
	}{
		{reason: etcdv1.ReasonPodRejected, want: etcdv1.ReasonPodRejected},
		{reason: etcdv1.ReasonUnschedulable, want: etcdv1.ReasonUnschedulable},
		{reason: etcdv1.ReasonPodRejected, stale: true, want: etcdv1.ReasonBootstrapping},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s stale=%v", tt.reason, tt.stale), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 3, interceptor.Funcs{})
			e.mustReconcile()
			m := e.members()[0]
			gen := m.Generation
			if tt.stale {
				gen--
			}
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: tt.reason, Message: "the member controller's words", ObservedGeneration: gen})
			if err := e.c.Status().Update(context.Background(), &m); err != nil {
				t.Fatal(err)
			}
			e.mustReconcile()
			d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded)
			if d.Reason != tt.want {
				t.Fatalf("Degraded = %+v, want reason %s", d, tt.want)
			}
			if !tt.stale && (d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, m.Name) || !strings.Contains(d.Message, "the member controller's words")) {
				t.Errorf("Degraded = %+v, want True naming %s with its message", d, m.Name)
			}
		})
	}
}
