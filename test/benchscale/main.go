// Command benchscale measures the operator at scale against a real
// kube-apiserver (envtest) with a fake etcd per cluster: how long N clusters
// take to become Available, the heap each costs, the API requests an idle
// cluster costs, and how two replicas share 4 shards. It writes its section
// of the results file and asserts nothing: machines are noisy.
//
//	go run ./test/benchscale -out bench/RESULTS.md   (make bench-scale)
//
// KUBEBUILDER_ASSETS must name the directory of kube-apiserver and etcd.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/pkg/kube"
)

var (
	out      = flag.String("out", "bench/RESULTS.md", "file whose bench-scale section is written")
	clusters = flag.Int("clusters", 1000, "number of EtcdClusters")
	idle     = flag.Duration("idle", time.Minute, "how long the converged clusters are watched for API requests")
	shards   = flag.Int("shards", 4, "number of shards, split over two replicas in the last measurement")
	timeout  = flag.Duration("timeout", 6*time.Minute, "how long the clusters may take to become Available")
	verbose  = flag.Bool("v", false, "log the controllers to standard error")
	// What a cluster costs is easier to cut with a profile at hand.
	heapProfile = flag.String("heapprofile", "", "write the operator's heap profile to this file when its heap is measured")
	// A replica re-executes this program with -replica and controller-runtime's
	// -kubeconfig; not for people.
	replica = flag.String("replica", "", "internal: run as the operator replica of this name")
)

const (
	operatorNamespace = "raftsman-system"
	// clustersPerNamespace spreads the clusters as a fleet would be.
	clustersPerNamespace = 100
	// The pass/fail lines of the targets.
	heapTarget     = 100 << 10 // bytes per cluster
	splitTolerance = 0.10      // of the clusters, around an even split
	heapTolerance  = 0.10      // of one replica's heap, around half of it
)

