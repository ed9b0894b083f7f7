package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// LongCalls runs etcd calls that may take minutes (a member's
// defragmentation) beside the reconcile workers, so that a slow tenant
// never holds a worker the other tenants need: a pass starts the call and
// returns; the call's end wakes the cluster, and the next pass takes its
// result. At most Limit run at once per shard; more wait their turn
// without holding anything. A result is kept for resultTTL after its call
// ended, taken or not: a pass that took it but whose status write was
// lost, or that read an older status from the cache, gets the same result
// again rather than starting the call again. Keys therefore name one
// attempt (a run and its attempt number), so that a new attempt starts a
// new call. An operator restart forgets calls under way, and the pass that
// finds none starts it again (a defragmentation is safe to repeat).
type LongCalls struct {
	// Limit is how many calls run at once; 0 runs them in the reconcile
	// itself (unit tests that count passes).
	Limit int

	once    sync.Once
	sem     chan struct{}
	wake    wakeups
	mu      sync.Mutex
	running map[string]bool
	done    map[string]endedCall
}

// resultTTL is how long a call's result is kept after it ended.
const resultTTL = 10 * time.Minute

// endedCall is a call's result and when it ended.
type endedCall struct {
	res   callResult
	ended time.Time
}

// callResult is how a long call ended.
type callResult struct {
	value any
	err   error
	took  time.Duration
}

func (l *LongCalls) init() {
	l.once.Do(func() {
		l.sem = make(chan struct{}, max(l.Limit, 1))
		l.wake = newWakeups()
		l.running, l.done = map[string]bool{}, map[string]endedCall{}
	})
}

// wakeSource wakes the cluster whose long call ended.
func (l *LongCalls) wakeSource() crsource.Source {
	l.init()
	return l.wake.source()
}

// busy says whether a call under key for cluster c has started and not
// yet ended.
func (l *LongCalls) busy(c *etcdv1.EtcdCluster, key string) bool {
	if l == nil || l.Limit <= 0 {
		return false
	}
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running[fullKey(c, key)]
}

func fullKey(c *etcdv1.EtcdCluster, key string) string {
	return types.NamespacedName{Namespace: c.Namespace, Name: c.Name}.String() + "/" + key
}

// call runs fn under key for cluster c: the result (what fn returned,
// its error and how long it took) when it has ended, or ok false while it
// runs, after starting it if nothing ran, waited or ended under key.
func (l *LongCalls) call(c *etcdv1.EtcdCluster, key string, timeout time.Duration, fn func(context.Context) (any, error)) (callResult, bool) {
	if l == nil || l.Limit <= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		v, err := fn(ctx)
		return callResult{value: v, err: err, took: time.Since(start)}, true
	}
	l.init()
	key = fullKey(c, key)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k, d := range l.done {
		if now.Sub(d.ended) > resultTTL {
			delete(l.done, k)
		}
	}
	if d, ok := l.done[key]; ok {
		return d.res, true
	}
	if l.running[key] {
		return callResult{}, false
	}
	l.running[key] = true
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	go func() {
		var res callResult
		defer func() {
			if p := recover(); p != nil {
				res.err = fmt.Errorf("panic in a long etcd call: %v", p)
			}
			l.mu.Lock()
			delete(l.running, key)
			l.done[key] = endedCall{res: res, ended: time.Now()}
			l.mu.Unlock()
			l.wake.wake(cluster)
		}()
		l.sem <- struct{}{}
		defer func() { <-l.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		res.value, res.err = fn(ctx)
		res.took = time.Since(start)
	}()
	return callResult{}, false
}
