package cluster

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// etcd has no watch for what the operator polls it for (database sizes,
// alarms, raft progress): Pod readiness and every change of the cluster's
// objects bring a pass by themselves, so the polls only cover what no
// event carries, and their pace follows what they find:
//   - a calm cluster (formed, every member a healthy voter, Available and
//     not Degraded, no rollout or recovery, no alarm, every database under
//     half its quota and none grown since the last poll) is polled after
//     HealthInterval, then twice that, and so on up to CalmHealthInterval:
//     1m, 2m, 4m, then every 5m with the defaults;
//   - anything else, or the first poll that finds a database grown, brings
//     back HealthInterval;
//   - a database that grows is polled again before it could reach its
//     quota at the rate it grew: half the time it would take, at least
//     nearQuotaInterval apart, so that the NOSPACE alarm of a database
//     filling fast is seen soon after it is raised.
//
// A pass that an event brought between two polls neither counts as a
// poll of a calm cluster nor resets the pace; it comes back when the next
// poll is due. Passes come from the work queue, which keeps the sooner of
// two requeues of a cluster: a poll stays due however many passes come
// between.

// pace is what the polls of one cluster found.
type pace struct {
	// calm counts the calm polls in a row; last is when the last poll that
	// counted ran.
	calm int
	last time.Time
	// sizes are the members' database sizes by etcd member ID at the last
	// pass that had them, taken at at.
	sizes map[uint64]int64
	at    time.Time
	// statuses are each member's status at its last answer, by etcd
	// member ID, answered when answered says; gen is the cluster's
	// generation at the last poll that counted (lightLook).
	statuses map[uint64]etcd.Status
	answered map[uint64]time.Time
	gen      int64
}

// polls paces the health checks of every cluster of a shard.
type polls struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*pace
}

func (p *polls) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}

// next is how soon the cluster is polled again, after a pass that saw v
// (its etcd answered) at now.
func (p *polls) next(v *view, now time.Time, health, calmMax time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]*pace{}
	}
	key := types.NamespacedName{Namespace: v.cluster.Namespace, Name: v.cluster.Name}
	pc, seen := p.m[key]
	if !seen {
		pc = &pace{}
		p.m[key] = pc
	}
	sizes := dbSizesByID(v)
	grew, soonest := growth(v, pc.sizes, sizes, now.Sub(pc.at))
	if len(sizes) > 0 {
		pc.sizes, pc.at = sizes, now
	}
	pc.remember(v, now)
	if !seen || grew || !calm(v) || calmMax <= health {
		pc.calm, pc.last, pc.gen = 0, now, 0
		if grew {
			return min(health, max(soonest, nearQuotaInterval))
		}
		return health
	}
	due := calmInterval(pc.calm, health, calmMax)
	if since := now.Sub(pc.last); since < due*9/10 {
		if pc.calm == 0 {
			// Not calm for a poll yet: every HealthInterval, as when
			// nothing is calm (the poll due sooner still comes: the
			// work queue keeps the sooner of two requeues).
			return health
		}
		return due - since // a pass an event brought: the poll stays due when it was
	}
	pc.calm++
	pc.last, pc.gen = now, v.cluster.Generation
	return calmInterval(pc.calm, health, calmMax)
}

// remember keeps the status of each member that answered this pass's look
// itself (not one a light look carried over), and forgets members etcd no
// longer lists.
func (pc *pace) remember(v *view, now time.Time) {
	if pc.statuses == nil {
		pc.statuses, pc.answered = map[uint64]etcd.Status{}, map[uint64]time.Time{}
	}
	listed := map[uint64]bool{}
	for _, em := range v.etcdList {
		listed[em.ID] = true
	}
	for id := range pc.statuses {
		if !listed[id] {
			delete(pc.statuses, id)
			delete(pc.answered, id)
		}
	}
	for id, st := range v.health {
		if listed[id] && !v.carried[id] {
			pc.statuses[id], pc.answered[id] = st, now
		}
	}
}

