package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/shard"
)

// tracker counts reconciles per cluster and replica, and any moment two
// replicas reconcile one cluster at once.
type tracker struct {
	mu       sync.Mutex
	inFlight map[string]map[string]int // cluster -> replica -> reconciles running
	byWhom   map[string][]string       // cluster -> replicas, in the order they first reconciled it after another
	overlaps int
}

func (tr *tracker) observe(replica string) func(string) func() {
	return func(cluster string) func() {
		tr.mu.Lock()
		if tr.inFlight[cluster] == nil {
			tr.inFlight[cluster] = map[string]int{}
		}
		for other, n := range tr.inFlight[cluster] {
			if other != replica && n > 0 {
				tr.overlaps++
			}
		}
		tr.inFlight[cluster][replica]++
		if w := tr.byWhom[cluster]; len(w) == 0 || w[len(w)-1] != replica {
			tr.byWhom[cluster] = append(w, replica)
		}
		tr.mu.Unlock()
		return func() {
			tr.mu.Lock()
			tr.inFlight[cluster][replica]--
			tr.mu.Unlock()
		}
	}
}

// replica starts one operator replica: its own manager and the shard runner.
func replica(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, name string, tr *tracker) (stop func()) {
	t.Helper()
	root, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := controllers.Options{Etcd: etcd.NewFakeFactory(), TLS: tls.DefaultOptions()}
	opts.Cluster = clusterOptions()
	opts.Cluster.Observe = tr.observe(name)
	so := controllers.ShardOptions{Shards: 4, Leases: true, Namespace: "raftsman-system", Identity: name,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	if err := controllers.SetupShards(root, opts, so); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := root.Start(ctx); err != nil {
			t.Errorf("replica %s: %v", name, err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestEnvShards: two replicas with 4 shards split them two and two; when
// one stops the other takes all four within one lease duration, and clusters of every
// shard keep being reconciled, never by two replicas at once.
func TestEnvShards(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "raftsman-system"}}); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NewNamespace(t, c, "shards-", nil)
	tr := &tracker{inFlight: map[string]map[string]int{}, byWhom: map[string][]string{}}
	stopA := replica(t, cfg, scheme, "a", tr)
	replica(t, cfg, scheme, "b", tr)

	holders := func() map[string][]int {
		out := map[string][]int{}
		for i := range 4 {
			l := &coordinationv1.Lease{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "raftsman-system", Name: shard.LeaseName(i)}, l); err != nil || l.Spec.HolderIdentity == nil {
				continue
			}
			out[*l.Spec.HolderIdentity] = append(out[*l.Spec.HolderIdentity], i)
		}
		return out
	}
	testenv.Eventually(t, 30*time.Second, "every shard held", func() error {
		if h := holders(); len(h["a"])+len(h["b"]) != 4 {
			return fmt.Errorf("holders %v", h)
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "two shards each", func() error {
		if h := holders(); len(h["a"]) != 2 || len(h["b"]) != 2 {
			return fmt.Errorf("holders %v", h)
		}
		return nil
	})
	t.Logf("shards held: %v", holders())

	// Clusters in every shard: each is labelled and gets its members.
	create := func(prefix string) []string {
		var names []string
		seen := map[int]bool{}
		for i := 0; len(seen) < 4 || len(names) < 8; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			seen[shard.Of(ns, name, 4)] = true
			names = append(names, name)
			cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](1)}}
			if err := c.Create(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		return names
	}
	converged := func(names []string) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, "clusters labelled, with their members", func() error {
			for _, name := range names {
				cl := &etcdv1.EtcdCluster{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
					return err
				}
				want := shard.Label(shard.Of(ns, name, 4))
				if cl.Labels[etcdv1.ShardLabel] != want {
					return fmt.Errorf("%s: shard label %q, want %q", name, cl.Labels[etcdv1.ShardLabel], want)
				}
				ms := &etcdv1.EtcdMemberList{}
				if err := c.List(ctx, ms, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
					return err
				}
				if len(ms.Items) != 1 || ms.Items[0].Labels[etcdv1.ShardLabel] != want {
					return fmt.Errorf("%s: %d members (want 1, labelled with shard %s); conditions %v", name, len(ms.Items), want, cl.Status.Conditions)
				}
			}
			return nil
		})
	}
	before := create("early")
	converged(before)

	start := time.Now()
	stopA()
	testenv.Eventually(t, 4*time.Second, "b holding every shard within one lease duration", func() error {
		if h := holders(); len(h["b"]) != 4 {
			return fmt.Errorf("holders %v", h)
		}
		return nil
	})
	t.Logf("b took every shard %.1fs after a stopped", time.Since(start).Seconds())
	after := create("late")
	converged(after)

	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.overlaps != 0 {
		t.Errorf("%d times two replicas reconciled one cluster at once", tr.overlaps)
	}
	for _, name := range after {
		if w := tr.byWhom[ns+"/"+name]; !slices.Equal(w, []string{"b"}) {
			t.Errorf("%s reconciled by %v after a stopped, want b alone", name, w)
		}
	}
	for cluster, w := range tr.byWhom {
		if len(w) > 2 || len(w) == 2 && w[0] != "a" {
			t.Errorf("%s reconciled by %v: more than one handover, or not from a to b", cluster, w)
		}
	}
}

// clusterOptions are short intervals for the fake etcd.
func clusterOptions() cluster.Options {
	o := cluster.DefaultOptions()
	o.RetryInterval = 100 * time.Millisecond
	o.WaitInterval, o.UnhealthyInterval, o.StuckInterval = 500*time.Millisecond, time.Second, 2500*time.Millisecond
	o.HealthInterval, o.CalmHealthInterval = time.Second, time.Second
	return o
}
