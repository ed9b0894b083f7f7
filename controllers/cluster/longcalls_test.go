package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestLongCallsRunBesideTheWorkers: a long call returns at once while it
// runs, is not started twice under the same key, wakes its cluster when it
// ends, hands its result to every pass that asks for a while after, and
// never runs more than Limit calls at a time; a panic in it comes back as
// its error.
func TestLongCallsRunBesideTheWorkers(t *testing.T) {
	t.Parallel()
	l := &LongCalls{Limit: 2}
	l.init()
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo"}}
	release := make(chan struct{})
	var running, most, started atomic.Int32
	slow := func(v string) func(context.Context) (any, error) {
		return func(context.Context) (any, error) {
			started.Add(1)
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			running.Add(-1)
			return v, nil
		}
	}
	keys := []string{"defragment/a", "defragment/b", "defragment/c"}
	for _, k := range keys {
		if _, ended := l.call(c, k, time.Minute, slow(k)); ended {
			t.Fatalf("%s: ended at once", k)
		}
	}
	// The same key again starts nothing.
	if _, ended := l.call(c, keys[0], time.Minute, slow("again")); ended {
		t.Fatal("a call under way reported as ended")
	}
	deadline := time.Now().Add(10 * time.Second)
	for started.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := started.Load(); got != 2 {
		t.Fatalf("%d calls started while the limit is 2", got)
	}
	close(release)
	for _, k := range keys {
		select {
		case ev := <-l.wake:
			if ev.Object.Name != "demo" || ev.Object.Namespace != "ns" {
				t.Errorf("woke %s/%s", ev.Object.Namespace, ev.Object.Name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up for the calls' ends (waiting for %s)", k)
		}
	}
	if n := most.Load(); n > 2 {
		t.Errorf("%d calls ran at once, limit 2", n)
	}
	for _, k := range keys {
		res, ended := l.call(c, k, time.Minute, slow("never"))
		if !ended || res.err != nil || res.value != k {
			t.Errorf("%s: ended %v, result %+v", k, ended, res)
		}
	}
	// A pass that took a result but whose status write was lost, or that
	// read an older status, gets the same result again: nothing restarts.
	if res, ended := l.call(c, keys[0], time.Minute, slow("restarted")); !ended || res.value != keys[0] {
		t.Errorf("%s taken again: ended %v, result %+v; want the same result", keys[0], ended, res)
	}
	if got := started.Load(); got != 3 {
		t.Errorf("%d calls started, want 3 (one per key)", got)
	}

	if _, ended := l.call(c, "panics", time.Minute, func(context.Context) (any, error) { panic("boom") }); ended {
		t.Fatal("ended at once")
	}
	<-l.wake
	if res, _ := l.call(c, "panics", time.Minute, nil); res.err == nil || res.err.Error() != "panic in a long etcd call: boom" {
		t.Errorf("panic came back as %v", res.err)
	}
}
