package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// calmView is a settled 3-member cluster, Available and not Degraded,
// each database at size bytes of a 1 MiB quota.
func calmView(size int64) *view {
	v := newView(leaderVoter, healthyVoter, healthyVoter)
	v.desired = 3
	v.cluster.Name, v.cluster.Namespace, v.cluster.Generation = "c", "ns", 1
	v.cluster.Status.Conditions = []metav1.Condition{
		{Type: etcdv1.ConditionAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1},
		{Type: etcdv1.ConditionDegraded, Status: metav1.ConditionFalse, ObservedGeneration: 1},
	}
	for _, m := range v.members {
		m.Spec.Options.QuotaBackendBytes = ptr.To(int64(1 << 20))
	}
	for id, st := range v.health {
		st.DBSize = size
		v.health[id] = st
	}
	return v
}

func TestPollsPace(t *testing.T) {
	t.Parallel()
	const health, calmMax = time.Minute, 5 * time.Minute
	// step is one pass: after at (since the first), the view it saw, and
	// the requeue it must return.
	type step struct {
		at   time.Duration
		view *view
		want time.Duration
	}
	notCalm := calmView(100 << 10)
	notCalm.cluster.Status.Rollout = &etcdv1.RolloutStatus{}
	degraded := calmView(100 << 10)
	degraded.cluster.Status.Conditions[1].Status = metav1.ConditionTrue
	halfFull := calmView(600 << 10)
	alarmed := calmView(100 << 10)
	alarmed.alarmsKnown, alarmed.alarms = true, []etcd.Alarm{{MemberID: 1, Type: etcd.AlarmNoSpace}}

	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"a calm cluster is polled after 1m, 2m, 4m, then every 5m", []step{
			{0, calmView(100 << 10), health},
			{time.Minute, calmView(100 << 10), 2 * time.Minute},
			{3 * time.Minute, calmView(100 << 10), 4 * time.Minute},
			{7 * time.Minute, calmView(100 << 10), 5 * time.Minute},
			{12 * time.Minute, calmView(100 << 10), 5 * time.Minute},
		}},
		{"a pass an event brings in between keeps the poll due when it was", []step{
			{0, calmView(100 << 10), health},
			{time.Minute, calmView(100 << 10), 2 * time.Minute},
			{90 * time.Second, calmView(100 << 10), 90 * time.Second},
			{3 * time.Minute, calmView(100 << 10), 4 * time.Minute},
		}},
		{"before its first calm poll a pass between polls asks for the health interval", []step{
			{0, calmView(100 << 10), health},
			{10 * time.Second, calmView(100 << 10), health},
			{time.Minute, calmView(100 << 10), 2 * time.Minute},
		}},
		{"a database that grew brings back the health interval", []step{
			{0, calmView(100 << 10), health},
			{time.Minute, calmView(100 << 10), 2 * time.Minute},
			{3 * time.Minute, calmView(101 << 10), health},
			{4 * time.Minute, calmView(101 << 10), 2 * time.Minute},
		}},
		{"a database filling fast is polled before it could reach its quota", []step{
			{0, calmView(100 << 10), health},
			// 400 KiB in 20 s, 524 KiB left: half of it in about 13 s.
			{20 * time.Second, calmView(500 << 10), 13100 * time.Millisecond},
			// Right at the quota: no sooner than nearQuotaInterval.
			{25 * time.Second, calmView(1 << 20), nearQuotaInterval},
		}},
		{"not calm: a rollout, Degraded, half the quota, an alarm", []step{
			{0, calmView(100 << 10), health},
			{time.Minute, calmView(100 << 10), 2 * time.Minute},
			{3 * time.Minute, notCalm, health},
			{4 * time.Minute, calmView(100 << 10), 2 * time.Minute},
			{6 * time.Minute, degraded, health},
			// Grown by 500 KiB in a minute, 424 KiB left: half of it in 25.4 s.
			{7 * time.Minute, halfFull, 25440 * time.Millisecond},
			// Not grown, but at half its quota: not calm.
			{8 * time.Minute, halfFull, health},
			{9 * time.Minute, alarmed, health},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &polls{}
			start := time.Now()
			for i, st := range tt.steps {
				got := p.next(st.view, start.Add(st.at), health, calmMax)
				if d := got - st.want; d > 100*time.Millisecond || d < -100*time.Millisecond {
					t.Fatalf("pass %d at %v: next poll in %v, want %v", i, st.at, got, st.want)
				}
			}
		})
	}
}

func TestPollsOff(t *testing.T) {
	t.Parallel()
	// A calm interval at most the health interval polls at the health
	// interval whatever the cluster does.
	p := &polls{}
	start := time.Now()
	for i := range 5 {
		if got := p.next(calmView(100<<10), start.Add(time.Duration(i)*time.Minute), time.Minute, time.Minute); got != time.Minute {
			t.Fatalf("poll %d: %v, want 1m", i, got)
		}
	}
	p.forget(types.NamespacedName{Namespace: "ns", Name: "c"})
	if len(p.m) != 0 {
		t.Fatalf("forget left %d paces", len(p.m))
	}
}