func main() {
	flag.Usage = usage
	flag.Parse()
	if *heapProfile != "" {
		// Finer than the default, which samples one allocation in 512 KiB.
		runtime.MemProfileRate = 4 << 10
	}
	if *verbose {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	var err error
	if *replica != "" {
		err = runReplica(*replica, *shards)
	} else {
		// SIGPIPE too: a closed standard output (bench-scale | head) would
		// otherwise end the process at once and leave the API server running.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
		err = run(ctx)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

// usage leaves out the flags a replica is started with.
func usage() {
	fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n", filepath.Base(os.Args[0]))
	flag.VisitAll(func(f *flag.Flag) {
		if f.Name != "replica" && f.Name != "kubeconfig" {
			fmt.Fprintf(flag.CommandLine.Output(), "  -%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
		}
	})
}

// results are the figures of one run.
type results struct {
	n, shards int
	cpus      int
	created   time.Duration // first create to the last
	converged time.Duration // first create to every cluster Available
	// formWrites are the operator's writes until the clusters were formed
	// and the writes that follow Available had ended, leases left out.
	formWrites int64
	heap       heap // the operator's, for the n clusters
	idle       time.Duration
	idleReads  int64 // in the idle window, lease requests left out
	idleWrites int64
	idleLease  int64
	// idleWritesByResource is raftsman_api_writes_total over the window.
	idleWritesByResource map[string]float64
	single               report
	pair                 []report
}

func run(ctx context.Context) error {
	began := time.Now()
	r := &results{n: *clusters, shards: *shards, cpus: runtime.NumCPU(), idle: *idle}
	env, cfg, err := startAPIServer()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("API server up after %.1fs\n", time.Since(began).Seconds())
	if err := r.oneReplica(ctx, cfg); err != nil {
		return err
	}

	// 4. Replicas in processes of their own, so that each heap is its own:
	// first one holding every shard, then two sharing them.
	kc, err := os.CreateTemp("", "benchscale-kubeconfig-")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(kc.Name()) }()
	if _, err := kc.Write(env.KubeConfig); err != nil {
		return err
	}
	if err := kc.Close(); err != nil {
		return err
	}
	single, err := runReplicas(ctx, kc.Name(), r.n, r.shards, "single")
	if err != nil {
		return err
	}
	r.single = single[0]
	if r.pair, err = runReplicas(ctx, kc.Name(), r.n, r.shards, "a", "b"); err != nil {
		return err
	}

	section := r.markdown(time.Now())
	fmt.Print("\n" + section)
	fmt.Printf("\nwall time %.0fs\n", time.Since(began).Seconds())
	return writeSection(*out, section)
}

// oneReplica runs the operator in this process, every shard in one
// replica, and measures 1. the time to form the clusters, 2. the heap they
// cost and 3. the API requests of idle clusters.
func (r *results) oneReplica(ctx context.Context, cfg *rest.Config) error {
	scheme, c, namespaces, err := r.prepare(ctx, cfg)
	if err != nil {
		return err
	}
	opCfg := rest.CopyConfig(cfg)
	opCfg.QPS = -1 // as ctrl.GetConfig gives the operator: no client-side rate limit
	kube.CountWrites(opCfg)
	count := &apiCounter{}
	opCfg.Wrap(count.wrap)
	baseline := heapNow()
	stopOperator, err := startOperator(opCfg, scheme, newFakeEtcd(c))
	if err != nil {
		return err
	}
	defer stopOperator()

	// 1. Time to form every cluster.
	if err := r.form(ctx, c, namespaces); err != nil {
		return err
	}
	// 2. Heap, once the writes that follow Available have ended.
	if err := r.measureHeap(ctx, count, baseline); err != nil {
		return err
	}
	// 3. Requests of idle clusters.
	return r.measureIdle(ctx, count)
}

// prepare makes the benchmark's own client (its requests are not the
// operator's) and the clusters' namespaces.
func (r *results) prepare(ctx context.Context, cfg *rest.Config) (*apiruntime.Scheme, client.WithWatch, []string, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, nil, err
	}
	namespaces, err := createNamespaces(ctx, c, r.n)
	if err != nil {
		return nil, nil, nil, err
	}
	// The client learns the kinds it uses on first use: before the
	// baseline, so that it does not count as the operator's.
	for _, l := range []client.ObjectList{&etcdv1.EtcdClusterList{}, &etcdv1.EtcdMemberList{}, &corev1.PodList{}} {
		if err := c.List(ctx, l, client.Limit(1)); err != nil {
			return nil, nil, nil, err
		}
	}
	return scheme, c, namespaces, nil
}

// measureHeap waits for the writes that follow Available to end, then
// records them and the heap the operator holds above baseline.
func (r *results) measureHeap(ctx context.Context, count *apiCounter, baseline heap) error {
	quiet := waitQuiet(ctx, count, 5*time.Second, time.Minute)
	formed := count.snapshot()
	r.formWrites = formed.writes
	fmt.Printf("writes quiet %.1fs after; to form them the operator sent %d reads, %d writes (%.1f per cluster: %v), %d lease requests\n",
		quiet.Seconds(), formed.reads, formed.writes, float64(formed.writes)/float64(r.n), perCluster(writesByResource(), r.n), formed.lease)
	r.heap = heapNow().minus(baseline)
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			return err
		}
	}
	fmt.Printf("operator heap: in use %.1f MiB (%.1f KiB per cluster), live %.1f MiB (%.1f KiB per cluster)\n",
		mib(r.heap.inuse), kib(r.heap.inuse)/float64(r.n), mib(r.heap.live), kib(r.heap.live)/float64(r.n))
	return nil
}

