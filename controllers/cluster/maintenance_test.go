package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/resources"
)

func TestOverThresholds(t *testing.T) {
	t.Parallel()
	const mi = int64(1) << 20
	tests := []struct {
		name        string
		policy      etcdv1.DefragPolicy
		size, inUse int64
		want        bool
	}{
		{name: "defaults: half free and 64Mi", size: 200 * mi, inUse: 100 * mi, want: true},
		{name: "defaults: half free but small", size: 100 * mi, inUse: 50 * mi, want: false},
		{name: "defaults: 64Mi free but under half", size: 300 * mi, inUse: 200 * mi, want: false},
		{name: "lower thresholds", policy: etcdv1.DefragPolicy{MinFreePercent: ptr.To(int32(20)), MinFreeBytes: ptr.To(resource.MustParse("1Mi"))}, size: 10 * mi, inUse: 8 * mi, want: true},
		{name: "nothing free", size: 10 * mi, inUse: 10 * mi, want: false},
		{name: "sizes unknown (etcd before in-use reporting)", size: 10 * mi, inUse: 0, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := overThresholds(tt.policy, etcd.Status{DBSize: tt.size, DBSizeInUse: tt.inUse}); got != tt.want {
				t.Errorf("overThresholds = %t, want %t", got, tt.want)
			}
		})
	}
}

// maintEnv is a formed 3-member cluster; the test plays the member
// controller's Serving condition (long enough ago that the drain delay has
// passed).
type maintEnv struct {
	*rollEnv
}

func newMaintEnv(t *testing.T) *maintEnv {
	t.Helper()
	e := &maintEnv{newRollEnv(t, 3, "3.6.16", etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))})}
	e.playServing()
	return e
}

func (e *maintEnv) playServing() {
	e.t.Helper()
	for _, m := range e.members() {
		st := metav1.ConditionTrue
		if m.Spec.Drained {
			st = metav1.ConditionFalse
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionServing); c != nil && c.Status == st && c.ObservedGeneration == m.Generation {
			continue
		}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionServing, Status: st, Reason: "Test",
			ObservedGeneration: m.Generation, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))})
		if err := e.c.Status().Update(context.Background(), &m); err != nil {
			e.t.Fatal(err)
		}
	}
}

// runMaintenance reconciles until no defragmentation runs, checking in
// every pass that at most one member is drained and that a member is
// defragmented only while drained.
func (e *maintEnv) runMaintenance(limit int) (drainedWhileDefragmented []bool) {
	e.t.Helper()
	defragged := len(e.fake().Defragmented())
	for range limit {
		drained := map[string]bool{}
		for _, m := range e.members() {
			drained[m.Name] = m.Spec.Drained
		}
		e.mustReconcile()
		e.evs = append(e.evs, e.events()...)
		if d := e.fake().Defragmented(); len(d) > defragged {
			drainedWhileDefragmented = append(drainedWhileDefragmented, drained[d[len(d)-1]])
			defragged = len(d)
		}
		n := 0
		for _, m := range e.members() {
			if m.Spec.Drained {
				n++
			}
		}
		if n > 1 {
			e.t.Fatalf("%d members drained at once", n)
		}
		e.playServing()
		if c := e.cluster(); c.Status.Maintenance == nil || c.Status.Maintenance.Defrag == nil {
			if len(e.fake().Defragmented()) > 0 || limit == 1 {
				return drainedWhileDefragmented
			}
		}
	}
	e.t.Fatalf("defragmentation not done after %d passes: %+v", limit, e.cluster().Status.Maintenance)
	return nil
}

func (e *maintEnv) leaderName() string {
	for _, m := range e.fake().Members() {
		if m.ID == e.fake().Leader() {
			return m.Name
		}
	}
	return ""
}

