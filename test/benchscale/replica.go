package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/shard"
	"github.com/raftsman/raftsman/test/benchscale/etcdsim"
)

// report is what a replica process tells about itself, one JSON line per
// line it reads on its standard input: "progress" for what the parent
// waits on, cheap enough to ask every second however many the clusters;
// "measure" for that and the heap and the objects of every kind.
type report struct {
	Replica string `json:"replica"`
	// Shards are the shards whose Leases the replica holds.
	Shards []int `json:"shards"`
	// Clusters is the number of EtcdClusters in its shard caches.
	Clusters int `json:"clusters"`
	// Objects counts the objects in its shard caches by kind (EtcdClusters
	// only, for progress).
	Objects map[string]int `json:"objects"`
	// Heap and Live are HeapInuse and HeapAlloc after a GC, less the same
	// before its managers started; measured only.
	Heap int64 `json:"heap"`
	Live int64 `json:"live"`
	// Reconciles started by its cluster controllers, and those running now:
	// the parent waits for the first pass over every cluster to end.
	Reconciles int64 `json:"reconciles"`
	InFlight   int64 `json:"inFlight"`
	// Error says why the caches could not be counted (a shard's cache
	// still syncing, or one stopping); the parent asks again.
	Error string `json:"error,omitempty"`
}

func (r report) cachedObjects() int {
	n := 0
	for _, v := range r.Objects {
		n += v
	}
	return n
}

// replicaLease is the replicas' Lease duration, renew deadline and retry
// period: short, so that a replica that dies without releasing its Leases
// holds up the next one only briefly, but longer with the fleet, whose load
// on the API server and on the replica's CPU (a larger heap to collect) may
// delay a renewal: 4 s up to 2500 clusters, 16 s (about the operator's own
// timings) at 10,000.
func replicaLease(n int) (duration, renewDeadline, retryPeriod time.Duration) {
	d := max(4*time.Second, 4*time.Second*time.Duration(n)/2500)
	return d, d * 3 / 4, d / 8
}

// runReplica is the child process: one operator replica, a root manager and
// the shard runner with Leases, on the API server of -kubeconfig. It answers
// each line of its standard input with a report and stops at its end, so it
// never outlives the parent.
func runReplica(name string, shards int) error {
	// The operator's own way to its config, from -kubeconfig.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	api, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	baseline := heapNow()

	so := controllers.ShardOptions{Shards: shards, Leases: true, Namespace: operatorNamespace, Identity: name}
	so.LeaseDuration, so.RenewDeadline, so.RetryPeriod = replicaLease(*clusters)
	root, err := newRootManager(cfg, scheme, so)
	if err != nil {
		return err
	}
	var started, inFlight atomic.Int64
	// With the simulator, the real client as the replica in this process
	// had; else a fake etcd.
	var factory etcd.Factory = newFakeEtcd(api)
	if *etcdsimAddr != "" {
		factory = newSimFactory(etcdsim.NewControl(*etcdsimAddr))
	}
	opts := controllers.Options{Etcd: factory, Cluster: cluster.DefaultOptions(), TLS: tls.DefaultOptions()}
	opts.Cluster.Observe = func(string) func() {
		started.Add(1)
		inFlight.Add(1)
		return func() { inFlight.Add(-1) }
	}
	if err := controllers.SetupShards(root, opts, so); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.Start(ctx) }()

	if err := answerReports(ctx, name, baseline, &started, &inFlight); err != nil {
		return err
	}
	// Stopping releases the Leases, so the next replicas take them at once.
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(so.LeaseDuration):
		return errors.New("the managers did not stop in time")
	}
}

