package cluster

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
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
	if !seen || grew || !calm(v) || calmMax <= health {
		pc.calm, pc.last = 0, now
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
	pc.last = now
	return calmInterval(pc.calm, health, calmMax)
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