// TestNoSpaceRepaired: a NOSPACE alarm is repaired whatever the policy
// says: compaction keeping 1000 revisions, every member defragmented while
// out of the client Service, followers first and the leader last after
// leadership moved away, then the alarm disarmed.
func TestNoSpaceRepaired(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Maintenance.Defrag.Disabled = true })
	leader := e.leaderName()
	for _, m := range e.members() {
		e.fake().SetDBSize(m.Name, 40<<20, 10<<20)
	}
	e.fake().RaiseAlarm(leader, etcd.AlarmNoSpace)
	e.mustReconcile()
	if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Reason != etcdv1.ReasonNoSpace {
		t.Errorf("Degraded = %+v, want reason NoSpace", d)
	}
	drained := e.runMaintenance(60)
	order := e.fake().Defragmented()
	if len(order) != 3 || order[2] != leader || !slices.IsSorted(order[:2]) {
		t.Errorf("defragmented %v, want the followers by name, then the leader %s", order, leader)
	}
	if slices.Contains(drained, false) {
		t.Errorf("a member was defragmented while in the client Service: %v", drained)
	}
	if e.leaderName() == leader {
		t.Errorf("leadership stayed with %s through its defragmentation", leader)
	}
	if got, want := e.fake().Compacted(), int64(1<<20)/2-1000; got != want {
		t.Errorf("compacted to %d, want the revision minus 1000, %d", got, want)
	}
	if a, _ := e.fake().Alarms(context.Background()); len(a) != 0 {
		t.Errorf("alarms %v after the repair", a)
	}
	c := e.cluster()
	if len(c.Status.Maintenance.Members) != 3 {
		t.Fatalf("status.maintenance.members = %+v, want 3", c.Status.Maintenance.Members)
	}
	for _, ms := range c.Status.Maintenance.Members {
		if ms.Reason != etcdv1.DefragForNoSpace || ms.SizeBefore != 40<<20 || ms.SizeAfter != 10<<20 || ms.ReclaimedBytes != 30<<20 {
			t.Errorf("status.maintenance.members has %+v, want NoSpace 40Mi -> 10Mi", ms)
		}
	}
	for _, m := range e.members() {
		if m.Spec.Drained {
			t.Errorf("%s still drained", m.Name)
		}
	}
	e.mustReconcile()
	if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v after the repair", d)
	}
	for _, want := range []string{"DefragStarted", "Compacted", "MemberDefragmented", "AlarmCleared"} {
		if !slices.ContainsFunc(e.evs, func(ev string) bool { return strings.Contains(ev, want) }) {
			t.Errorf("no %s event in %q", want, e.evs)
		}
	}
}

// TestDefragPolicy: the thresholds pick the members whose free pages reach
// both; a disabled policy defragments nothing.
func TestDefragPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		disabled bool
		// long: defragmentations run beside the workers (LongCalls), as in
		// the operator, not in the pass.
		long bool
		want int
	}{
		{name: "thresholds", want: 2},
		{name: "thresholds, defragmented beside the workers", long: true, want: 2},
		{name: "disabled", disabled: true, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newMaintEnv(t)
			if tt.long {
				e.r.Long = &LongCalls{Limit: 1}
			}
			e.setSpec(func(s *etcdv1.EtcdClusterSpec) {
				s.Maintenance.Defrag = etcdv1.DefragPolicy{Disabled: tt.disabled, MinFreePercent: ptr.To(int32(30)), MinFreeBytes: ptr.To(resource.MustParse("5Mi"))}
			})
			ms := e.members()
			e.fake().SetDBSize(ms[0].Name, 20<<20, 10<<20) // 10Mi, 50%: over
			e.fake().SetDBSize(ms[1].Name, 20<<20, 18<<20) // 2Mi: under
			e.fake().SetDBSize(ms[2].Name, 40<<20, 20<<20) // 20Mi, 50%: over
			if tt.want == 0 {
				e.runMaintenance(1)
				e.runMaintenance(1)
			} else {
				e.runMaintenance(60)
			}
			got := e.fake().Defragmented()
			if len(got) != tt.want || slices.Contains(got, ms[1].Name) {
				t.Errorf("defragmented %v, want %d members, not %s", got, tt.want, ms[1].Name)
			}
			for _, r := range e.cluster().Status.Maintenance.Members {
				if r.Reason != etcdv1.DefragForThreshold {
					t.Errorf("status.maintenance.members has %+v, want reason Threshold", r)
				}
			}
		})
	}
}

