package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// rollResult is one rolling restart: the first member the operator
// restarted, from the patch until it is back (Ready for its new generation
// and healthy in the cluster's status), until the operator counted it done
// (its update-started annotation removed: healthy and caught up), and the
// whole rollout over every member.
type rollResult struct {
	firstBack, firstDone, all float64
	member                    string
	// tlsWaits: how many times the cluster's Progressing said
	// WaitingForTLS meanwhile (a watch sees every status write).
	tlsWaits int
}

// rollingRestart changes a Pod template annotation of a settled cluster,
// which every member's Pod carries, so the operator restarts the members one
// at a time in place.
func (b *bench) rollingRestart(ns, name string, n int32) (rollResult, error) {
	var res rollResult
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return res, err
	}
	gens, err := b.memberGenerations(ns, name)
	if err != nil {
		return res, err
	}
	pods, err := b.podUIDs(ns)
	if err != nil {
		return res, err
	}
	tlsWaits, err := b.watchTLSWaits(ns, name)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := b.roll(c); err != nil {
		return res, err
	}
	var backAt, doneAt time.Time
	if _, err := b.poll(3*time.Minute, func() (bool, error) {
		members := &etcdv1.EtcdMemberList{}
		if err := b.c.List(b.ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
			return false, err
		}
		m, err := restartedFirst(members.Items, gens, &res.member)
		if m == nil || err != nil {
			return false, err
		}
		now := time.Now()
		if doneAt.IsZero() {
			if _, ok := m.Annotations[etcdv1.UpdateStartedAnnotation]; !ok {
				doneAt = now
			}
		}
		if backAt.IsZero() {
			ok, err := b.backAfterRestart(ns, name, m, pods[m.Name])
			if err != nil {
				return false, err
			}
			if ok {
				backAt = now
			}
		}
		return !backAt.IsZero() && !doneAt.IsZero(), nil
	}); err != nil {
		return res, fmt.Errorf("rolling restart of the first member %q: %w", res.member, err)
	}
	res.firstBack, res.firstDone = backAt.Sub(start).Seconds(), doneAt.Sub(start).Seconds()
	if _, err := b.poll(5*time.Minute, b.rolledOut(ns, name, n, "")); err != nil {
		return res, fmt.Errorf("rolling restart of every member: %w", err)
	}
	res.all = time.Since(start).Seconds()
	res.tlsWaits = tlsWaits()
	return res, nil
}

// roll changes a Pod template annotation of c, which every member's Pod
// carries.
func (b *bench) roll(c *etcdv1.EtcdCluster) error {
	patch := client.MergeFrom(c.DeepCopy())
	if c.Spec.PodTemplate.Metadata.Annotations == nil {
		c.Spec.PodTemplate.Metadata.Annotations = map[string]etcdv1.AnnotationValue{}
	}
	c.Spec.PodTemplate.Metadata.Annotations["bench.raftsman.io/roll"] = etcdv1.AnnotationValue(time.Now().UTC().Format(time.RFC3339Nano))
	return b.c.Patch(b.ctx, c, patch)
}

// watchTLSWaits watches the cluster and counts the times its Progressing
// condition says WaitingForTLS, until the function it returns is called.
func (b *bench) watchTLSWaits(ns, name string) (func() int, error) {
	w, err := b.c.Watch(b.ctx, &etcdv1.EtcdClusterList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	waits := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*etcdv1.EtcdCluster)
			if !ok {
				continue
			}
			if p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing); p != nil && p.Reason == etcdv1.ReasonWaitingForTLS {
				mu.Lock()
				waits++
				mu.Unlock()
			}
		}
	}()
	return func() int {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return waits
	}, nil
}

// restartedFirst is the member the operator restarted first, among
// members: *first once known, else the first whose generation rose past
// gens (recorded in *first). Nil while none has been restarted.
func restartedFirst(members []etcdv1.EtcdMember, gens map[string]int64, first *string) (*etcdv1.EtcdMember, error) {
	if *first == "" {
		for _, m := range members {
			if g, ok := gens[m.Name]; ok && m.Generation > g {
				*first = m.Name
				break
			}
		}
	}
	if *first == "" {
		return nil, nil
	}
	var m *etcdv1.EtcdMember
	for i := range members {
		if members[i].Name == *first {
			m = &members[i]
		}
	}
	if m == nil {
		return nil, fmt.Errorf("member %s is gone during its restart", *first)
	}
	return m, nil
}

