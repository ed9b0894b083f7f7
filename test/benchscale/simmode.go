package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
	"github.com/raftsman/raftsman/test/benchscale/etcdsim"
)

// The etcd simulator runs in processes of its own, this program again with
// -etcdsim-serve: what they hold is not the operator's. Usually one; more
// when the open-file limit, which cannot be raised, is too low for a
// listener and a connection per member in one (each cluster is wholly in
// one of them, etcdsim.ProcessOf).
type simulator struct {
	procs []*simProcess
	ctl   *etcdsim.Control
}

type simProcess struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	addr   string
	stderr lockedBuffer
	exited chan struct{}
}

// startSimulator starts the simulator's processes.
func startSimulator(verbose bool) (*simulator, error) {
	procs, err := simProcessCount()
	if err != nil {
		return nil, err
	}
	files := simFiles(members(), *hung)
	if procs > 1 {
		files = simFilesEach(procs)
	}
	sim := &simulator{}
	var addrs []string
	for range procs {
		p, err := startSimProcess(verbose, files)
		if err != nil {
			sim.stop()
			return nil, err
		}
		sim.procs = append(sim.procs, p)
		addrs = append(addrs, p.addr)
	}
	sim.ctl = etcdsim.NewControl(strings.Join(addrs, ","))
	return sim, nil
}

func (s *simulator) stop() {
	for _, p := range s.procs {
		p.stop()
	}
}

func startSimProcess(verbose bool, files uint64) (*simProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &simProcess{exited: make(chan struct{})}
	p.cmd = exec.Command(self, "-etcdsim-serve", "-etcdsim-files="+strconv.FormatUint(files, 10), "-clusters="+strconv.Itoa(*clusters), "-hung="+strconv.Itoa(*hung))
	p.cmd.Stderr = &p.stderr
	if verbose {
		p.cmd.Stderr = os.Stderr
	}
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if p.addr, err = etcdsim.ReadAddr(bufio.NewReader(out)); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w; its log:\n%s", err, p.stderr.String())
	}
	return p, nil
}

// stop ends the simulator's standard input, which stops it; one that does
// not stop is killed by its PID.
func (p *simProcess) stop() {
	_ = p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// simKubelet is what the kubelet and the etcd container do for a member
// Pod in the simulated mode: the Pod's etcd starts in the simulator with
// the Secret the Pod mounts, and the Pod turns Ready once it serves. The
// Pods of hung clusters are left not Ready, as failing probes leave them.
type simKubelet struct {
	ctl    *etcdsim.Control
	domain string
	mu     sync.Mutex
	hung   map[string]bool // namespace/cluster
}

func newSimKubelet(ctl *etcdsim.Control) *simKubelet {
	return &simKubelet{ctl: ctl, domain: cluster.DefaultOptions().ClusterDomain, hung: map[string]bool{}}
}

func clusterOf(p *corev1.Pod) string { return p.Namespace + "/" + p.Labels[etcdv1.ClusterLabel] }

func (k *simKubelet) isHung(p *corev1.Pod) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hung[clusterOf(p)]
}

func (k *simKubelet) setHung(keys []string, hung bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		if hung {
			k.hung[key] = true
		} else {
			delete(k.hung, key)
		}
	}
}

// start starts the etcd of the Pod's member in the simulator.
func (k *simKubelet) start(ctx context.Context, c client.Client, p *corev1.Pod) error {
	m := &etcdv1.EtcdMember{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Labels[etcdv1.MemberLabel]}, m); err != nil {
		return fmt.Errorf("member of Pod %s: %w", p.Name, err)
	}
	scheme := "http"
	req := etcdsim.StartRequest{
		Cluster: p.Namespace + "/" + m.Spec.ClusterName, Name: m.Name, PeerURL: m.Spec.PeerURL, ClientURL: m.Spec.ClientURL,
		Version: m.Spec.Version, New: m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew, InitialCluster: m.Spec.InitialCluster,
	}
	if t := m.Spec.TLS; t != nil {
		scheme = "https"
		sec := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: t.ServerSecretName}, sec); err != nil {
			return fmt.Errorf("serving Secret of %s: %w", m.Name, err)
		}
		req.CertPEM, req.KeyPEM = sec.Data[pki.CertKey], sec.Data[pki.KeyKey]
		if t.ClientCertAuth {
			req.ClientCAPEM = sec.Data[pki.CAKey]
		}
	}
	req.ServiceURL = fmt.Sprintf("%s://%s.%s.svc.%s:%d", scheme, resources.ClientServiceName(m.Spec.ClusterName), p.Namespace, k.domain, etcdv1.ClientPort)
	_, err := k.ctl.Start(ctx, req)
	return err
}