// TestDefragBesideTheWorkersKeepsItsMember: a member defragmenting beside
// the workers may answer no status request until it ends. The run does not
// take that for a health problem: the member stays out of the client
// Service in phase Defragmenting, it is defragmented once, and the run ends.
func TestDefragBesideTheWorkersKeepsItsMember(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	e.r.Long = &LongCalls{Limit: 1}
	release := e.fake().HoldDefragments()
	defer release()
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) {
		s.Maintenance.Defrag = etcdv1.DefragPolicy{MinFreePercent: ptr.To(int32(30)), MinFreeBytes: ptr.To(resource.MustParse("5Mi"))}
	})
	var follower string
	for _, m := range e.members() {
		if m.Name != e.leaderName() {
			follower = m.Name
			break
		}
	}
	e.fake().SetDBSize(follower, 20<<20, 10<<20)
	for i := 0; len(e.fake().Defragmenting()) == 0; i++ {
		if i == 200 {
			t.Fatalf("no defragmentation started: %+v", e.cluster().Status.Maintenance)
		}
		e.mustReconcile()
		e.playServing()
		time.Sleep(5 * time.Millisecond)
	}
	for range 5 {
		e.mustReconcile()
		e.playServing()
		if !e.member(follower).Spec.Drained {
			t.Fatalf("%s put back into the client Service while its defragmentation runs", follower)
		}
		if d := e.cluster().Status.Maintenance.Defrag; d == nil || d.Member != follower || d.Phase != etcdv1.DefragDefragmenting {
			t.Fatalf("run %+v while %s is defragmented: want it in phase %s", d, follower, etcdv1.DefragDefragmenting)
		}
	}
	release()
	for i := 0; e.cluster().Status.Maintenance.Defrag != nil; i++ {
		if i == 200 {
			t.Fatalf("run not done: %+v", e.cluster().Status.Maintenance)
		}
		e.mustReconcile()
		e.playServing()
		time.Sleep(5 * time.Millisecond)
	}
	if got := e.fake().Defragmented(); !slices.Equal(got, []string{follower}) {
		t.Errorf("defragmented %v, want %s once", got, follower)
	}
	if e.member(follower).Spec.Drained {
		t.Errorf("%s still out of the client Service after the run", follower)
	}
}

// TestClientServiceSelectsServingOnceEveryPodIsLabelled: the client
// Service selects on the serving label only once every member Pod carries
// it (Pods made before the label existed get it from the member
// controller), and keeps selecting on it after.
func TestClientServiceSelectsServingOnceEveryPodIsLabelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, interceptor.Funcs{})
	old := resources.ClientService(e.cluster(), false)
	// The operator made it (it owns what it keeps up to date).
	if err := controllerutil.SetControllerReference(e.cluster(), old, e.c.Scheme()); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-a", Namespace: "ns",
		Labels: map[string]string{etcdv1.ClusterLabel: "demo", etcdv1.MemberLabel: "demo-a"}}}
	for _, o := range []client.Object{old, pod} {
		if err := e.c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	selector := func() map[string]string {
		svc := &corev1.Service{}
		if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(old), svc); err != nil {
			t.Fatal(err)
		}
		return svc.Spec.Selector
	}
	e.mustReconcile()
	if _, ok := selector()[etcdv1.ServingLabel]; ok {
		t.Fatalf("selector %v selects on %s while a Pod lacks it", selector(), etcdv1.ServingLabel)
	}
	pod.Labels[etcdv1.ServingLabel] = "true"
	if err := e.c.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if selector()[etcdv1.ServingLabel] != "true" {
		t.Fatalf("selector %v, want %s=true once every Pod has it", selector(), etcdv1.ServingLabel)
	}
	delete(pod.Labels, etcdv1.ServingLabel)
	if err := e.c.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if selector()[etcdv1.ServingLabel] != "true" {
		t.Errorf("selector %v went back", selector())
	}
}

// TestNoSpaceRemains: when the databases are still at their quota after
// compaction and defragmentation, the alarm is not disarmed (the next
// write would raise it again), a Warning says what to raise, and no new
// repair starts at once.
func TestNoSpaceRemains(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	quota := *e.members()[0].Spec.Options.QuotaBackendBytes
	for _, m := range e.members() {
		e.fake().SetDBSize(m.Name, quota+(100<<20), quota+(10<<20))
	}
	e.fake().RaiseAlarm(e.leaderName(), etcd.AlarmNoSpace)
	e.runMaintenance(60)
	if got := len(e.fake().Defragmented()); got != 3 {
		t.Fatalf("%d members defragmented, want 3", got)
	}
	if a, _ := e.fake().Alarms(context.Background()); len(a) != 1 {
		t.Errorf("alarms %v, want the NOSPACE alarm kept", a)
	}
	if !slices.ContainsFunc(e.evs, func(ev string) bool { return strings.Contains(ev, "NoSpaceRemains") }) {
		t.Errorf("no NoSpaceRemains event in %q", e.evs)
	}
	for range 5 {
		e.mustReconcile()
		e.playServing()
	}
	if got := len(e.fake().Defragmented()); got != 3 {
		t.Errorf("%d defragmentations, want no new repair right after one", got)
	}
	if d := condition(e.cluster().Status.Conditions, etcdv1.ConditionDegraded); d.Reason != etcdv1.ReasonNoSpace {
		t.Errorf("Degraded = %+v, want NoSpace", d)
	}
}