// measureIdle counts the operator's requests while the clusters are idle.
func (r *results) measureIdle(ctx context.Context, count *apiCounter) error {
	before, beforeByRes := count.snapshot(), writesByResource()
	pause(ctx, r.idle)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	after, afterByRes := count.snapshot(), writesByResource()
	r.idleReads, r.idleWrites, r.idleLease = after.reads-before.reads, after.writes-before.writes, after.lease-before.lease
	r.idleWritesByResource = map[string]float64{}
	for res, v := range afterByRes {
		if d := v - beforeByRes[res]; d > 0 && res != "leases" {
			r.idleWritesByResource[res] = d
		}
	}
	fmt.Printf("idle %s: %d reads, %d writes, %d lease requests; raftsman_api_writes_total rose by %v\n",
		r.idle, r.idleReads, r.idleWrites, r.idleLease, r.idleWritesByResource)
	return nil
}

// form creates the clusters while playing the kubelet, and waits until
// every one is Available.
func (r *results) form(ctx context.Context, c client.WithWatch, namespaces []string) error {
	simCtx, stopSim := context.WithCancel(ctx)
	var sim sync.WaitGroup
	// The simulator and the availability watch are not the operator's:
	// stopped, their memory goes before the heap is measured.
	defer func() { stopSim(); sim.Wait() }()
	sim.Go(func() { kubelet(simCtx, c, 4) })
	avail := newAvailability(r.n)
	sim.Go(func() { watchAll(simCtx, c, &etcdv1.EtcdClusterList{}, nil, avail.observe) })

	first := time.Now()
	if err := createClusters(ctx, c, namespaces, r.n, avail.created); err != nil {
		return err
	}
	r.created = time.Since(first)
	fmt.Printf("created %d clusters in %.1fs\n", r.n, r.created.Seconds())
	select {
	case <-avail.all:
		r.converged = avail.at.Sub(first)
	case <-time.After(*timeout):
		return fmt.Errorf("%d of %d clusters Available after %s", avail.count(), r.n, *timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	p50, p90, longest := avail.spread()
	fmt.Printf("all %d Available %.1fs after the first create; each from its create: median %.1fs, 90th percentile %.1fs, longest %.1fs\n",
		r.n, r.converged.Seconds(), p50.Seconds(), p90.Seconds(), longest.Seconds())
	return nil
}

// startAPIServer starts kube-apiserver and its etcd with the CRDs.
func startAPIServer() (*envtest.Environment, *rest.Config, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, errors.New("KUBEBUILDER_ASSETS is not set: it names the directory of kube-apiserver and etcd (make bench-scale sets it)")
	}
	crds, err := crdDir()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true}
	// envtest's default range of Service IPs, a /24, runs out after about
	// 250 clusters (each has one client Service with a cluster IP).
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.96.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start the API server: %w", err)
	}
	return env, cfg, nil
}

// crdDir is config/crd/bases of the module the working directory is in.
func crdDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "config", "crd", "bases"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

func newScheme() (*apiruntime.Scheme, error) {
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// startOperator runs one replica in this process as the operator runs:
// a root manager with the shard runner, Leases on with the default timings.
func startOperator(cfg *rest.Config, scheme *apiruntime.Scheme, fake *fakeEtcd) (stop func(), err error) {
	root, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	opts := controllers.Options{Etcd: fake, Cluster: cluster.DefaultOptions(), TLS: tls.DefaultOptions()}
	so := controllers.DefaultShardOptions()
	so.Shards, so.Namespace, so.Identity = *shards, operatorNamespace, "bench"
	if err := controllers.SetupShards(root, opts, so); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := root.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
		}
	}()
	var once sync.Once
	return func() {
		// Stopping releases the Leases for the replicas that follow.
		once.Do(func() { cancel(); <-done })
	}, nil
}

