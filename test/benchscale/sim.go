package main

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// fakeEtcd plays etcd for the operator of this process: each cluster's fake
// forms, from the cluster's initial members, the first time the operator
// asks for it. The operator asks only once a member is Ready, which a real
// etcd also needs a formed cluster for. Forming on demand, rather than from
// the simulator that marks Pods Ready, lets a replica in a child process
// reach clusters formed while another process ran the controllers, without
// a watch of its own that would weigh on the heap being measured.
type fakeEtcd struct {
	*etcd.FakeFactory
	// api reads the members past the operator's clients, so that these
	// reads are not counted as the operator's.
	api client.Reader
	mu  sync.Mutex
}

func newFakeEtcd(api client.Reader) *fakeEtcd {
	return &fakeEtcd{FakeFactory: etcd.NewFakeFactory(), api: api}
}

// Get implements etcd.Factory.
func (f *fakeEtcd) Get(ctx context.Context, key string, endpoints []string, creds etcd.Credentials) (etcd.Client, error) {
	// Keys of clusters are namespace/name; other keys (the tls controller's
	// auth/ clients) reach a cluster formed through its own key.
	if ns, name, ok := strings.Cut(key, "/"); ok && !strings.Contains(name, "/") && len(f.Cluster(key).Members()) == 0 {
		if initial := f.initialMembers(ctx, ns, name); len(initial) > 0 {
			f.mu.Lock()
			// Two reconciles may race here; only one forms the cluster.
			if fake := f.Cluster(key); len(fake.Members()) == 0 {
				fake.Bootstrap(initial...)
			}
			f.mu.Unlock()
		}
	}
	return f.FakeFactory.Get(ctx, key, endpoints, creds)
}

// initialMembers are the name, peer URL and client URL of the members that
// bootstrap the cluster, in the order of their --initial-cluster, so that
// every process gives them the same IDs (the first leads). None when a
// member of that list does not exist yet.
func (f *fakeEtcd) initialMembers(ctx context.Context, ns, name string) [][3]string {
	ms := &etcdv1.EtcdMemberList{}
	if err := f.api.List(ctx, ms, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
		return nil
	}
	byName := map[string]etcdv1.EtcdMember{}
	initial := ""
	for _, m := range ms.Items {
		if m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew {
			byName[m.Name] = m
			initial = m.Spec.InitialCluster
		}
	}
	var out [][3]string
	for pair := range strings.SplitSeq(initial, ",") {
		memberName, _, _ := strings.Cut(pair, "=")
		m, ok := byName[memberName]
		if !ok {
			return nil
		}
		out = append(out, [3]string{m.Name, m.Spec.PeerURL, m.Spec.ClientURL})
	}
	return out
}

// kubelet plays the kubelet: every member Pod becomes Ready and Running as
// soon as it exists. It keeps no state between events, so what it costs the
// heap goes when it stops.
//
// With sim, each Pod's etcd starts in the simulator before the Pod turns
// Ready, and the Pods of hung clusters stay as they are.
func kubelet(ctx context.Context, c client.WithWatch, workers int, sim *simKubelet) {
	pods := make(chan *corev1.Pod, 256)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range pods {
				if sim != nil {
					sim.handle(ctx, c, p)
					continue
				}
				markReady(ctx, c, p)
			}
		})
	}
	watchAll(ctx, c, &corev1.PodList{}, []client.ListOption{client.MatchingLabels{etcdv1.ManagedByLabel: "raftsman"}},
		func(obj runtime.Object) {
			if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp.IsZero() && !podReady(p) {
				select {
				case pods <- p:
				case <-ctx.Done():
				}
			}
		})
	close(pods)
	wg.Wait()
}

func markReady(ctx context.Context, c client.Client, p *corev1.Pod) {
	base := p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	// A Pod gone meanwhile needs nothing; a failed patch is retried when
	// the watch starts again from a fresh list.
	_ = c.Status().Patch(ctx, p, client.MergeFrom(base))
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchAll hands every object of the list, then every change, to handle
// until ctx ends. A watch that ends (the API server closes watches now and
// then) starts again from a fresh list, so nothing is missed; handle must
// therefore accept an object more than once.
func watchAll(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, handle func(runtime.Object)) {
	for ctx.Err() == nil {
		if err := c.List(ctx, list, opts...); err != nil {
			pause(ctx, time.Second)
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, obj := range items {
			handle(obj)
		}
		from := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}}
		w, err := c.Watch(ctx, list, append(opts, from)...)
		if err != nil {
			pause(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				handle(ev.Object)
			}
		}
		w.Stop()
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
