// Command benchscale measures the operator at scale against a real
// kube-apiserver (envtest): how long N clusters take to become Available,
// the heap and goroutines each costs, the API and etcd requests an idle
// cluster costs, how long a scale-up takes to start while other clusters'
// etcd hangs, and how two replicas share 4 shards. It writes its section of
// the results file and asserts nothing: machines are noisy.
//
// With -etcd=sim (the default) the operator uses its real etcd client
// against etcdsim, an etcd simulator in a process of its own serving each
// member over TLS on a loopback port; with -etcd=fake, an in-memory fake
// etcd per cluster in the operator's process.
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
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
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
	"k8s.io/client-go/util/workqueue"
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
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/test/benchscale/etcdsim"
)

var (
	out      = flag.String("out", "bench/RESULTS.md", "file whose bench-scale section is written")
	clusters = flag.Int("clusters", 1000, "number of EtcdClusters")
	// A calm cluster's polls space out (1m, 2m, 4m, 8m, then every
	// --calm-health-interval, 12m): the idle window opens once they have
	// (idle-after), and lasts one calm interval, so that each cluster is
	// polled about once in it; it also outlasts the 2 minutes after which
	// the real client closes connections left unused.
	idle      = flag.Duration("idle", 12*time.Minute, "how long the converged clusters are watched for API and etcd requests")
	idleAfter = flag.Duration("idle-after", 16*time.Minute, "how long after the clusters formed and were measured the idle window opens, for their polls to reach the calm pace")
	etcdMode  = flag.String("etcd", "sim", "sim: the operator's real etcd client against the etcd simulator (a process of its own); fake: an in-memory fake etcd in the operator's process")
	hung      = flag.Int("hung", 200, "with -etcd=sim, how many clusters hang (etcd paused, member Pods not Ready) while others scale")
	scales    = flag.Int("scales", 5, "with -etcd=sim, how many clusters scale 1 -> 2 with none hung, and as many with -hung hung")
	hangFor   = flag.Duration("hang-for", time.Minute, "with -etcd=sim, how long the hung clusters hang at least")
	simProcs  = flag.Int("sim-processes", 0, "with -etcd=sim, how many processes share the simulated members (0: one, or as many as the open-file limit asks when it cannot be raised)")
	shards    = flag.Int("shards", 4, "number of shards, split over -replicas replicas in the last measurement")
	replicas  = flag.Int("replicas", 4, "number of replicas, each a process of its own, that share the shards in the last measurement (at most -shards)")
	timeout   = flag.Duration("timeout", 0, "how long the clusters may take to become Available (0: 6m per 1000 clusters, at least 6m)")
	verbose   = flag.Bool("v", false, "log the controllers to standard error")
	// What a cluster costs is easier to cut with a profile at hand.
	heapProfile = flag.String("heapprofile", "", "write the operator's heap profile to this file when its heap is measured")
	// A replica re-executes this program with -replica and controller-runtime's
	// -kubeconfig; not for people.
	replica = flag.String("replica", "", "internal: run as the operator replica of this name")
	// The simulator is this program again with -etcdsim-serve; a replica
	// reaches it at -etcdsim-addr. Not for people either.
	etcdsimServe = flag.Bool("etcdsim-serve", false, "internal: run as the etcd simulator")
	etcdsimFiles = flag.Uint64("etcdsim-files", 0, "internal: the open files the etcd simulator process needs")
	etcdsimAddr  = flag.String("etcdsim-addr", "", "internal: the etcd simulator's control addresses, for a replica")
)

const (
	operatorNamespace = "raftsman-system"
	// clustersPerNamespace spreads the clusters as a fleet would be.
	clustersPerNamespace = 100
	// The pass/fail lines of the targets.
	heapTarget = 64 << 10 // bytes per cluster
	// The split is read against an even one, each replica holding
	// 1/replicas of the clusters and of one replica's heap, give or take
	// a fifth of that (50% +- 10% with two replicas).
	splitTolerance = 0.2
	heapTolerance  = 0.2
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
	switch {
	case *etcdsimServe:
		if err = raiseFileLimit("the etcd simulator", *etcdsimFiles); err == nil {
			err = etcdsim.ServeChild()
		}
	case *replica != "":
		need := uint64(filesSpare)
		if *etcdsimAddr != "" {
			need = operatorFiles(members(), 0)
		}
		if err = raiseFileLimit("replica "+*replica, need); err == nil {
			err = runReplica(*replica, *shards)
		}
	case *etcdMode != "sim" && *etcdMode != "fake":
		err = fmt.Errorf("-etcd=%s: sim or fake", *etcdMode)
	case *replicas < 1 || *shards < *replicas:
		err = fmt.Errorf("-replicas=%d and -shards=%d: at least one replica, and a shard for each", *replicas, *shards)
	default:
		if *etcdMode == "sim" {
			if err = raiseFileLimit("the benchmark, with the operator in its process,", operatorFiles(members(), *hung)); err != nil {
				break
			}
		}
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
		if f.Name != "replica" && f.Name != "kubeconfig" && !strings.HasPrefix(f.Name, "etcdsim-") {
			fmt.Fprintf(flag.CommandLine.Output(), "  -%s\t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
		}
	})
}