// handle starts the Pod's etcd and marks the Pod Ready, trying again a
// while (the serving Secret may come a moment after the Pod).
func (k *simKubelet) handle(ctx context.Context, c client.Client, p *corev1.Pod) {
	if k.isHung(p) {
		return
	}
	var err error
	for range 40 {
		if err = k.start(ctx, c, p); err == nil {
			markReady(ctx, c, p)
			return
		}
		pause(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "kubelet: Pod %s/%s not started: %v\n", p.Namespace, p.Name, err)
}

// markNotReady marks the Pod running but not Ready: its readiness probe
// fails.
func markNotReady(ctx context.Context, c client.Client, p *corev1.Pod) error {
	base := p.DeepCopy()
	now := metav1.Now()
	for i, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady || cond.Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
			p.Status.Conditions[i].Reason = "ContainersNotReady"
		}
	}
	return c.Status().Patch(ctx, p, client.MergeFrom(base))
}

// simCounts adds up the simulator's counters over some members.
type simCounts struct {
	members                    int
	accepted, open, handshakes int64
	requests                   map[string]int64
}

func aggregate(st etcdsim.Stats, keep func(cluster string) bool) simCounts {
	out := simCounts{requests: map[string]int64{}}
	for _, m := range st.Members {
		if keep != nil && !keep(m.Cluster) {
			continue
		}
		out.members++
		out.accepted += m.Accepted
		out.open += m.Open
		out.handshakes += m.Handshakes
		for k, v := range m.Requests {
			out.requests[k] += v
		}
	}
	return out
}

// minus is what happened between before and c; open stays c's.
func (c simCounts) minus(before simCounts) simCounts {
	out := simCounts{members: c.members, accepted: c.accepted - before.accepted, open: c.open, handshakes: c.handshakes - before.handshakes, requests: map[string]int64{}}
	for k, v := range c.requests {
		if d := v - before.requests[k]; d != 0 {
			out.requests[k] = d
		}
	}
	return out
}

func (c simCounts) total() int64 {
	var t int64
	for _, v := range c.requests {
		t += v
	}
	return t
}

// byMethod writes the requests by method, most first.
func (c simCounts) byMethod(scale float64) string {
	keys := make([]string, 0, len(c.requests))
	for k := range c.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.requests[keys[i]] > c.requests[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(c.requests[k])*scale))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// simStats reads the simulator's counters with a deadline of its own.
func simStats(ctx context.Context, ctl *etcdsim.Control) (etcdsim.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return ctl.Stats(ctx)
}

// scaleRun is one scale-up 1 -> 2 seen from the patch: until the new
// EtcdMember is there, and until etcd is asked to add it as a learner.
type scaleRun struct {
	cluster     string
	member, add time.Duration
	err         error
}

// scaleFigures are those of the hung phase.
type scaleFigures struct {
	hung        int
	none, with  []scaleRun
	hungFor     time.Duration
	markedIn    time.Duration // to mark the hung clusters' Pods not Ready
	hungCost    simCounts     // what the hung clusters' listeners saw meanwhile
	healthyCost simCounts     // and the others'
	healthy     int
	looks       map[string]float64 // the Observer's counters over the hang
	settled     time.Duration      // from the resume until every cluster was Available again
	unsettled   int
}

const scaleTimeout = 2 * time.Minute

