package cluster

import (
	"fmt"
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

// readyCalmView is calmView with each member's ID recorded and its
// EtcdMember Ready, as the member controller reports a member whose Pod the
// kubelet finds ready.
func readyCalmView(size int64) *view {
	v := calmView(size)
	for i, m := range v.members {
		m.Status.MemberID = etcd.FormatID(uint64(i + 1))
		m.Spec.ClientURL = fmt.Sprintf("https://m%d:2379", i+1)
		m.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: m.Generation}}
	}
	return v
}

// lightPass is a view whose look asked only member ask and carried the
// others.
func lightPass(size int64, ask uint64) *view {
	v := readyCalmView(size)
	v.carried = map[uint64]bool{}
	for id := range v.health {
		if id != ask {
			v.carried[id] = true
		}
	}
	return v
}

func TestPollsLightLook(t *testing.T) {
	t.Parallel()
	const health, calmMax = time.Minute, 5 * time.Minute
	maxAge := lightLookMaxAge(3, calmMax)
	start := time.Now()
	// calmPolls: a first pass, then a poll that finds the cluster calm.
	calmPolls := func(p *polls) {
		p.next(readyCalmView(100<<10), start, health, calmMax)
		p.next(readyCalmView(100<<10), start.Add(time.Minute), health, calmMax)
	}
	type check struct {
		view *view
		at   time.Duration
		ok   bool
		ask  uint64
	}
	notReady := readyCalmView(100 << 10)
	notReady.members[1].Status.Conditions[0].Status = metav1.ConditionFalse
	newGen := readyCalmView(100 << 10)
	newGen.cluster.Generation = 2
	defrag := readyCalmView(100 << 10)
	defrag.cluster.Status.Maintenance = &etcdv1.MaintenanceStatus{Defrag: &etcdv1.DefragRun{}}
	one := newView(leaderVoter)
	one.cluster.Name, one.cluster.Namespace, one.cluster.Generation = "c", "ns", 1

	for _, tt := range []struct {
		name   string
		before func(p *polls)
		check  check
	}{
		{"no poll yet: every member is asked", func(*polls) {}, check{readyCalmView(100 << 10), 0, false, 0}},
		{"one pass, not yet a calm poll", func(p *polls) { p.next(readyCalmView(100<<10), start, health, calmMax) },
			check{readyCalmView(100 << 10), 30 * time.Second, false, 0}},
		{"after a calm poll: one member, the first of those answered longest ago", calmPolls, check{readyCalmView(100 << 10), 2 * time.Minute, true, 1}},
		{"the members take turns", func(p *polls) {
			calmPolls(p)
			p.next(lightPass(100<<10, 1), start.Add(3*time.Minute), health, calmMax)
		}, check{readyCalmView(100 << 10), 7 * time.Minute, true, 2}},
		{"a member not Ready: every member is asked", calmPolls, check{notReady, 2 * time.Minute, false, 0}},
		{"the spec changed: every member is asked", calmPolls, check{newGen, 2 * time.Minute, false, 0}},
		{"a defragmentation under way: every member is asked", calmPolls, check{defrag, 2 * time.Minute, false, 0}},
		{"an answer older than the bound: every member is asked", calmPolls, check{readyCalmView(100 << 10), time.Minute + maxAge + time.Second, false, 0}},
		{"a poll that found the cluster not calm: every member is asked", func(p *polls) {
			calmPolls(p)
			nc := readyCalmView(100 << 10)
			nc.cluster.Status.Rollout = &etcdv1.RolloutStatus{}
			p.next(nc, start.Add(3*time.Minute), health, calmMax)
		}, check{readyCalmView(100 << 10), 4 * time.Minute, false, 0}},
		{"a one-member cluster has nothing to save", func(p *polls) {
			p.next(one, start, health, calmMax)
			p.next(one, start.Add(time.Minute), health, calmMax)
		}, check{one, 2 * time.Minute, false, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &polls{}
			tt.before(p)
			ask, url, carried, ok := p.lightLook(tt.check.view, start.Add(tt.check.at), maxAge)
			if ok != tt.check.ok || ask != tt.check.ask {
				t.Fatalf("lightLook = %d, %v; want %d, %v", ask, ok, tt.check.ask, tt.check.ok)
			}
			if want := fmt.Sprintf("https://m%d:2379", ask); ok && url != want {
				t.Fatalf("lightLook asks member %d at %q, want its client URL %q", ask, url, want)
			}
			if _, has := carried[ask]; ok && (len(carried) != 2 || has) {
				t.Fatalf("carried %v: want the two members not asked", carried)
			}
		})
	}
}