// results are the figures of one run.
type results struct {
	n, shards int
	replicas  int // that share the shards in the last measurement
	cpus      int
	sim       bool          // the real etcd client against the simulator
	simProcs  int           // the simulator's processes
	created   time.Duration // first create to the last
	converged time.Duration // first create to every cluster Available
	// formWrites are the operator's writes until the clusters were formed
	// and the writes that follow Available had ended, leases left out.
	formWrites int64
	heap       heap // the operator's, for the n clusters
	goroutines int  // the operator's, for the n clusters
	// formedConns are the simulator's counters once the clusters formed;
	// idleEtcd what they rose by in the idle window; simHeap the
	// simulator's own heap then.
	formedConns simCounts
	idleEtcd    simCounts
	simHeap     int64
	scale       *scaleFigures
	idle        time.Duration
	idleAfter   time.Duration
	// idleHeap and idleGoroutines are the heap and goroutines above the
	// baseline at the end of the idle window, the fleet at its calm pace.
	idleHeap       heap
	idleGoroutines int
	// heapBaseline and baseGoroutines are the same before the operator
	// started.
	heapBaseline   heap
	baseGoroutines int
	idleReads      int64 // in the idle window, lease requests left out
	idleWrites     int64
	idleLease      int64
	// idleWritesByResource is raftsman_api_writes_total over the window.
	idleWritesByResource map[string]float64
	// idleReconciles are the reconciles by controller in the idle window,
	// idleLooks the Observer's looks at etcd by result.
	idleReconciles, idleLooks map[string]float64
	single                    report
	// split are the reports of the replicas that shared the shards.
	split []report
	// singleNote and splitNote say why replicas were measured while busy.
	singleNote, splitNote string
	// unimplemented are the calls the simulator does not answer, by method,
	// over the whole run.
	unimplemented map[string]int64
	// previous are the figures of the section this run replaces, by row.
	previous previousSection
}

func run(ctx context.Context) error {
	began := time.Now()
	r := &results{n: *clusters, shards: *shards, replicas: *replicas, cpus: runtime.NumCPU(), idle: *idle, idleAfter: *idleAfter, sim: *etcdMode == "sim"}
	r.previous = readPrevious(*out)
	var sim *simulator
	if r.sim {
		if *hung < 0 || *scales < 1 || *hung+2**scales > r.n {
			return fmt.Errorf("-hung=%d and -scales=%d need -clusters of at least %d", *hung, *scales, *hung+2**scales)
		}
		var err error
		if sim, err = startSimulator(*verbose); err != nil {
			return err
		}
		defer sim.stop()
		r.simProcs = sim.ctl.Processes()
		fmt.Printf("etcd simulator at %s\n", sim.ctl.Addr())
	}
	env, cfg, err := startAPIServer()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("API server up after %.1fs\n", time.Since(began).Seconds())
	if err := r.oneReplica(ctx, cfg, sim); err != nil {
		return err
	}
	// The operator of this process has stopped: what it held goes back to
	// the system before the replicas, the run's peak of memory, start.
	debug.FreeOSMemory()

	// 4. Replicas in processes of their own, so that each heap is its own:
	// first one holding every shard, then -replicas sharing them.
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
	simAddr := ""
	if sim != nil {
		simAddr = sim.ctl.Addr()
	}
	single, note, err := runReplicas(ctx, kc.Name(), simAddr, r.n, r.shards, "single")
	if err != nil {
		return err
	}
	r.single, r.singleNote = single[0], note
	if r.split, r.splitNote, err = runReplicas(ctx, kc.Name(), simAddr, r.n, r.shards, replicaNames(r.replicas)...); err != nil {
		return err
	}

	if sim != nil {
		st, err := simStats(ctx, sim.ctl)
		if err != nil {
			return err
		}
		r.unimplemented = st.Unimplemented
	}
	section := r.markdown(time.Now())
	fmt.Print("\n" + section)
	fmt.Printf("\nwall time %.0fs\n", time.Since(began).Seconds())
	return writeSection(*out, section)
}