// measureScales scales clusters 0..k-1 with no cluster hung, then hangs the
// last h clusters (their etcd paused, their Pods not Ready) and scales
// clusters k..2k-1; then the hung clusters resume. The kubelet runs
// throughout, for the learners' Pods.
func (r *results) measureScales(ctx context.Context, c client.WithWatch, ctl *etcdsim.Control, namespaces []string, k, h int) error {
	sf := &scaleFigures{hung: h}
	r.scale = sf
	kctx, stopKubelet := context.WithCancel(ctx)
	var kwg sync.WaitGroup
	defer func() { stopKubelet(); kwg.Wait() }()
	kub := newSimKubelet(ctl)
	kwg.Go(func() { kubelet(kctx, c, 4, kub) })

	key := func(i int) (string, string) { return namespaces[i/clustersPerNamespace], fmt.Sprintf("etcd-%04d", i) }
	scaleAll := func(from int) []scaleRun {
		var runs []scaleRun
		for i := from; i < from+k; i++ {
			ns, name := key(i)
			run := scaleOne(ctx, c, ctl, ns, name)
			if run.err != nil {
				fmt.Printf("  scale %s/%s: %v\n", ns, name, run.err)
			} else {
				fmt.Printf("  scale %s/%s: EtcdMember after %.2fs, MemberAddAsLearner after %.2fs\n", ns, name, run.member.Seconds(), run.add.Seconds())
			}
			runs = append(runs, run)
		}
		return runs
	}

	fmt.Printf("scaling %d clusters 1 -> 2, none hung\n", k)
	sf.none = scaleAll(0)

	var hung []string
	for i := r.n - h; i < r.n; i++ {
		ns, name := key(i)
		hung = append(hung, ns+"/"+name)
	}
	slices.Sort(hung)
	isHung := func(key string) bool { _, ok := slices.BinarySearch(hung, key); return ok }
	before, err := simStats(ctx, ctl)
	if err != nil {
		return err
	}
	looksBefore := observerCounters()
	hungAt := time.Now()
	if err := ctl.Hang(ctx, hung, true); err != nil {
		return err
	}
	kub.setHung(hung, true)
	if err := setPodsReady(ctx, c, hung, false); err != nil {
		return err
	}
	sf.markedIn = time.Since(hungAt)
	fmt.Printf("%d clusters hung; their Pods marked not Ready in %.1fs; scaling %d others 1 -> 2\n", h, sf.markedIn.Seconds(), k)
	sf.with = scaleAll(k)
	// The hung clusters stay hung at least -hang-for, to see what they cost.
	pause(ctx, *hangFor-time.Since(hungAt))
	after, err := simStats(ctx, ctl)
	if err != nil {
		return err
	}
	sf.hungFor = time.Since(hungAt)
	sf.hungCost = aggregate(after, isHung).minus(aggregate(before, isHung))
	notHung := func(key string) bool { return !isHung(key) }
	sf.healthyCost = aggregate(after, notHung).minus(aggregate(before, notHung))
	sf.healthy = r.n - h
	sf.looks = delta(observerCounters(), looksBefore)
	fmt.Printf("hung %.0fs: the hung clusters' listeners accepted %d connections and completed %d TLS handshakes (%d open now); observer: %v\n",
		sf.hungFor.Seconds(), sf.hungCost.accepted, sf.hungCost.handshakes, sf.hungCost.open, sf.looks)

	resumed := time.Now()
	if err := ctl.Hang(ctx, hung, false); err != nil {
		return err
	}
	kub.setHung(hung, false)
	if err := setPodsReady(ctx, c, hung, true); err != nil {
		return err
	}
	sf.unsettled = waitAvailable(ctx, c, r.n, perThousand(3*time.Minute, r.n))
	sf.settled = time.Since(resumed)
	fmt.Printf("resumed: every cluster Available again after %.1fs (%d not)\n", sf.settled.Seconds(), sf.unsettled)
	return nil
}