// backAfterRestart says whether m runs again after its restart: a new
// Pod, its Ready condition True for its new generation, and healthy in the
// cluster's status.members.
func (b *bench) backAfterRestart(ns, name string, m *etcdv1.EtcdMember, oldPod string) (bool, error) {
	if !isTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
		return false, nil
	}
	p := &corev1.Pod{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, p); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if string(p.UID) == oldPod || !isReady(p) {
		return false, nil
	}
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return false, err
	}
	for _, ms := range c.Status.Members {
		if ms.Name == m.Name {
			return ms.Healthy, nil
		}
	}
	return false, nil
}

// rolledOut is done once the cluster has converged on its current
// generation: Available, Progressing False for that generation, every
// member a healthy voter, no rollout left, and (when version is set) every
// member on that version.
func (b *bench) rolledOut(ns, name string, n int32, version string) func() (bool, error) {
	return func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		if !isTrue(c.Status.Conditions, etcdv1.ConditionAvailable, c.Generation) ||
			!isFalse(c.Status.Conditions, etcdv1.ConditionProgressing, c.Generation) ||
			c.Status.Rollout != nil || c.Status.ReadyReplicas != n || len(c.Status.Members) != int(n) ||
			(version != "" && c.Status.Version != version) {
			return false, nil
		}
		for _, ms := range c.Status.Members {
			if !ms.Healthy || ms.Role != etcdv1.RoleVoter {
				return false, nil
			}
		}
		return true, nil
	}
}

