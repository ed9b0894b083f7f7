package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// Observer runs the look at a cluster's etcd (its member list, each
// member's status, its alarms) beside the reconcile workers, so that a
// tenant whose etcd hangs or cannot be reached never holds a worker the
// other tenants need: each call of a look may wait for its timeout (the
// member list up to EtcdTimeout), and hundreds of such clusters would
// otherwise fill every worker of a shard.
//
// There are two lanes, each bounded by Limit:
//   - a cluster whose last look answered is looked at in the answering
//     lane, and the pass waits up to Wait for the answer, which a healthy
//     etcd gives in milliseconds: the pass goes on as if it had asked
//     itself;
//   - a look still running after Wait gives up its answering slot (the
//     cluster is suspect from then on), so a mass hang cannot fill the
//     answering lane; its calls go on to their own timeouts;
//   - a suspect cluster (its last look found no answer) is looked at in
//     the suspect lane, and the pass does not wait at all;
//   - while Limit looks or more are overdue (past Wait and still running:
//     many tenants hung at once, a node lost), no pass waits either: each
//     newly hung cluster would otherwise hold a worker for Wait, and
//     hundreds of them, one after the other, would keep every worker busy
//     for minutes. A healthy cluster's answer then comes a moment later,
//     by the wake-up its look's end brings.
//
// A pass that finds no answer yet ends without deciding anything; the
// look's end wakes the cluster, and the pass then takes its answer. An
// answer is taken once, and only while it is fresh (answerTTL): a decision
// is never made on an old look.
type Observer struct {
	// Limit is how many looks run at once in each lane; 0 looks in the
	// pass itself (unit tests that count passes).
	Limit int
	// Wait is how long a pass waits for the look of a cluster that
	// answered last time, and how long such a look holds its slot.
	Wait time.Duration

	once    sync.Once
	lanes   [2]chan struct{}
	wake    wakeups
	mu      sync.Mutex
	looks   map[types.NamespacedName]*look
	suspect map[types.NamespacedName]bool
	// overdue counts the looks running past Wait.
	overdue int
}

// answerTTL is how long an answer may wait for the pass that takes it.
const answerTTL = 10 * time.Second

const (
	answeringLane = iota
	suspectLane
)

// look is one look at a cluster's etcd: done is closed once answer holds
// what it found.
type look struct {
	done   chan struct{}
	ended  time.Time
	answer observation
	// waited: a pass waits for the answer, so its end wakes nobody (a
	// wake-up would bring a pass that looks again for nothing).
	waited bool
}

// observation is what one look at a cluster's etcd found.
type observation struct {
	clusterID uint64
	list      []etcd.Member
	// listErr is etcd's answer to the member list when it failed.
	listErr error
	// health is each listed member's status by ID; leader the leader's ID.
	health map[uint64]etcd.Status
	leader uint64
	// panics of the status calls, for the conditions.
	panics error
	alarms []etcd.Alarm
	// alarmsErr: the alarms could not be listed (the status keeps those
	// it showed last).
	alarmsErr error
	// reachable, when the list failed: the status of each member that
	// answered on its own, by EtcdMember name (the quorum report).
	reachable map[string]etcd.Status
	// carried are the members whose status in health is a light look's
	// carried-over answer, not one of this look.
	carried map[uint64]bool
}

// lookRequest is what a look needs: the client, each active member's
// client URL by name (asked one by one when etcd has no quorum), and the
// timeouts.
type lookRequest struct {
	client        etcd.Client
	members       map[string]string
	listTimeout   time.Duration
	statusTimeout time.Duration
	etcdTimeout   time.Duration
	// only, in a light look (polls.lightLook), is the one member asked for
	// its status; carried the last answers of the others, taken when only
	// answers and etcd still lists them.
	only    uint64
	onlyURL string
	carried map[uint64]etcd.Status
	// noneReady: no active member is Ready (the kubelet's probes of etcd
	// fail, as when its node is lost): the pass does not wait for the
	// look, which is likely to hang; its end wakes the cluster.
	noneReady bool
}