// scaleOne scales one cluster 1 -> 2 with a patch of spec.replicas, as a
// user would, and waits for the operator's first actions.
func scaleOne(ctx context.Context, c client.WithWatch, ctl *etcdsim.Control, ns, name string) scaleRun {
	run := scaleRun{cluster: ns + "/" + name}
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}}
	list := &etcdv1.EtcdMemberList{}
	if run.err = c.List(ctx, list, opts...); run.err != nil {
		return run
	}
	had := map[string]bool{}
	for _, m := range list.Items {
		had[m.Name] = true
	}
	w, err := c.Watch(ctx, &etcdv1.EtcdMemberList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})...)
	if err != nil {
		run.err = err
		return run
	}
	defer w.Stop()
	start := time.Now()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))
	if run.err = c.Patch(ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch); run.err != nil {
		return run
	}
	deadline := time.NewTimer(scaleTimeout)
	defer deadline.Stop()
	for run.member == 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				run.err = errors.New("the watch of its members ended")
				return run
			}
			if m, isMember := ev.Object.(*etcdv1.EtcdMember); isMember && ev.Type == watch.Added && !had[m.Name] {
				run.member = time.Since(start)
			}
		case <-deadline.C:
			run.err = fmt.Errorf("no new EtcdMember within %s", scaleTimeout)
			return run
		case <-ctx.Done():
			run.err = ctx.Err()
			return run
		}
	}
	at, err := ctl.WaitCall(ctx, run.cluster, "MemberAddAsLearner", scaleTimeout-time.Since(start))
	if err != nil {
		run.err = fmt.Errorf("no MemberAddAsLearner: %w", err)
		return run
	}
	run.add = at.Sub(start)
	return run
}

// setPodsReady marks the member Pods of the clusters Ready, or not Ready.
func setPodsReady(ctx context.Context, c client.Client, keys []string, ready bool) error {
	return eachAtOnce(ctx, len(keys), func(i int) error {
		key := keys[i]
		ns, name, _ := strings.Cut(key, "/")
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name, etcdv1.ManagedByLabel: "raftsman"}); err != nil {
			return fmt.Errorf("pods of %s: %w", key, err)
		}
		for j := range pods.Items {
			if p := &pods.Items[j]; ready {
				markReady(ctx, c, p)
			} else if err := markNotReady(ctx, c, p); err != nil {
				return fmt.Errorf("pods of %s: %w", key, err)
			}
		}
		return nil
	})
}

// waitAvailable waits until each of the n clusters is Available for its
// generation, and returns how many are not when it gives up. It watches:
// listing every cluster every few seconds would weigh on the API server
// the operator uses, the more so the larger the fleet.
func waitAvailable(ctx context.Context, c client.WithWatch, n int, limit time.Duration) int {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var mu sync.Mutex
	available := map[string]bool{}
	all, closed := make(chan struct{}), false
	var watching sync.WaitGroup
	watching.Go(func() {
		watchAll(wctx, c, &etcdv1.EtcdClusterList{}, nil, func(obj apiruntime.Object) {
			cl, ok := obj.(*etcdv1.EtcdCluster)
			if !ok {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if kube.IsTrue(cl.Status.Conditions, etcdv1.ConditionAvailable, cl.Generation) {
				available[cl.Namespace+"/"+cl.Name] = true
			} else {
				delete(available, cl.Namespace+"/"+cl.Name)
			}
			if !closed && len(available) == n {
				close(all)
				closed = true
			}
		})
	})
	select {
	case <-all:
	case <-wctx.Done():
	}
	cancel()
	watching.Wait()
	mu.Lock()
	defer mu.Unlock()
	return n - len(available)
}

// observerCounters reads the Observer's counters from the operator's
// registry: looks by result, and those demoted.
func observerCounters() map[string]float64 {
	out := countersBy("raftsman_etcd_observations_total", "result")
	out["demoted"] = countersBy("raftsman_etcd_observations_demoted_total", "")[""]
	return out
}

// reconcileCounters reads controller-runtime's reconcile counts by
// controller (every shard's controllers of a kind share one).
func reconcileCounters() map[string]float64 {
	return countersBy("controller_runtime_reconcile_total", "controller")
}

// delta is after less before, key by key, leaving out what did not change.
func delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// median of the runs that ended, and how many did not.
func medianRuns(runs []scaleRun, of func(scaleRun) time.Duration) (time.Duration, int) {
	var ds []time.Duration
	failed := 0
	for _, r := range runs {
		if r.err != nil {
			failed++
			continue
		}
		ds = append(ds, of(r))
	}
	if len(ds) == 0 {
		return 0, failed
	}
	slices.Sort(ds)
	return ds[len(ds)/2], failed
}

// newSimFactory is the operator's real etcd client factory pointed at the
// simulator.
func newSimFactory(ctl *etcdsim.Control) *etcdsim.Factory {
	return etcdsim.NewFactory(etcd.NewClientFactory(), ctl)
}