// lightLook says whether the look of this pass may ask a single member for
// its status instead of each: the last poll that counted found the cluster
// calm, its generation is the same, every active member is Ready for its
// own generation (the kubelet probes each every second: one that stops
// answering turns it False, and that brings a full look), and every other
// member answered a look within maxAge. It returns the member to ask, the
// one that answered longest ago, with its client URL, and the last answers
// of the others, to carry over. A cluster of n calm members is thus asked for its member list
// and one status per poll, each member in turn every n polls; etcd puts
// every alarm of the cluster in each member's status, so one status also
// says whether there is any.
func (p *polls) lightLook(v *view, now time.Time, maxAge time.Duration) (uint64, string, map[uint64]etcd.Status, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.m[types.NamespacedName{Namespace: v.cluster.Namespace, Name: v.cluster.Name}]
	active := v.active()
	if m := v.cluster.Status.Maintenance; m != nil && m.Defrag != nil {
		return 0, "", nil, false // a defragmentation reports each member's sizes before and after
	}
	if !ok || pc.calm == 0 || pc.gen != v.cluster.Generation || len(pc.statuses) != len(active) || len(active) < 2 {
		return 0, "", nil, false
	}
	var ask uint64
	var askURL string
	var oldest time.Time
	for _, m := range active {
		id, err := etcd.ParseID(m.Status.MemberID)
		at, known := pc.answered[id]
		if err != nil || !known || now.Sub(at) > maxAge || !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			return 0, "", nil, false
		}
		if ask == 0 || at.Before(oldest) {
			ask, askURL, oldest = id, m.Spec.ClientURL, at
		}
	}
	carried := make(map[uint64]etcd.Status, len(pc.statuses)-1)
	for id, st := range pc.statuses {
		if id != ask {
			carried[id] = st
		}
	}
	return ask, askURL, carried, true
}

// calmInterval is the time to the next poll after n calm polls in a row:
// health doubled n times, at most calmMax.
func calmInterval(n int, health, calmMax time.Duration) time.Duration {
	d := health
	for range n {
		if d >= calmMax {
			break
		}
		d *= 2
	}
	return min(d, calmMax)
}

// calm: nothing in the cluster asks for a look soon.
func calm(v *view) bool {
	c := v.cluster
	if !v.formed || v.quorumLost || !v.allHealthyVoters() || len(v.active()) != v.desired || len(v.undecodable) > 0 ||
		c.Status.Rollout != nil || recovering(c) || len(v.alarms) > 0 ||
		!kube.IsTrue(c.Status.Conditions, etcdv1.ConditionAvailable, c.Generation) ||
		kube.IsTrue(c.Status.Conditions, etcdv1.ConditionDegraded, c.Generation) {
		return false
	}
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		st, answered := v.health[em.ID]
		if !ok || !answered || st.DBSize*2 >= resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes) {
			return false
		}
	}
	return true
}

// growth says whether a member's database grew since the sizes before,
// taken elapsed ago, and how soon, at that rate, the first would reach
// half of what is left of its quota.
func growth(v *view, before, now map[uint64]int64, elapsed time.Duration) (bool, time.Duration) {
	grew, soonest := false, time.Duration(-1)
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		if !ok {
			continue
		}
		was, had := before[em.ID]
		size, has := now[em.ID]
		if !had || !has || size <= was {
			continue
		}
		grew = true
		left := resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes) - size
		if left <= 0 || elapsed <= 0 {
			soonest = 0
			continue
		}
		half := time.Duration(float64(elapsed) * float64(left) / float64(size-was) / 2)
		if soonest < 0 || half < soonest {
			soonest = half
		}
	}
	return grew, max(soonest, 0)
}

func dbSizesByID(v *view) map[uint64]int64 {
	out := map[uint64]int64{}
	for id, st := range v.health {
		out[id] = st.DBSize
	}
	return out
}