// oneReplica runs the operator in this process, every shard in one
// replica, and measures 1. the time to form the clusters, 2. the heap they
// cost and 3. the API (and etcd) requests of idle clusters; with the
// simulator, 4. how long scale-ups take to start with and without hung
// clusters.
func (r *results) oneReplica(ctx context.Context, cfg *rest.Config, sim *simulator) error {
	scheme, c, namespaces, err := r.prepare(ctx, cfg)
	if err != nil {
		return err
	}
	opCfg := rest.CopyConfig(cfg)
	opCfg.QPS = -1 // as ctrl.GetConfig gives the operator: no client-side rate limit
	kube.CountWrites(opCfg)
	count := &apiCounter{}
	opCfg.Wrap(count.wrap)
	baseline, baseGoroutines := heapNow(), runtime.NumGoroutine()
	var factory etcd.Factory
	var kub *simKubelet
	if sim != nil {
		simFactory := newSimFactory(sim.ctl)
		factory, kub = simFactory, newSimKubelet(sim.ctl)
		// Once the operator has stopped (deferred below, so run before).
		defer simFactory.Close()
	} else {
		factory = newFakeEtcd(c)
	}
	stopOperator, err := startOperator(opCfg, scheme, factory)
	if err != nil {
		return err
	}
	defer stopOperator()

	// 1. Time to form every cluster.
	if err := r.form(ctx, c, namespaces, kub); err != nil {
		return err
	}
	// 2. Heap, once the writes that follow Available have ended.
	if err := r.measureHeap(ctx, count, baseline, baseGoroutines, sim); err != nil {
		return err
	}
	// 3. Requests of idle clusters.
	if err := r.measureIdle(ctx, count, sim); err != nil {
		return err
	}
	if sim == nil {
		return nil
	}
	// 4. Scale-ups, with and without hung clusters.
	return r.measureScales(ctx, c, sim.ctl, namespaces, *scales, *hung)
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
func (r *results) measureHeap(ctx context.Context, count *apiCounter, baseline heap, baseGoroutines int, sim *simulator) error {
	quiet := waitQuiet(ctx, count, 5*time.Second, perThousand(time.Minute, r.n))
	formed := count.snapshot()
	r.formWrites = formed.writes
	fmt.Printf("writes quiet %.1fs after; to form them the operator sent %d reads, %d writes (%.1f per cluster: %v), %d lease requests\n",
		quiet.Seconds(), formed.reads, formed.writes, float64(formed.writes)/float64(r.n), perCluster(writesByResource(), r.n), formed.lease)
	r.heap = heapNow().minus(baseline)
	r.goroutines = runtime.NumGoroutine() - baseGoroutines
	r.heapBaseline, r.baseGoroutines = baseline, baseGoroutines
	if sim != nil {
		st, err := simStats(ctx, sim.ctl)
		if err != nil {
			return err
		}
		r.formedConns, r.simHeap = aggregate(st, nil), st.HeapInuse
		fmt.Printf("etcd simulator: %d members, %d connections open, %d accepted, %d TLS handshakes (%d failed: %s), requests %s; unimplemented calls %v; its heap %.1f MiB, %d goroutines\n",
			r.formedConns.members, r.formedConns.open, r.formedConns.accepted, r.formedConns.handshakes, st.HandshakeErrors, st.LastHandshakeError,
			r.formedConns.byMethod(1), st.Unimplemented, mib(st.HeapInuse), st.Goroutines)
	}
	if *heapProfile != "" {
		if err := writeHeapProfile(*heapProfile); err != nil {
			return err
		}
	}
	fmt.Printf("operator heap: in use %.1f MiB (%.1f KiB per cluster), live %.1f MiB (%.1f KiB per cluster); %d goroutines (%.2f per cluster)\n",
		mib(r.heap.inuse), kib(r.heap.inuse)/float64(r.n), mib(r.heap.live), kib(r.heap.live)/float64(r.n), r.goroutines, float64(r.goroutines)/float64(r.n))
	return nil
}

// measureIdle counts the operator's requests while the clusters are idle.
func (r *results) measureIdle(ctx context.Context, count *apiCounter, sim *simulator) error {
	if r.idleAfter > 0 {
		fmt.Printf("waiting %s for the idle clusters' polls to reach their calm pace\n", r.idleAfter)
		pause(ctx, r.idleAfter)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	var etcdBefore simCounts
	if sim != nil {
		st, err := simStats(ctx, sim.ctl)
		if err != nil {
			return err
		}
		etcdBefore = aggregate(st, nil)
	}
	before, beforeByRes := count.snapshot(), writesByResource()
	reconcilesBefore, looksBefore := reconcileCounters(), observerCounters()
	pause(ctx, r.idle)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	after, afterByRes := count.snapshot(), writesByResource()
	r.idleHeap, r.idleGoroutines = heapNow().minus(r.heapBaseline), runtime.NumGoroutine()-r.baseGoroutines
	fmt.Printf("operator heap at the end of the idle window: in use %.1f MiB (%.1f KiB per cluster), live %.1f MiB (%.1f KiB per cluster); %d goroutines (%.2f per cluster)\n",
		mib(r.idleHeap.inuse), kib(r.idleHeap.inuse)/float64(r.n), mib(r.idleHeap.live), kib(r.idleHeap.live)/float64(r.n), r.idleGoroutines, float64(r.idleGoroutines)/float64(r.n))
	r.idleReconciles, r.idleLooks = delta(reconcileCounters(), reconcilesBefore), delta(observerCounters(), looksBefore)
	fmt.Printf("idle %s: reconciles by controller %v, looks at etcd %v\n", r.idle, r.idleReconciles, r.idleLooks)
	if sim != nil {
		st, err := simStats(ctx, sim.ctl)
		if err != nil {
			return err
		}
		r.idleEtcd = aggregate(st, nil).minus(etcdBefore)
		perMin := 1 / r.idle.Minutes() / float64(r.n)
		fmt.Printf("idle %s, etcd: %.3f requests per cluster per minute (%s), %d connections accepted, %d TLS handshakes, %d open\n",
			r.idle, float64(r.idleEtcd.total())*perMin, r.idleEtcd.byMethod(perMin), r.idleEtcd.accepted, r.idleEtcd.handshakes, r.idleEtcd.open)
	}
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
func (r *results) form(ctx context.Context, c client.WithWatch, namespaces []string, kub *simKubelet) error {
	simCtx, stopSim := context.WithCancel(ctx)
	var sim sync.WaitGroup
	// The simulator and the availability watch are not the operator's:
	// stopped, their memory goes before the heap is measured.
	defer func() { stopSim(); sim.Wait() }()
	sim.Go(func() { kubelet(simCtx, c, 4, kub) })
	avail := newAvailability(r.n)
	sim.Go(func() { watchAll(simCtx, c, &etcdv1.EtcdClusterList{}, nil, avail.observe) })

	first := time.Now()
	if err := createClusters(ctx, c, namespaces, r.n, avail.created); err != nil {
		return err
	}
	r.created = time.Since(first)
	fmt.Printf("created %d clusters in %.1fs\n", r.n, r.created.Seconds())
	limit := *timeout
	if limit == 0 {
		limit = perThousand(6*time.Minute, r.n)
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	// A large fleet takes a while: say how far it got now and then.
	progress := time.NewTicker(time.Minute)
	defer progress.Stop()
	for r.converged == 0 {
		select {
		case <-avail.all:
			r.converged = avail.at.Sub(first)
		case <-progress.C:
			fmt.Printf("  %d of %d Available %.0fs after the first create\n", avail.count(), r.n, time.Since(first).Seconds())
		case <-deadline.C:
			return fmt.Errorf("%d of %d clusters Available %s after the creates (-timeout)", avail.count(), r.n, limit)
		case <-ctx.Done():
			return ctx.Err()
		}
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

// newRootManager is a replica's own manager with the operator's cache
// options (controllers/run.go): the root cache's transforms (no
// managedFields) and kube.NewCache. Without them the labelers' metadata of
// every cluster kept its managedFields, about 2.6 KiB per cluster that the
// operator does not hold.
func newRootManager(cfg *rest.Config, scheme *apiruntime.Scheme, so controllers.ShardOptions) (ctrl.Manager, error) {
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:   scheme,
		Metrics:  metricsserver.Options{BindAddress: "0"},
		Cache:    controllers.RootCacheOptions(so),
		NewCache: kube.NewCache,
	})
}

// startOperator runs one replica in this process as the operator runs:
// a root manager with the shard runner, Leases on with the default timings.
func startOperator(cfg *rest.Config, scheme *apiruntime.Scheme, factory etcd.Factory) (stop func(), err error) {
	opts := controllers.Options{Etcd: factory, Cluster: cluster.DefaultOptions(), TLS: tls.DefaultOptions()}
	so := controllers.DefaultShardOptions()
	so.Shards, so.Namespace, so.Identity = *shards, operatorNamespace, "bench"
	root, err := newRootManager(cfg, scheme, so)
	if err != nil {
		return nil, err
	}
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
	return eachAtOnce(ctx, n, func(i int) error {
		cl := &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[i/clustersPerNamespace], Name: fmt.Sprintf("etcd-%04d", i)},
			Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](1)},
		}
		created(cl.Namespace + "/" + cl.Name)
		if err := c.Create(ctx, cl); err != nil {
			return fmt.Errorf("create %s: %w", cl.Name, err)
		}
		return nil
	})
}