func (o *Observer) init() {
	o.once.Do(func() {
		for i := range o.lanes {
			o.lanes[i] = make(chan struct{}, max(o.Limit, 1))
		}
		o.wake = newWakeups()
		o.looks, o.suspect = map[types.NamespacedName]*look{}, map[types.NamespacedName]bool{}
	})
}

// wakeSource wakes the cluster whose look ended.
func (o *Observer) wakeSource() crsource.Source {
	o.init()
	return o.wake.source()
}

// beside says whether looks run beside the workers.
func (o *Observer) beside() bool { return o != nil && o.Limit > 0 }

// observe is the answer of a look at cluster c's etcd: a fresh answer not
// yet taken, else that of a new look, waited for while the cluster
// answered last time. ok is false while no answer is there yet.
func (o *Observer) observe(ctx context.Context, c *etcdv1.EtcdCluster, req lookRequest) (observation, bool) {
	if !o.beside() {
		return req.run(ctx), true
	}
	o.init()
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	o.mu.Lock()
	l, ok := o.looks[key]
	if ok {
		select {
		case <-l.done:
			delete(o.looks, key)
			if time.Since(l.ended) <= answerTTL {
				o.mu.Unlock()
				return l.answer, true
			}
			l = nil // too old to decide on: look again
		default:
			o.mu.Unlock()
			return observation{}, false // still looking: its end wakes the cluster
		}
	}
	suspect := o.suspect[key]
	wait := !suspect && !req.noneReady && o.overdue < max(o.Limit, 1)
	l = &look{done: make(chan struct{}), waited: wait}
	o.looks[key] = l
	o.mu.Unlock()
	go o.run(key, l, suspect, req)
	if !wait {
		return observation{}, false
	}
	t := time.NewTimer(o.Wait)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	case <-ctx.Done():
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-l.done:
		if o.looks[key] == l {
			delete(o.looks, key)
		}
		return l.answer, true
	default:
		// Given up: the look's end wakes the cluster.
		l.waited = false
		return observation{}, false
	}
}

// run looks in its lane, gives up an answering slot after Wait, records
// whether etcd answered, and wakes the cluster.
func (o *Observer) run(key types.NamespacedName, l *look, suspect bool, req lookRequest) {
	lane := o.lanes[answeringLane]
	if suspect {
		lane = o.lanes[suspectLane]
	}
	lane <- struct{}{}
	var release sync.Once
	free := func() { release.Do(func() { <-lane }) }
	defer free()
	// overdue and finished are guarded by o.mu: a demotion that fires as
	// the look ends counts it overdue only if it has not ended.
	overdue, finished := false, false
	if !suspect {
		demote := time.AfterFunc(o.Wait, func() {
			observationsDemoted.Inc()
			o.mu.Lock()
			if !finished {
				o.overdue++
				overdue = true
			}
			o.mu.Unlock()
			free()
		})
		defer demote.Stop()
	}
	answer := req.run(context.Background())
	o.mu.Lock()
	finished = true
	if overdue {
		o.overdue--
	}
	l.answer, l.ended = answer, time.Now()
	if answer.listErr != nil {
		o.suspect[key] = true
		observations.WithLabelValues("no_answer").Inc()
	} else {
		delete(o.suspect, key)
		observations.WithLabelValues("answered").Inc()
	}
	close(l.done)
	waited := l.waited
	o.mu.Unlock()
	if waited {
		return // the pass waiting for it takes the answer
	}
	o.wake.wake(key)
}

// forget drops what the observer holds of a deleted cluster.
func (o *Observer) forget(key types.NamespacedName) {
	if !o.beside() {
		return
	}
	o.init()
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.looks, key)
	delete(o.suspect, key)
}