func isTrue(cs []metav1.Condition, t string, gen int64) bool {
	c := meta.FindStatusCondition(cs, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

func isFalse(cs []metav1.Condition, t string, gen int64) bool {
	c := meta.FindStatusCondition(cs, t)
	return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == gen
}

func (b *bench) memberGenerations(ns, name string) (map[string]int64, error) {
	members := &etcdv1.EtcdMemberList{}
	if err := b.c.List(b.ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
		return nil, err
	}
	gens := map[string]int64{}
	for _, m := range members.Items {
		gens[m.Name] = m.Generation
	}
	return gens, nil
}

func (b *bench) podUIDs(ns string) (map[string]string, error) {
	pods := &corev1.PodList{}
	if err := b.c.List(b.ctx, pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	uids := map[string]string{}
	for _, p := range pods.Items {
		uids[p.Name] = string(p.UID)
	}
	return uids, nil
}

// upgradeResult is one version upgrade of every member, with what a client
// writing through the client Service saw meanwhile.
type upgradeResult struct {
	took     float64
	maxGap   float64
	writes   int
	failures int
	errs     map[string]int // failed writes by error
	// log is what happened when, from the patch on, for the run's output:
	// failed writes, the longest gap, the member the rollout was on and the
	// leader as the cluster's status showed them.
	log []event
}

// event is a line of an upgrade's log: what happened, when after the patch.
type event struct {
	at   time.Duration
	what string
}

func (e event) String() string { return fmt.Sprintf("%+7.2fs %s", e.at.Seconds(), e.what) }

// upgrade patches spec.version and times it until the cluster has
// converged on it, while a client puts a key every 20 ms through the
// cluster's client Service.
func (b *bench) upgrade(ns, name string, n int32, to string) (upgradeResult, error) {
	var res upgradeResult
	cli, err := b.etcdClient(ns, name)
	if err != nil {
		return res, err
	}
	defer func() { _ = cli.Close() }()
	w := startWriter(b.ctx, cli)
	// The writer is connected and writing before the patch.
	if _, err := b.poll(30*time.Second, func() (bool, error) { return w.acked() > 0, nil }); err != nil {
		w.stop()
		return res, fmt.Errorf("no write through the client Service before the upgrade: %w", err)
	}
	time.Sleep(time.Second)

	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		w.stop()
		return res, err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Version = to
	start := time.Now()
	if err := b.c.Patch(b.ctx, c, patch); err != nil {
		w.stop()
		return res, err
	}
	done := b.rolledOut(ns, name, n, to)
	var seen string
	_, err = b.poll(10*time.Minute, func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err == nil {
			if now := rolloutState(c); now != seen {
				res.log = append(res.log, event{time.Since(start), now})
				seen = now
			}
		}
		return done()
	})
	end := time.Now()
	time.Sleep(time.Second)
	acks, failures := w.stop()
	if err != nil {
		return res, fmt.Errorf("upgrade to %s: %w", to, err)
	}
	res.took = end.Sub(start).Seconds()
	var from time.Time
	res.maxGap, from = longestGap(acks, start, end)
	res.writes, res.failures = len(acks), len(failures)
	res.log = append(res.log, event{from.Sub(start), fmt.Sprintf("longest gap (%.2fs) starts", res.maxGap)})
	res.errs = map[string]int{}
	for _, f := range failures {
		res.errs[f.err]++
		if f.at.After(start) {
			res.log = append(res.log, event{f.at.Sub(start), "write failed: " + f.err})
		}
	}
	slices.SortStableFunc(res.log, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	return res, nil
}

// rolloutState names the member being updated and the leader.
func rolloutState(c *etcdv1.EtcdCluster) string {
	member, leader := "-", "-"
	if c.Status.Rollout != nil && c.Status.Rollout.Member != "" {
		member = c.Status.Rollout.Member
	}
	for _, ms := range c.Status.Members {
		if ms.Leader {
			leader = ms.Name
		}
	}
	return fmt.Sprintf("updating %s, leader %s", member, leader)
}

// longestGap is the longest time between two successful writes around
// [from, to], from the last one before from to the first one after to, and
// when it started.
func longestGap(acks []time.Time, from, to time.Time) (float64, time.Time) {
	var gap time.Duration
	var at time.Time
	prev := from
	for _, t := range acks {
		if t.Before(from) {
			prev = t
			continue
		}
		if t.Sub(prev) > gap {
			gap, at = t.Sub(prev), prev
		}
		prev = t
		if t.After(to) {
			return gap.Seconds(), at
		}
	}
	// No write succeeded after the end: the gap lasts until the writer stopped.
	if time.Since(prev) > gap {
		gap, at = time.Since(prev), prev
	}
	return gap.Seconds(), at
}

// writer puts a new key every 20 ms, each with a 1 s timeout, and keeps
// the times of the writes that succeeded.
type writer struct {
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	acks     []time.Time
	failures []failure
}

type failure struct {
	at  time.Time
	err string
}

func startWriter(ctx context.Context, cli *clientv3.Client) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			c, cancelPut := context.WithTimeout(ctx, time.Second)
			_, err := cli.Put(c, fmt.Sprintf("bench/%07d", i), "x")
			cancelPut()
			w.mu.Lock()
			switch {
			case err == nil:
				w.acks = append(w.acks, time.Now())
			case ctx.Err() == nil:
				w.failures = append(w.failures, failure{at: time.Now(), err: err.Error()})
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acks)
}

// stop ends the writer and returns the times of its successful writes and
// the number of writes that failed.
func (w *writer) stop() ([]time.Time, []failure) {
	w.cancel()
	<-w.done
	return w.acks, w.failures
}

// etcdClient connects to the cluster's client Service with the client
// certificate the operator keeps for users. The benchmark runs outside the
// cluster and cannot resolve its names, yet the server's certificate is
// checked for the Service's name (etcd's client takes that name from the
// endpoint), so the endpoint names the Service and the dialer connects to
// its ClusterIP.
func (b *bench) etcdClient(ns, name string) (*clientv3.Client, error) {
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return nil, err
	}
	if c.Status.TLS == nil || c.Status.TLS.ClientSecretName == "" {
		return nil, errors.New("the cluster has no client certificate in status.tls")
	}
	sec := &corev1.Secret{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: c.Status.TLS.ClientSecretName}, sec); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[pki.CAKey]) {
		return nil, fmt.Errorf("no CA certificate in secret %s", sec.Name)
	}
	cert, err := tls.X509KeyPair(sec.Data[pki.CertKey], sec.Data[pki.KeyKey])
	if err != nil {
		return nil, err
	}
	svc := &corev1.Service{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		return nil, err
	}
	ip := svc.Spec.ClusterIP
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("https://%s.%s.svc:%d", name, ns, etcdv1.ClientPort)},
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DialTimeout: 3 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
		})},
	})
}

// clearNamespace deletes the clusters and reference Pods of the namespace
// and waits until none of their Pods is left.
func (b *bench) clearNamespace(ns string) error {
	if err := b.c.DeleteAllOf(b.ctx, &etcdv1.EtcdCluster{}, client.InNamespace(ns)); err != nil {
		return err
	}
	if err := b.c.DeleteAllOf(b.ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{"app": "ref"}); err != nil {
		return err
	}
	_, err := b.poll(3*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := b.c.List(b.ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("clear namespace %s: %w", ns, err)
	}
	return nil
}