// perThousand is d for every 1000 clusters of the run, and at least d: the
// limit of a wait whose work grows with the clusters.
func perThousand(d time.Duration, n int) time.Duration {
	return max(d, d*time.Duration(n)/1000)
}

// eachAtOnce runs fn for 0..n-1, 8 at once (client-go's
// ParallelizeUntil), and returns the first error; the others run anyway.
func eachAtOnce(ctx context.Context, n int, fn func(i int) error) error {
	var once sync.Once
	var first error
	workqueue.ParallelizeUntil(ctx, 8, n, func(i int) {
		if err := fn(i); err != nil {
			once.Do(func() { first = err })
		}
	})
	return first
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

// writesByResource reads the operator's raftsman_api_writes_total.
func writesByResource() map[string]float64 {
	return countersBy("raftsman_api_writes_total", "resource")
}

// countersBy sums the counter family name of the operator's registry by
// the value of label (all under "" when label is empty). An error of
// another collector leaves the families gathered usable.
func countersBy(name, label string) map[string]float64 {
	out := map[string]float64{}
	families, _ := metrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					key = l.GetValue()
				}
			}
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

// runReplicas starts replicas in processes of their own at once, waits
// until they have settled and returns their reports; it stops them at the
// end.
//
// Replicas whose work never stops (reconciles keep coming, as they do when
// the operator loops on its clusters) are measured anyway busyFor after
// every shard is held and every cluster reconciled once, and the note says
// so.
func runReplicas(ctx context.Context, kubeconfig, simAddr string, n, shardCount int, names ...string) ([]report, string, error) {
	start := time.Now()
	var children []*child
	defer func() {
		for _, c := range children {
			c.stop()
		}
	}()
	for _, name := range names {
		c, err := startChild(name, kubeconfig, simAddr, shardCount, *verbose)
		if err != nil {
			return nil, "", err
		}
		children = append(children, c)
	}
	var prev []report
	var since, placedAt, shardsSince time.Time
	var placedReconciles int64
	limit := perThousand(3*time.Minute, n)
	deadline := time.Now().Add(limit)
	// done measures the replicas once they are ready to be.
	done := func(how string) ([]report, error) {
		reps := make([]report, 0, len(children))
		for _, c := range children {
			rep, err := c.report("measure")
			if err != nil {
				return nil, err
			}
			fmt.Printf("replica %s (%s %.0fs after its start): shards %v, %d clusters, %d cached objects %v, heap in use %.1f MiB, live %.1f MiB, %d reconciles\n",
				rep.Replica, how, time.Since(start).Seconds(), rep.Shards, rep.Clusters, rep.cachedObjects(), rep.Objects, mib(rep.Heap), mib(rep.Live), rep.Reconciles)
			reps = append(reps, rep)
		}
		return reps, nil
	}
	for {
		pause(ctx, time.Second)
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		reps := make([]report, 0, len(children))
		for _, c := range children {
			rep, err := c.report("progress")
			if err != nil {
				return nil, "", err
			}
			reps = append(reps, rep)
		}
		ok := placed(reps, n, shardCount)
		switch {
		case !ok:
			since, placedAt, shardsSince = time.Time{}, time.Time{}, time.Time{}
		case placedAt.IsZero():
			placedAt, placedReconciles, shardsSince = time.Now(), reconciles(reps), time.Now()
		case !sameShards(reps, prev):
			shardsSince = time.Now()
		}
		switch {
		case !ok:
		case !quiet(reps) || since.IsZero() || !sameWork(reps, prev):
			since = time.Now()
		case time.Since(since) >= settleFor():
			reps, err := done("settled")
			return reps, "", err
		}
		if ok && time.Since(placedAt) >= busyFor && time.Since(shardsSince) >= settleFor() {
			rate := float64(reconciles(reps)-placedReconciles) / time.Since(placedAt).Seconds()
			reps, err := done("still busy")
			return reps, fmt.Sprintf("never quiet: %.0f reconciles per second went on after every cluster had been reconciled once", rate), err
		}
		if time.Now().After(deadline) {
			return nil, "", fmt.Errorf("replicas %v not settled after %s: %+v", names, limit, reps)
		}
		prev = reps
	}
}

// busyFor is how long replicas that hold their shards and have reconciled
// every cluster may stay busy before they are measured anyway.
const busyFor = time.Minute

func reconciles(reps []report) int64 {
	var t int64
	for _, r := range reps {
		t += r.Reconciles
	}
	return t
}

// quiet: no reconcile is running.
func quiet(reps []report) bool {
	for _, r := range reps {
		if r.InFlight != 0 {
			return false
		}
	}
	return true
}