// answerReports answers each line of standard input with a report of the
// replica, until the input ends. Only a measure collects garbage (a
// whole-heap GC each second would hold back the replica being waited for)
// and counts every kind.
func answerReports(ctx context.Context, name string, baseline heap, started, inFlight *atomic.Int64) error {
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		measure := in.Text() == "measure"
		r := report{Replica: name, Reconciles: started.Load(), InFlight: inFlight.Load()}
		if measure {
			h := heapNow().minus(baseline)
			r.Heap, r.Live = h.inuse, h.live
		}
		var err error
		if r.Shards, err = heldShards(); err != nil {
			return err
		}
		if r.Objects, err = cachedObjects(ctx, measure); err != nil {
			r.Error = err.Error()
		}
		r.Clusters = r.Objects["EtcdCluster"]
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// heap is what the heap holds once garbage is collected: inuse counts the
// spans in use (runtime.MemStats.HeapInuse), live the objects in them
// (HeapAlloc); spans partly empty make the first larger.
type heap struct {
	inuse, live int64
}

func heapNow() heap {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return heap{inuse: int64(m.HeapInuse), live: int64(m.HeapAlloc)}
}

func (h heap) minus(base heap) heap {
	return heap{inuse: h.inuse - base.inuse, live: h.live - base.live}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// heldShards reads the runner's raftsman_shard_leader gauge, through a
// registry of its own: gathering the operator's registry would also compute
// every cluster's metrics, and fail while a shard's cache syncs.
func heldShards() ([]int, error) {
	reg := prometheus.NewRegistry()
	for _, c := range shard.Collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	var held []int
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() != 1 {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "shard" {
					i, err := strconv.Atoi(l.GetValue())
					if err != nil {
						return nil, err
					}
					held = append(held, i)
				}
			}
		}
	}
	slices.Sort(held)
	return held, nil
}

// cachedObjects counts, by kind, the objects in the caches of the shards
// this process runs: every kind, or EtcdClusters only. The lists share the
// cache's objects rather than copy them.
func cachedObjects(ctx context.Context, every bool) (map[string]int, error) {
	lists := map[string]func() client.ObjectList{
		"EtcdCluster":           func() client.ObjectList { return &etcdv1.EtcdClusterList{} },
		"EtcdMember":            func() client.ObjectList { return &etcdv1.EtcdMemberList{} },
		"Pod":                   func() client.ObjectList { return &corev1.PodList{} },
		"PersistentVolumeClaim": func() client.ObjectList { return &corev1.PersistentVolumeClaimList{} },
		"Service":               func() client.ObjectList { return &corev1.ServiceList{} },
		"Secret": func() client.ObjectList {
			// The shard caches keep Secrets' metadata only (pkg/kube).
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			return l
		},
		"PodDisruptionBudget": func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} },
	}
	// A cache that is not synced yet makes List wait; one of a shard that
	// stopped meanwhile would make it wait for ever.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := map[string]int{}
	for _, cache := range kube.Caches.All() {
		for kind, newList := range lists {
			if !every && kind != "EtcdCluster" {
				continue
			}
			l := newList()
			if err := cache.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
				return nil, fmt.Errorf("list %s from a shard cache: %w", kind, err)
			}
			out[kind] += meta.LenList(l)
		}
	}
	return out, nil
}

// child is a replica process seen from the parent.
type child struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr lockedBuffer
	exited chan struct{}
}

// startChild runs this program again as the replica name.
func startChild(name, kubeconfig, simAddr string, shards int, verbose bool) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{name: name, exited: make(chan struct{})}
	c.cmd = exec.Command(self, "-replica="+name, "-kubeconfig="+kubeconfig, "-shards="+strconv.Itoa(shards), "-v="+strconv.FormatBool(verbose), "-etcdsim-addr="+simAddr,
		"-clusters="+strconv.Itoa(*clusters), "-scales="+strconv.Itoa(*scales))
	// Kept to tell why a replica failed; shown as it goes with -v.
	c.cmd.Stderr = &c.stderr
	if verbose {
		c.cmd.Stderr = os.Stderr
	}
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.out = bufio.NewScanner(out)
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// report asks the replica for a report: "progress" or "measure".
func (c *child) report(kind string) (report, error) {
	type answer struct {
		r   report
		err error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		switch _, err := io.WriteString(c.in, kind+"\n"); {
		case err != nil:
			a.err = err
		case !c.out.Scan():
			a.err = fmt.Errorf("no answer (%v)", c.out.Err())
		default:
			a.err = json.Unmarshal(c.out.Bytes(), &a.r)
		}
		got <- a
	}()
	select {
	case a := <-got:
		if a.err != nil {
			return report{}, fmt.Errorf("replica %s: %w; its log:\n%s", c.name, a.err, c.log())
		}
		return a.r, nil
	case <-time.After(time.Minute):
		return report{}, fmt.Errorf("replica %s does not answer; its log:\n%s", c.name, c.log())
	}
}

// log is the end of what the replica wrote to its standard error.
func (c *child) log() string {
	s := c.stderr.String()
	return s[max(0, len(s)-4000):]
}

// lockedBuffer is written by the process's copier while the parent may
// read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stop ends the replica's standard input, which stops it and releases its
// Leases; one that does not stop is killed by its PID.
func (c *child) stop() {
	_ = c.in.Close()
	select {
	case <-c.exited:
	case <-time.After(2 * leaseDuration()):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}