// run asks etcd for its member list, then each listed member for its
// status and etcd for its alarms; when the list fails, each active member
// for its own status instead. Every call is bounded by its timeout; a
// panic counts as no answer.
func (req lookRequest) run(ctx context.Context) (o observation) {
	defer func() {
		if p := recover(); p != nil {
			o.listErr = errors.Join(o.listErr, fmt.Errorf("panic while asking etcd: %v", p))
		}
	}()
	// A light look asks its one member first, so that the member list,
	// asked next, goes over the connection that opened (the client asks a
	// member whose connection is open first): a poll of a calm cluster
	// whose connections went idle opens one TLS connection, not two.
	var first map[uint64]etcd.Status
	if req.only != 0 && req.onlyURL != "" {
		first, o.panics = statuses(ctx, req, map[uint64]string{req.only: req.onlyURL})
	}
	tctx, cancel := context.WithTimeout(ctx, req.listTimeout)
	defer cancel()
	o.clusterID, o.list, o.listErr = req.client.MemberList(tctx)
	if o.listErr != nil {
		o.reachable, o.panics = statuses(ctx, req, req.members)
		return o
	}
	urls := map[uint64]string{}
	for _, em := range o.list {
		if len(em.ClientURLs) > 0 {
			urls[em.ID] = em.ClientURLs[0]
		}
	}
	if url, ok := urls[req.only]; ok && req.only != 0 {
		urls = map[uint64]string{req.only: url}
	}
	if first != nil && len(urls) == 1 && urls[req.only] == req.onlyURL {
		o.health = first // the member etcd lists at the URL asked
	} else {
		o.health, o.panics = statuses(ctx, req, urls)
	}
	for _, st := range o.health {
		if st.Leader != 0 && !st.IsLearner {
			o.leader = st.Leader
		}
	}
	if _, answered := o.health[req.only]; answered && len(urls) == 1 {
		o.carry(req.carried)
	}
	if noAlarm(o.list, o.health) {
		return o // every member said so: no alarm list to ask for
	}
	actx, acancel := context.WithTimeout(ctx, req.etcdTimeout)
	defer acancel()
	o.alarms, o.alarmsErr = req.client.Alarms(actx)
	return o
}

// carry adds to health the carried-over status of each member etcd lists
// that this look did not ask.
func (o *observation) carry(carried map[uint64]etcd.Status) {
	for _, em := range o.list {
		st, ok := carried[em.ID]
		if _, asked := o.health[em.ID]; !ok || asked {
			continue
		}
		if o.carried == nil {
			o.carried = map[uint64]bool{}
		}
		o.health[em.ID], o.carried[em.ID] = st, true
	}
}

// noAlarm says whether every listed member answered its status with no
// error. etcd puts each alarm of the cluster in every member's status
// errors (and "no leader" when it has none), so then there is none, and
// the alarm list need not be asked for: a poll of a quiet cluster costs
// one request less. The errors are only counted, never parsed (their
// text is protobuf's, whose spacing varies on purpose); when there is
// any, the alarm list says which.
func noAlarm(list []etcd.Member, health map[uint64]etcd.Status) bool {
	for _, em := range list {
		st, ok := health[em.ID]
		if !ok || len(st.Errors) > 0 {
			return false
		}
	}
	return len(list) > 0
}

// statuses asks each endpoint (under a key of the caller's) for its
// member's status, all at once, each bounded by the status timeout; one
// that does not answer, or whose call panics, is left out, the panic
// returned.
func statuses[K comparable](ctx context.Context, req lookRequest, urls map[K]string) (map[K]etcd.Status, error) {
	out := map[K]etcd.Status{}
	var panics error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, url := range urls {
		wg.Go(func() {
			// A panic here would end the process, not the pass (the
			// controller recovers only the reconcile's own goroutine):
			// the member counts as not answering, and the pass says why.
			defer func() {
				if p := recover(); p != nil {
					mu.Lock()
					defer mu.Unlock()
					panics = errors.Join(panics, fmt.Errorf("status of %s: panic: %v", url, p))
				}
			}()
			sctx, cancel := context.WithTimeout(ctx, req.statusTimeout)
			defer cancel()
			st, err := req.client.Status(sctx, url)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			out[key] = st
		})
	}
	wg.Wait()
	return out, panics
}