func sameShards(reps, prev []report) bool {
	if len(reps) != len(prev) {
		return false
	}
	for i := range reps {
		if !slices.Equal(reps[i].Shards, prev[i].Shards) {
			return false
		}
	}
	return true
}

// settleFor is how long the replicas' shards and work must stay the same
// before they are measured: two lease durations, time enough for a replica
// to hand a shard over if it were to.
func settleFor() time.Duration { return 2 * leaseDuration() }

// leaseDuration is the replicas' Lease duration for this run's fleet.
func leaseDuration() time.Duration {
	d, _, _ := replicaLease(*clusters)
	return d
}

// placed: every shard is held by exactly one replica, the caches hold every
// cluster, and each replica has started a pass over each of its clusters.
func placed(reps []report, n, shardCount int) bool {
	held := map[int]int{}
	clusters := 0
	for _, r := range reps {
		for _, s := range r.Shards {
			held[s]++
		}
		clusters += r.Clusters
		if r.Error != "" || r.Reconciles < int64(r.Clusters) {
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
	mode := "fake etcd"
	if r.sim {
		mode = "etcd simulator, real etcd client"
	}
	fmt.Fprintf(&b, "## Scale (envtest, %s)\n\n", mode)
	who := "the API server, its etcd and the operator"
	if r.sim {
		who = "the API server, its etcd, the operator and the etcd simulator"
	}
	fmt.Fprintf(&b, "Written by `make bench-scale` on %s; one run with N = %d clusters of one member each and %d shards, %s sharing them in the last measurement; %s shared %d CPUs.\n\n",
		now.UTC().Format("2006-01-02 15:04 UTC"), r.n, r.shards, inWords(r.replicas)+" replicas", who, r.cpus)
	last := "last round"
	switch {
	case r.previous.written != "" && r.previous.n != 0:
		last = fmt.Sprintf("last round (%s, N = %d, %s)", r.previous.written, r.previous.n, r.previous.title)
	case r.previous.written != "":
		last = fmt.Sprintf("last round (%s, %s)", r.previous.written, r.previous.title)
	}
	fmt.Fprintf(&b, "| measurement | value | %s | target | met? |\n|---|---|---|---|---|\n", last)
	row := func(label, value, target, met string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", label, value, r.previous.value(label), target, met)
	}
	row(fmt.Sprintf("first create to all %d clusters Available (the creates took %.1f s)", r.n, r.created.Seconds()), fmt.Sprintf("%.1f s", r.converged.Seconds()), "", "")
	// What forming a cluster writes should not grow with the fleet: held to
	// the figure of a round at another N.
	formLabel := "operator API writes per cluster to form it (events included, lease renewals left out)"
	formWrites := float64(r.formWrites) / float64(r.n)
	formTarget, formMet := "", ""
	if ref, at, ok := r.previous.reference(formLabel, r.n); ok {
		formTarget, formMet = referenceTarget(ref, at), yes(math.Round(10*formWrites) <= math.Round(10*ref))
	}
	row(formLabel, fmt.Sprintf("%.1f", formWrites), formTarget, formMet)
	row("operator heap in use per cluster, one replica running every shard", fmt.Sprintf("%.1f KiB", heapPerCluster),
		fmt.Sprintf("<= %d KiB", heapTarget>>10), yes(heapPerCluster <= kib(heapTarget)))
	perCl := func(v int64) float64 { return float64(v) / float64(r.n) }
	row("operator goroutines per cluster, one replica running every shard", fmt.Sprintf("%.2f", float64(r.goroutines)/float64(r.n)), "", "")
	if r.idleHeap.inuse != 0 {
		idlePerCluster := kib(r.idleHeap.inuse) / float64(r.n)
		row(fmt.Sprintf("operator heap in use per cluster at the end of the idle window, calm clusters (live %.1f KiB; %.2f goroutines per cluster)", kib(r.idleHeap.live)/float64(r.n), float64(r.idleGoroutines)/float64(r.n)),
			fmt.Sprintf("%.1f KiB", idlePerCluster), fmt.Sprintf("<= %d KiB", heapTarget>>10), yes(idlePerCluster <= kib(heapTarget)))
	}
	if r.sim {
		row(fmt.Sprintf("open connections per cluster to its etcd once formed, as the simulator counts them (%d TLS handshakes for %d members)", r.formedConns.handshakes, r.formedConns.members),
			fmt.Sprintf("%.2f", perCl(r.formedConns.open)), "", "")
	}
	// No member fails here, so none should ever be replaced; a replaced
	// member leaves its Pod behind, as envtest runs no garbage collector.
	replaced := r.single.Objects["Pod"] - r.single.Objects["EtcdMember"]
	row("members replaced while the clusters formed, no failure injected (member Pods left without their EtcdMember)", fmt.Sprint(replaced), "0", yes(replaced == 0))
	row("API writes per idle cluster per minute (lease renewals left out)", fmt.Sprintf("%.3f", idleWrites), "0", yes(r.idleWrites == 0))
	row("API requests per idle cluster per minute, reads and writes (lease renewals left out)", fmt.Sprintf("%.3f", idleRequests), "", "")
	if r.sim {
		scale := 1 / r.idle.Minutes() / float64(r.n)
		reqs := float64(r.idleEtcd.total()) * scale
		row(fmt.Sprintf("etcd requests per idle cluster per minute (%s)", r.idleEtcd.byMethod(scale)), fmt.Sprintf("%.2f", reqs), "<= 0.5", yes(reqs <= 0.5))
		perHour := float64(r.idleEtcd.handshakes) * scale * 60
		row(fmt.Sprintf("new TLS connections (handshakes) per idle cluster per hour (connections accepted in the window: %d; open at its end: %.2f per cluster)", r.idleEtcd.accepted, perCl(r.idleEtcd.open)),
			fmt.Sprintf("%.2f", perHour), "<= 6 (0.1 per minute)", yes(perHour <= 6))
	}
	row("reconciles per idle cluster per minute, every controller (controller_runtime_reconcile_total)", fmt.Sprintf("%.2f", sum(r.idleReconciles)/r.idle.Minutes()/float64(r.n)), "", "")
	row("looks at etcd per idle cluster per minute (raftsman_etcd_observations_total)", fmt.Sprintf("%.2f", (r.idleLooks["answered"]+r.idleLooks["no_answer"])/r.idle.Minutes()/float64(r.n)), "", "")
	row(fmt.Sprintf("Lease requests per minute of the replica (%d shards, whatever N)", r.shards), fmt.Sprintf("%.0f", perMin(r.idleLease)), "", "")
	if s := r.scale; s != nil {
		k := len(s.none)
		none, noneFailed := medianRuns(s.none, func(x scaleRun) time.Duration { return x.member })
		with, withFailed := medianRuns(s.with, func(x scaleRun) time.Duration { return x.member })
		failed := func(n int) string {
			if n == 0 {
				return ""
			}
			return fmt.Sprintf("; %d did not start within %s", n, scaleTimeout)
		}
		row(fmt.Sprintf("scale-up 1 -> 2 of a healthy cluster until the operator acts (its new EtcdMember seen), median of %d, no cluster hung (longest %s%s)", k, longest(s.none, func(x scaleRun) time.Duration { return x.member }), failed(noneFailed)),
			fmt.Sprintf("%.2f s", none.Seconds()), "", "")
		row(fmt.Sprintf("the same while %d of the %d clusters hang (etcd paused, member Pods not Ready), median of %d (longest %s%s)", s.hung, r.n, len(s.with), longest(s.with, func(x scaleRun) time.Duration { return x.member }), failed(withFailed)),
			fmt.Sprintf("%.2f s", with.Seconds()), "", "")
		ratio := with.Seconds() / none.Seconds()
		row("scale-up start with hung clusters, as a multiple of the same with none", fmt.Sprintf("%.2f", ratio), "<= 2", yes(noneFailed+withFailed == 0 && ratio <= 2))
		addNone, _ := medianRuns(s.none, func(x scaleRun) time.Duration { return x.add })
		addWith, _ := medianRuns(s.with, func(x scaleRun) time.Duration { return x.add })
		row("scale-up until etcd is asked to add the learner (MemberAddAsLearner seen by the simulator), medians with none hung / with hung clusters",
			fmt.Sprintf("%.2f s / %.2f s (%.2f)", addNone.Seconds(), addWith.Seconds(), addWith.Seconds()/addNone.Seconds()), "", "")
		hungMin := s.hungFor.Minutes() * float64(s.hung)
		row(fmt.Sprintf("connections accepted per hung cluster per minute while hung (%.0f s; none completes its TLS handshake until resumed, and the paused simulator still holds %d sockets open at its end)", s.hungFor.Seconds(), s.hungCost.open),
			fmt.Sprintf("%.2f", float64(s.hungCost.accepted)/hungMin), "", "")
		row(fmt.Sprintf("etcd requests per healthy cluster per minute meanwhile (%d clusters, scale-ups included)", s.healthy),
			fmt.Sprintf("%.2f", float64(s.healthyCost.total())/s.hungFor.Minutes()/float64(s.healthy)), "", "")
	}

	// The split rows name the number of replicas in words, so that a
	// round with another number has rows of its own in the last round
	// column (rowKey turns digits into #).
	var split, heaps, objects []string
	even := 1 / float64(r.replicas)
	splitOK, heapOK := len(r.split) == r.replicas, len(r.split) == r.replicas
	var heapSum int64
	for _, p := range r.split {
		share := float64(p.Clusters) / float64(r.n)
		ratio := float64(p.Heap) / float64(r.single.Heap)
		splitOK = splitOK && math.Abs(share-even) <= even*splitTolerance
		heapOK = heapOK && math.Abs(ratio-even) <= even*heapTolerance
		heapSum += p.Heap
		split = append(split, fmt.Sprintf("%s: %d (%.0f%%, shards %s)", p.Replica, p.Clusters, 100*share, shardList(p.Shards)))
		heaps = append(heaps, fmt.Sprintf("%s: %.1f MiB (%.2f)", p.Replica, mib(p.Heap), ratio))
		objects = append(objects, fmt.Sprintf("%s: %d", p.Replica, p.cachedObjects()))
	}
	reps := inWords(r.replicas) + " replicas"
	row(fmt.Sprintf("clusters per replica, %s sharing the %d shards (its share of the clusters, and the shards it holds)", reps, r.shards), strings.Join(split, "; "),
		fmt.Sprintf("%.0f%% +- %.0f%% each", 100*even, 100*even*splitTolerance), yes(splitOK))
	row(fmt.Sprintf("objects in the shard caches per replica, %s (one replica alone: %d)", reps, r.single.cachedObjects()), strings.Join(objects, "; "), "", "")
	row(fmt.Sprintf("heap in use per replica, %s, and its ratio to one replica alone (%.1f MiB)", reps, mib(r.single.Heap)), strings.Join(heaps, "; "),
		fmt.Sprintf("about 1/%d (%.2f-%.2f) each", r.replicas, even*(1-heapTolerance), even*(1+heapTolerance)), yes(heapOK))
	row(fmt.Sprintf("heap in use of the %s together, as a multiple of one replica alone (each replica's root manager watches the metadata of every cluster)", reps),
		fmt.Sprintf("%.2f (%.1f MiB)", float64(heapSum)/float64(r.single.Heap), mib(heapSum)), "", "")

	b.WriteString("\n")
	// An operator that looks at its idle clusters far more often than its
	// health interval asks is busy: say so before the figures are read.
	if looks := (r.idleLooks["answered"] + r.idleLooks["no_answer"]) / r.idle.Minutes() / float64(r.n); looks > 2 {
		fmt.Fprintf(&b, "Note: the operator looked at each idle cluster's etcd %.1f times a minute where --health-interval (1m) asks for once, and never went quiet; the etcd request, reconcile and look rows, the heap (reconciles under way) and the scale-up times measure an operator busy with that.\n\n", looks)
	}
	if r.sim {
		r.simMethod(&b)
	} else {
		r.fakeMethod(&b)
	}
	if r.singleNote != "" || r.splitNote != "" {
		fmt.Fprintf(&b, " The replicas never went quiet, so were measured a minute after each had reconciled its clusters once: one alone %s; the %s %s.", orNone(r.singleNote), inWords(r.replicas), orNone(r.splitNote))
	}
	if r.previous.written != "" {
		fmt.Fprintf(&b, " The last round column holds the figures of the section this run replaced, row by row where a row of the same measurement was there.")
	}
	b.WriteString("\n")
	return b.String()
}

func (r *results) fakeMethod(b *strings.Builder) {
	fmt.Fprintf(b, "Method: envtest's kube-apiserver with the CRDs, and the operator's real controllers (`controllers.SetupShards` on a root manager, Leases on) talking to an in-memory fake etcd per cluster; no etcd Pod runs. ")
	fmt.Fprintf(b, "The benchmark plays the kubelet (each member Pod is marked Ready and Running once it exists) and etcd (a cluster's fake forms from its initial members when the operator first asks for it). ")
	fmt.Fprintf(b, "Heap is HeapInuse after a GC less the same before the managers started (live objects, HeapAlloc: %.1f KiB per cluster); it includes the fake etcd clients, which weigh less than real ones. ",
		kib(r.heap.live)/float64(r.n))
	fmt.Fprintf(b, "Requests are counted over %s of idle Available clusters by a RoundTripper around the operator's clients (%d writes, lease renewals left out; the operator's own raftsman_api_writes_total counted %.0f). ",
		r.idle, r.idleWrites, sum(r.idleWritesByResource))
	fmt.Fprintf(b, "For the split, %s replicas (a, b, ...) run in processes of their own, started together after one replica alone was measured the same way; figures are read once every shard is held and each replica has reconciled its clusters once. A replica's heap includes its root manager, which watches the metadata of every cluster.", inWords(r.replicas))
}

func (r *results) simMethod(b *strings.Builder) {
	fmt.Fprintf(b, "Method: envtest's kube-apiserver with the CRDs, and the operator's real controllers (`controllers.SetupShards` on a root manager, Leases on) with its real etcd client (`etcd.NewClientFactory()`: TLS gRPC, one connection per member, closed after 2 idle minutes, etcd's balanced client only for changes). ")
	where := "in a process of its own (its heap, %.1f MiB here, is not the operator's)"
	if r.simProcs > 1 {
		why := "as one process would need more open files than the hard limit here, which this process may not raise, allows"
		if *simProcs > 0 {
			why = "as -sim-processes asked"
		}
		where = "in " + inWords(r.simProcs) + " processes of its own, each cluster wholly in one, " + why + " (their heap, %.1f MiB here, is not the operator's)"
	}
	fmt.Fprintf(b, "etcd is `test/benchscale/etcdsim`, a simulator "+where+": one listener per member on 127.0.0.1, serving etcd's gRPC Cluster and Maintenance services over TLS with the member's serving certificate from the Secret the tls controller wrote, and requiring the operator's client certificate as the member's etcd would (--client-cert-auth); it answers MemberList, Status (leader itself, version of the member's spec), Alarm (none) and MemberAdd, MemberPromote and MemberRemove, and counts any other call as unimplemented (%s). ",
		mib(r.simHeap), unimplemented(r.unimplemented))
	fmt.Fprintf(b, "The member's client URL is a cluster DNS name that does not resolve here: a wrapper of the factory (`etcdsim.Factory`, in the benchmark only) rewrites each endpoint to its listener's 127.0.0.1 port, so the client checks the chain against the cluster's CA for the name 127.0.0.1 (the serving certificate covers it) instead of the member's DNS name; pkg/etcd has no hook to dial one address and check another name. ")
	fmt.Fprintf(b, "The simulator keeps no data and has no raft: no elections, no disk, no latency beyond loopback, no key-value, watch or lease traffic, no alarms, and a cluster answers as soon as its member starts. A hung cluster models a paused process: its listeners go on accepting connections and the kernel their bytes, but nothing is read on or written, so no request, keepalive ping or TLS handshake is answered until it resumes. ")
	fmt.Fprintf(b, "The benchmark plays the kubelet: a member Pod's etcd starts in the simulator with the Secret the Pod mounts, then the Pod is marked Ready and Running. ")
	fmt.Fprintf(b, "Heap is HeapInuse after a GC less the same before the managers started (live objects, HeapAlloc: %.1f KiB per cluster), and goroutines runtime.NumGoroutine less the same, once the clusters formed and the writes that follow ended; both include the real clients and their connections, and the wrapper's cache of rewritten addresses (tens of bytes per member), which a real operator does not hold. ",
		kib(r.heap.live)/float64(r.n))
	fmt.Fprintf(b, "API requests are counted over %s of idle Available clusters by a RoundTripper around the operator's clients (%d writes, lease renewals left out; the operator's own raftsman_api_writes_total counted %.0f); etcd requests (by method, once answered), accepted connections and completed TLS handshakes by the simulator per member listener over the same window. The window opens %s after the clusters were measured: the operator polls a calm cluster after 1m, 2m, 4m, 8m, then every 12m (--calm-health-interval), so that the window sees the pace a quiet fleet keeps; the reconcile and look rows say what it did. The heap is measured twice: once the clusters formed (recently formed clusters are polled every minute, so their connections are open) and at the end of the idle window (a calm cluster's connections close 2 minutes after its poll). ",
		r.idle, r.idleWrites, sum(r.idleWritesByResource), r.idleAfter)
	if s := r.scale; s != nil {
		fmt.Fprintf(b, "Scale-ups: the benchmark patches spec.replicas 1 -> 2 and times until a watch sees the new EtcdMember (the operator's first act) and until the simulator receives MemberAddAsLearner; %d clusters one after the other with none hung, then %d clusters hang (the simulator pauses them and the benchmark marks their member Pods not Ready, %.1f s for all) and %d other clusters scale the same way right after; the hung clusters stay hung %.0f s, then resume (every cluster was Available again %.0f s later, %d not). ",
			len(s.none), s.hung, s.markedIn.Seconds(), len(s.with), s.hungFor.Seconds(), s.settled.Seconds(), s.unsettled)
		if len(s.looks) > 0 {
			fmt.Fprintf(b, "Over the hang the Observer counted %.0f looks answered, %.0f without answer and %.0f demoted. ", s.looks["answered"], s.looks["no_answer"], s.looks["demoted"])
		}
	}
	fmt.Fprintf(b, "For the split, %s replicas (a, b, ...) run in processes of their own with the real client against the same simulator, started together after one replica alone was measured the same way (and the clients of the operator measured before closed), their shard Leases lasting %s; figures are read once every shard is held and each replica has reconciled its clusters once. A replica's heap includes its root manager, which watches the metadata of every cluster.", inWords(r.replicas), leaseDuration())
}

// longest of the runs that ended.
func longest(runs []scaleRun, of func(scaleRun) time.Duration) string {
	var m time.Duration
	for _, r := range runs {
		if r.err == nil {
			m = max(m, of(r))
		}
	}
	return fmt.Sprintf("%.2f s", m.Seconds())
}

// previousSection is what the section this run replaces said: its mode,
// its date, its N, and its figures and targets by row.
type previousSection struct {
	title, written  string
	n               int
	values, targets map[string]string
}

// readPrevious reads the section between the markers in path, if any.
func readPrevious(path string) previousSection {
	var p previousSection
	data, err := os.ReadFile(path)
	if err != nil {
		return p
	}
	s := string(data)
	start, end := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if start < 0 || end < start {
		return p
	}
	p.values, p.targets = map[string]string{}, map[string]string{}
	for line := range strings.SplitSeq(s[start+len(beginMarker):end], "\n") {
		switch {
		case strings.HasPrefix(line, "## Scale ("):
			p.title = strings.TrimSuffix(strings.TrimPrefix(line, "## Scale (envtest, "), ")")
		case strings.HasPrefix(line, "Written by"):
			if m := writtenOn.FindStringSubmatch(line); m != nil {
				p.written = m[1]
			}
			if m := writtenN.FindStringSubmatch(line); m != nil {
				p.n, _ = strconv.Atoi(m[1])
			}
		case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| measurement"):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) >= 2 {
				p.values[rowKey(cells[0])] = cells[1]
			}
			if len(cells) >= 4 {
				p.targets[rowKey(cells[0])] = cells[3]
			}
		}
	}
	return p
}

var (
	writtenOn = regexp.MustCompile(` on (\d{4}-\d{2}-\d{2})`)
	writtenN  = regexp.MustCompile(`N = (\d+) clusters`)
	digitRuns = regexp.MustCompile(`[0-9]+`)
	// heldTo is a target cell that referenceTarget wrote.
	heldTo = regexp.MustCompile(`^<= ([0-9.]+) \(as at N = (\d+)\)$`)
)

// rowKey is a row's measurement without its parenthesis and numbers, which
// change from run to run.
func rowKey(label string) string {
	if i := strings.Index(label, " ("); i >= 0 {
		label = label[:i]
	}
	return digitRuns.ReplaceAllString(strings.ToLower(label), "#")
}

// value is the previous figure of a row, if it had one.
func (p previousSection) value(label string) string {
	return p.values[rowKey(label)]
}

// reference is the figure a row of this run at N = n is held to, and the N
// it was measured at: the last round's figure when that round had another
// N, else the reference the last round was itself held to, so that reruns
// at one N keep the figure of the N before.
func (p previousSection) reference(label string, n int) (value float64, at int, ok bool) {
	if p.n != 0 && p.n != n {
		if v, err := strconv.ParseFloat(p.value(label), 64); err == nil {
			return v, p.n, true
		}
	}
	if m := heldTo.FindStringSubmatch(p.targets[rowKey(label)]); m != nil {
		v, verr := strconv.ParseFloat(m[1], 64)
		at, aerr := strconv.Atoi(m[2])
		if verr == nil && aerr == nil && at != n {
			return v, at, true
		}
	}
	return 0, 0, false
}

// referenceTarget is the target cell of a row held to a figure of another N.
func referenceTarget(v float64, at int) string {
	return fmt.Sprintf("<= %.1f (as at N = %d)", v, at)
}

// inWords writes small counts in words, so that a row label keeps them
// through rowKey.
func inWords(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return strconv.Itoa(n)
}

// replicaNames are the names of n replicas: a, b, ... z, then r27, r28 ...
func replicaNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		if i < 26 {
			names[i] = string(rune('a' + i))
		} else {
			names[i] = "r" + strconv.Itoa(i+1)
		}
	}
	return names
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

func unimplemented(calls map[string]int64) string {
	if len(calls) == 0 {
		return "the operator made none"
	}
	var parts []string
	for m, n := range calls {
		parts = append(parts, fmt.Sprintf("%s %d", m, n))
	}
	slices.Sort(parts)
	return "the operator made " + strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "went quiet"
	}
	return s
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