func createNamespaces(ctx context.Context, c client.Client, n int) ([]string, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return nil, err
	}
	var names []string
	for i := range (n + clustersPerNamespace - 1) / clustersPerNamespace {
		name := fmt.Sprintf("fleet-%02d", i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// createClusters creates n one-member clusters, a few at once as a fleet
// of users would.
func createClusters(ctx context.Context, c client.Client, namespaces []string, n int, created func(key string)) error {
	next := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				cl := &etcdv1.EtcdCluster{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i/clustersPerNamespace], Name: fmt.Sprintf("etcd-%04d", i)},
					Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](1)},
				}
				created(cl.Namespace + "/" + cl.Name)
				if err := c.Create(ctx, cl); err != nil {
					select {
					case errs <- fmt.Errorf("create %s: %w", cl.Name, err):
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// availability tells when every cluster is Available for its generation,
// and how long each took from its create.
type availability struct {
	mu        sync.Mutex
	n         int
	ready     map[string]bool
	createdAt map[string]time.Time
	took      []time.Duration
	all       chan struct{}
	at        time.Time
}

func newAvailability(n int) *availability {
	return &availability{n: n, ready: map[string]bool{}, createdAt: map[string]time.Time{}, all: make(chan struct{})}
}

func (a *availability) created(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.createdAt[key] = time.Now()
}

// spread gives the median, 90th percentile and longest create-to-Available.
func (a *availability) spread() (p50, p90, longest time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := slices.Sorted(slices.Values(a.took))
	if len(t) == 0 {
		return 0, 0, 0
	}
	return t[len(t)/2], t[len(t)*9/10], t[len(t)-1]
}

func (a *availability) observe(obj apiruntime.Object) {
	cl, ok := obj.(*etcdv1.EtcdCluster)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ready) == a.n {
		return
	}
	key := cl.Namespace + "/" + cl.Name
	if !a.ready[key] && kube.IsTrue(cl.Status.Conditions, etcdv1.ConditionAvailable, cl.Generation) {
		a.ready[key] = true
		a.took = append(a.took, time.Since(a.createdAt[key]))
	}
	if len(a.ready) == a.n {
		a.at = time.Now()
		close(a.all)
	}
}

func (a *availability) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ready)
}

// apiCounter counts the requests of the operator's clients. Lease requests
// are apart: the shards' Leases and the replica's presence Lease are renewed
// at a fixed rate whatever the number of clusters.
type apiCounter struct{ reads, writes, lease atomic.Int64 }

type apiCounts struct{ reads, writes, lease int64 }

func (c *apiCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch {
		case strings.Contains(req.URL.Path, "/leases"):
			c.lease.Add(1)
		case req.Method == http.MethodGet || req.Method == http.MethodHead:
			c.reads.Add(1)
		default:
			c.writes.Add(1)
		}
		return next.RoundTrip(req)
	})
}