// TestDrainedMemberPutBackWhenTheRunWaits: a member drained for a
// defragmentation goes back into the client Service as soon as the run
// cannot go on (here another member stops answering), and drains again
// when it resumes; the run then ends with no member drained.
func TestDrainedMemberPutBackWhenTheRunWaits(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	leader := e.leaderName()
	for _, m := range e.members() {
		e.fake().SetDBSize(m.Name, 40<<20, 10<<20)
	}
	e.fake().RaiseAlarm(leader, etcd.AlarmNoSpace)
	drained := ""
	for range 30 {
		e.mustReconcile()
		e.playServing()
		for _, m := range e.members() {
			if m.Spec.Drained {
				drained = m.Name
			}
		}
		if drained != "" {
			break
		}
	}
	if drained == "" {
		t.Fatal("no member drained")
	}
	var other string
	for _, m := range e.members() {
		if m.Name != drained && m.Name != leader {
			other = m.Name
		}
	}
	if other == "" {
		other = leader
	}
	e.fake().SetHealthy(other, false)
	e.mustReconcile()
	if e.member(drained).Spec.Drained {
		t.Fatalf("%s still drained while %s does not answer", drained, other)
	}
	if run := e.cluster().Status.Maintenance.Defrag; run == nil || run.Member != drained || run.Phase != etcdv1.DefragDraining {
		t.Errorf("run = %+v, want %s back to Draining", run, drained)
	}
	e.fake().SetHealthy(other, true)
	e.runMaintenance(60)
	if got := e.fake().Defragmented(); len(got) != 3 {
		t.Errorf("defragmented %v, want every member once the run resumed", got)
	}
	for _, m := range e.members() {
		if m.Spec.Drained {
			t.Errorf("%s still drained after the run", m.Name)
		}
	}
}

// TestDefragGivesUpOnAMember: a member whose defragmentation fails three
// times is put back into the client Service and skipped, with a warning;
// the run goes on with the others.
func TestDefragGivesUpOnAMember(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	for _, m := range e.members() {
		e.fake().SetDBSize(m.Name, 40<<20, 10<<20)
	}
	e.fake().RaiseAlarm(e.leaderName(), etcd.AlarmNoSpace)
	e.fake().FailNext("Defragment", etcd.ErrUnreachable, etcd.ErrUnreachable, etcd.ErrUnreachable)
	e.runMaintenance(80)
	if got := e.fake().Defragmented(); len(got) != 2 {
		t.Errorf("defragmented %v, want the two members that did not fail", got)
	}
	if !slices.ContainsFunc(e.evs, func(ev string) bool { return strings.Contains(ev, "DefragFailed") }) {
		t.Errorf("no DefragFailed event in %q", e.evs)
	}
	for _, m := range e.members() {
		if m.Spec.Drained {
			t.Errorf("%s still drained", m.Name)
		}
	}
}

// TestDefragRequested: each new value of the defrag annotation starts one
// run of every member, even with the policy disabled and no member over
// its thresholds; the value is kept in status.maintenance.lastRequest, and
// the same value does not start another run.
func TestDefragRequested(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t)
	e.setSpec(func(s *etcdv1.EtcdClusterSpec) { s.Maintenance.Defrag.Disabled = true })
	request := func(value string) {
		t.Helper()
		c := e.cluster()
		patch := client.MergeFrom(c.DeepCopy())
		c.Annotations = map[string]string{etcdv1.DefragAnnotation: value}
		if err := e.c.Patch(context.Background(), c, patch); err != nil {
			t.Fatal(err)
		}
	}
	request("1")
	e.runMaintenance(60)
	if got := e.fake().Defragmented(); len(got) != 3 {
		t.Fatalf("defragmented %v, want every member", got)
	}
	st := e.cluster().Status.Maintenance
	if st.LastRequest != "1" || st.Defrag != nil {
		t.Errorf("status.maintenance = %+v, want lastRequest 1 and no run", st)
	}
	for _, r := range st.Members {
		if r.Reason != etcdv1.DefragForRequest {
			t.Errorf("status.maintenance.members has %+v, want reason Requested", r)
		}
	}
	if !slices.ContainsFunc(e.evs, func(ev string) bool {
		return strings.Contains(ev, "asked for with the etcd.raftsman.io/defrag annotation")
	}) {
		t.Errorf("no event names the annotation: %q", e.evs)
	}
	e.runMaintenance(1)
	e.runMaintenance(1)
	if got := e.fake().Defragmented(); len(got) != 3 {
		t.Fatalf("defragmented %v after the same request again, want the 3 of the first run", got)
	}
	request("2")
	e.runMaintenance(60)
	if got := e.fake().Defragmented(); len(got) != 6 || e.cluster().Status.Maintenance.LastRequest != "2" {
		t.Errorf("defragmented %v, lastRequest %q after a new request, want 6 and 2", got, e.cluster().Status.Maintenance.LastRequest)
	}
}