func (c *apiCounter) snapshot() apiCounts {
	return apiCounts{reads: c.reads.Load(), writes: c.writes.Load(), lease: c.lease.Load()}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitQuiet waits until the operator has written nothing for quiet, at most
// limit, and says how long it waited.
func waitQuiet(ctx context.Context, c *apiCounter, quiet, limit time.Duration) time.Duration {
	start := time.Now()
	last, since := c.writes.Load(), time.Now()
	for time.Since(start) < limit && time.Since(since) < quiet && ctx.Err() == nil {
		pause(ctx, 250*time.Millisecond)
		if w := c.writes.Load(); w != last {
			last, since = w, time.Now()
		}
	}
	return time.Since(start)
}

// writesByResource reads the operator's raftsman_api_writes_total. An
// error of another collector leaves the families gathered usable.
func writesByResource() map[string]float64 {
	out := map[string]float64{}
	families, _ := metrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() != "raftsman_api_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// runReplicas starts replicas in processes of their own at once, waits
// until they have settled and returns their reports; it stops them at the
// end.
func runReplicas(ctx context.Context, kubeconfig string, n, shardCount int, names ...string) ([]report, error) {
	start := time.Now()
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	for _, name := range names {
		c, err := startChild(name, kubeconfig, shardCount, *verbose)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
	}
	var prev []report
	var since time.Time
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pause(ctx, time.Second)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		reps := make([]report, 0, len(children))
		for _, c := range children {
			rep, err := c.report()
			if err != nil {
				return nil, err
			}
			reps = append(reps, rep)
		}
		switch {
		case !settled(reps, n, shardCount):
			since = time.Time{}
		case since.IsZero() || !sameWork(reps, prev):
			since = time.Now()
		case time.Since(since) >= settleFor:
			for _, rep := range reps {
				fmt.Printf("replica %s (settled %.0fs after its start): shards %v, %d clusters, %d cached objects %v, heap in use %.1f MiB, live %.1f MiB\n",
					rep.Replica, time.Since(start).Seconds(), rep.Shards, rep.Clusters, rep.cachedObjects(), rep.Objects, mib(rep.Heap), mib(rep.Live))
			}
			return reps, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("replicas %v not settled after 3 minutes: %+v", names, reps)
		}
		prev = reps
	}
}

// settleFor is how long the replicas' shards and work must stay the same
// before they are measured: two lease durations, time enough for a replica
// to hand a shard over if it were to.
const settleFor = 2 * replicaLeaseDuration

// settled: every shard is held by exactly one replica, the caches hold every
// cluster, and each replica's first pass over its clusters has ended.
func settled(reps []report, n, shardCount int) bool {
	held := map[int]int{}
	clusters := 0
	for _, r := range reps {
		for _, s := range r.Shards {
			held[s]++
		}
		clusters += r.Clusters
		if r.Error != "" || r.InFlight != 0 || r.Reconciles < int64(r.Clusters) {
			return false
		}
	}
	for s := range shardCount {
		if held[s] != 1 {
			return false
		}
	}
	return clusters == n
}

// sameWork: no replica changed its shards or reconciled a cluster.
func sameWork(reps, prev []report) bool {
	if len(reps) != len(prev) {
		return false
	}
	for i := range reps {
		if reps[i].Reconciles != prev[i].Reconciles || !slices.Equal(reps[i].Shards, prev[i].Shards) {
			return false
		}
	}
	return true
}

// perCluster divides counts by resource by n, for printing.
func perCluster(byResource map[string]float64, n int) map[string]string {
	out := map[string]string{}
	for res, v := range byResource {
		out[res] = fmt.Sprintf("%.1f", v/float64(n))
	}
	return out
}

func kib(b int64) float64 { return float64(b) / (1 << 10) }
func mib(b int64) float64 { return float64(b) / (1 << 20) }

const (
	beginMarker = "<!-- bench-scale -->"
	endMarker   = "<!-- /bench-scale -->"
)

// markdown is the section of the results file.
func (r *results) markdown(now time.Time) string {
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	perMin := func(v int64) float64 { return float64(v) / r.idle.Minutes() }
	heapPerCluster := kib(r.heap.inuse) / float64(r.n)
	idleWrites := perMin(r.idleWrites) / float64(r.n)
	idleRequests := perMin(r.idleReads+r.idleWrites) / float64(r.n)

	var b strings.Builder
	fmt.Fprintf(&b, "## Scale (envtest, fake etcd)\n\n")
	fmt.Fprintf(&b, "Written by `make bench-scale` on %s; one run with N = %d clusters of one member each and %d shards; the API server, its etcd and the operator shared %d CPUs.\n\n",
		now.UTC().Format("2006-01-02 15:04 UTC"), r.n, r.shards, r.cpus)
	fmt.Fprintf(&b, "| measurement | value | target | met? |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| first create to all %d clusters Available (the creates took %.1f s) | %.1f s | | |\n", r.n, r.created.Seconds(), r.converged.Seconds())
	fmt.Fprintf(&b, "| operator API writes per cluster to form it (events included, lease renewals left out) | %.1f | | |\n", float64(r.formWrites)/float64(r.n))
	fmt.Fprintf(&b, "| operator heap in use per cluster, one replica running every shard | %.1f KiB | <= %d KiB | %s |\n",
		heapPerCluster, heapTarget>>10, yes(heapPerCluster <= kib(heapTarget)))
	// No member fails here, so none should ever be replaced; a replaced
	// member leaves its Pod behind, as envtest runs no garbage collector.
	replaced := r.single.Objects["Pod"] - r.single.Objects["EtcdMember"]
	fmt.Fprintf(&b, "| members replaced while the clusters formed, no failure injected (member Pods left without their EtcdMember) | %d | 0 | %s |\n", replaced, yes(replaced == 0))
	fmt.Fprintf(&b, "| API writes per idle cluster per minute (lease renewals left out) | %.3f | 0 | %s |\n", idleWrites, yes(r.idleWrites == 0))
	fmt.Fprintf(&b, "| API requests per idle cluster per minute, reads and writes (lease renewals left out) | %.3f | | |\n", idleRequests)
	fmt.Fprintf(&b, "| Lease requests per minute of the replica (%d shards, whatever N) | %.0f | | |\n", r.shards, perMin(r.idleLease))

	var split, heaps, objects []string
	splitOK, heapOK := len(r.pair) == 2, len(r.pair) == 2
	for _, p := range r.pair {
		share := float64(p.Clusters) / float64(r.n)
		ratio := float64(p.Heap) / float64(r.single.Heap)
		splitOK = splitOK && share >= 0.5-splitTolerance && share <= 0.5+splitTolerance
		heapOK = heapOK && ratio >= 0.5-heapTolerance && ratio <= 0.5+heapTolerance
		split = append(split, fmt.Sprintf("%s: %d (%.0f%%, shards %s)", p.Replica, p.Clusters, 100*share, shardList(p.Shards)))
		heaps = append(heaps, fmt.Sprintf("%s: %.1f MiB (%.2f)", p.Replica, mib(p.Heap), ratio))
		objects = append(objects, fmt.Sprintf("%s: %d", p.Replica, p.cachedObjects()))
	}
	fmt.Fprintf(&b, "| clusters per replica, two replicas | %s | 50%% +- %.0f%% each | %s |\n", strings.Join(split, "; "), 100*splitTolerance, yes(splitOK))
	fmt.Fprintf(&b, "| objects in the shard caches per replica (one replica alone: %d) | %s | | |\n", r.single.cachedObjects(), strings.Join(objects, "; "))
	fmt.Fprintf(&b, "| heap in use per replica, and its ratio to one replica alone (%.1f MiB) | %s | about half (%.1f-%.1f) | %s |\n",
		mib(r.single.Heap), strings.Join(heaps, "; "), 0.5-heapTolerance, 0.5+heapTolerance, yes(heapOK))

	fmt.Fprintf(&b, "\nMethod: envtest's kube-apiserver with the CRDs, and the operator's real controllers (`controllers.SetupShards` on a root manager, Leases on) talking to an in-memory fake etcd per cluster; no etcd Pod runs. ")
	fmt.Fprintf(&b, "The benchmark plays the kubelet (each member Pod is marked Ready and Running once it exists) and etcd (a cluster's fake forms from its initial members when the operator first asks for it). ")
	fmt.Fprintf(&b, "Heap is HeapInuse after a GC less the same before the managers started (live objects, HeapAlloc: %.1f KiB per cluster); it includes the fake etcd clients, which weigh less than real ones. ",
		kib(r.heap.live)/float64(r.n))
	fmt.Fprintf(&b, "Requests are counted over %s of idle Available clusters by a RoundTripper around the operator's clients (%d writes, lease renewals left out; the operator's own raftsman_api_writes_total counted %.0f). ",
		r.idle, r.idleWrites, sum(r.idleWritesByResource))
	fmt.Fprintf(&b, "For the split, the replicas run in processes of their own, started together after one replica alone was measured the same way; figures are read once every shard is held and each replica has reconciled its clusters once. A replica's heap includes its root manager, which watches the metadata of every cluster.\n")
	return b.String()
}

func shardList(s []int) string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// writeSection replaces what lies between the markers in path, or appends
// the markers and the section when they are missing; the rest of the file,
// which make bench writes, stays byte for byte.
func writeSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := string(old)
	start, end := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if start >= 0 && end > start {
		s = s[:start+len(beginMarker)] + "\n" + section + s[end:]
	} else {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "\n" + beginMarker + "\n" + section + endMarker + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
