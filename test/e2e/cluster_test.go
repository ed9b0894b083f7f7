//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func newCluster(ns, name string, replicas int32) *etcdv1.EtcdCluster {
	return &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1.EtcdClusterSpec{
			Replicas: ptr.To(replicas),
			Version:  etcdVersion,
			Storage:  etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("128Mi"))},
			// Many clusters run at once on the test node: at the default
			// request (100m) the scheduler would fit fewer than 20 members
			// on its 2 cores, whatever they use.
			Resources: etcdv1.ResourceRequirements{Requests: etcdv1.ResourceList{corev1.ResourceCPU: testCPURequest}},
		},
	}
}

// testCPURequest is the CPU each test cluster's member asks for.
const testCPURequest = "10m"

// waitConverged waits until the cluster is Available with exactly n healthy
// voters, no learner, nothing in progress, for its current generation.
func waitConverged(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, n int32, timeout time.Duration) *etcdv1.EtcdCluster {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	waitFor(ctx, t, timeout, fmt.Sprintf("%s to have %d healthy voters", key.Name, n), func() (bool, error) {
		return k.converged(ctx, key, n, c)
	})
	return c
}

// converged says whether the cluster is Available with exactly n healthy
// voters, no learner, nothing in progress, for its current generation; c
// is filled with what was read.
func (k *kube) converged(ctx context.Context, key client.ObjectKey, n int32, c *etcdv1.EtcdCluster) (bool, error) {
	if err := k.c.Get(ctx, key, c); err != nil {
		return false, err
	}
	a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
	p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
	if a == nil || p == nil || a.Status != metav1.ConditionTrue || p.Status != metav1.ConditionFalse ||
		a.ObservedGeneration != c.Generation || p.ObservedGeneration != c.Generation {
		return false, fmt.Errorf("conditions %v", c.Status.Conditions)
	}
	if c.Status.ReadyReplicas != n || len(c.Status.Members) != int(n) {
		return false, fmt.Errorf("ready %d members %d", c.Status.ReadyReplicas, len(c.Status.Members))
	}
	for _, m := range c.Status.Members {
		if m.Role != etcdv1.RoleVoter || !m.Healthy {
			return false, fmt.Errorf("member %+v", m)
		}
	}
	return true, nil
}

// etcdClient connects to the cluster's client Service with the client
// certificate the operator keeps for users (common name root).
func etcdClient(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey) *clientv3.Client {
	t.Helper()
	cfg := k.clientConfig(ctx, t, key, k.rootTLS(ctx, t, key))
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// memberIDs lists etcd's members as name -> ID, failing on a learner.
func memberIDs(ctx context.Context, t *testing.T, cli *clientv3.Client) map[string]uint64 {
	t.Helper()
	var resp *clientv3.MemberListResponse
	waitFor(ctx, t, 30*time.Second, "member list", func() (bool, error) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		var err error
		resp, err = cli.MemberList(c)
		return err == nil, err
	})
	ids := map[string]uint64{}
	for _, m := range resp.Members {
		if m.IsLearner {
			t.Errorf("member %s (%x) is still a learner", m.Name, m.ID)
		}
		ids[m.Name] = m.ID
	}
	return ids
}

// writer puts keys all the time and remembers each write etcd acknowledged.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acked  []string
	failed int
}

func startWriter(ctx context.Context, cli *clientv3.Client, prefix string) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("%s%07d", prefix, i)
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cli.Put(c, key, key)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, key)
			} else if ctx.Err() == nil {
				w.failed++
			}
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return w
}

// ackedSoFar is how many writes etcd has acknowledged so far.
func (w *writer) ackedSoFar() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *writer) stop() ([]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), w.failed
}

// checkKeys reads back every acknowledged key with a linearizable read.
func checkKeys(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, acked []string) {
	t.Helper()
	have := readAll(ctx, t, cli, prefix)
	lost := 0
	for _, key := range acked {
		if have[key] != key {
			lost++
		}
	}
	if lost > 0 || len(acked) == 0 {
		t.Fatalf("%d of %d acknowledged writes are missing", lost, len(acked))
	}
	t.Logf("all %d acknowledged writes read back", len(acked))
}

func setReplicas(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, n int32) {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := k.c.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = ptr.To(n)
	if err := k.c.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs the cluster's kubectl, the one built with the local cluster
// when there is one.
func kubectl(ctx context.Context, cfg *envconf.Config, args ...string) (string, error) {
	bin := "kubectl"
	if m, _ := filepath.Glob(filepath.Join(repoRoot, "_output/bin/kubernetes-*/kubectl")); len(m) > 0 {
		bin = m[0]
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// runningCluster creates a cluster of n members, waits until it converged
// and returns its key and a client of its client Service.
func runningCluster(ctx context.Context, t *testing.T, k *kube, name string, n int32) (client.ObjectKey, *clientv3.Client) {
	t.Helper()
	c := newCluster(namespaceOf(ctx), name, n)
	start := time.Now()
	if err := k.c.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	waitConverged(ctx, t, k, key, n, 3*time.Minute)
	t.Logf("%d members Available %.1fs after create", n, time.Since(start).Seconds())
	return key, etcdClient(ctx, t, k, key)
}

func TestScaleWhileWriting(t *testing.T) {
	parallel(t)
	f := features.New("scale").
		Assess("3 -> 5 -> 3 -> 1 -> 3 with a client writing throughout loses no acknowledged write", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			key, cli := runningCluster(ctx, t, k, "scale", 3)
			w := startWriter(ctx, cli, "scale/")
			first := memberIDs(ctx, t, cli)
			for _, n := range []int32{5, 3, 1} {
				step := time.Now()
				setReplicas(ctx, t, k, key, n)
				waitConverged(ctx, t, k, key, n, 3*time.Minute)
				if ids := memberIDs(ctx, t, cli); len(ids) != int(n) {
					t.Fatalf("etcd lists %d members, want %d: %v", len(ids), n, ids)
				}
				t.Logf("scaled to %d in %.1fs", n, time.Since(step).Seconds())
				if n == 5 {
					checkPreparedJoiners(ctx, t, k, ns, first)
				}
			}
			step := time.Now()
			if out, err := kubectl(ctx, cfg, "-n", ns, "scale", "etcdcluster/scale", "--replicas=3"); err != nil {
				t.Fatalf("kubectl scale: %v: %s", err, out)
			}
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			t.Logf("kubectl scale to 3 converged in %.1fs", time.Since(step).Seconds())
			acked, failed := w.stop()
			t.Logf("writer: %d acknowledged, %d failed and retried", len(acked), failed)
			checkKeys(ctx, t, cli, "scale/", acked)

			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			ids := memberIDs(ctx, t, cli)
			if len(members.Items) != 3 || len(ids) != 3 {
				t.Fatalf("EtcdMembers %d, etcd members %d, want 3 and 3", len(members.Items), len(ids))
			}
			for _, m := range members.Items {
				if id, ok := ids[m.Name]; !ok || fmt.Sprintf("%x", id) != m.Status.MemberID {
					t.Errorf("EtcdMember %s (id %s) does not match etcd %v", m.Name, m.Status.MemberID, ids)
				}
			}
			evs, err := k.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, e := range evs.Items {
				count[e.Reason]++
			}
			// 3->5 and 1->3 add four members; 5->3 and 3->1 remove four.
			if count["MemberAdded"] < 4 || count["MemberPromoted"] < 4 || count["MemberRemoved"] < 4 {
				t.Errorf("events by reason = %v, want at least 4 MemberAdded, MemberPromoted and MemberRemoved", count)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// checkPreparedJoiners checks how a scale by two went: the Pods of both new
// members were made before either was promoted (prepared joiners), each
// one's etcd started behind the join gate once etcd listed it, and on etcd
// 3.6 and later both were added before the first was promoted (two
// learners at once, --max-learners).
func checkPreparedJoiners(ctx context.Context, t *testing.T, k *kube, ns string, before map[string]uint64) {
	t.Helper()
	members := &etcdv1.EtcdMemberList{}
	if err := k.c.List(ctx, members, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	evs, err := k.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(e corev1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.FirstTimestamp.Time
	}
	var lastAdd, firstPromote, lastPodCreated time.Time
	joiners := 0
	for _, m := range members.Items {
		if _, ok := before[m.Name]; ok {
			continue
		}
		joiners++
		for _, e := range evs.Items {
			if e.Related == nil || e.Related.Name != m.Name {
				continue
			}
			switch e.Reason {
			case "MemberAdded":
				if at(e).After(lastAdd) {
					lastAdd = at(e)
				}
			case "MemberPromoted":
				if firstPromote.IsZero() || at(e).Before(firstPromote) {
					firstPromote = at(e)
				}
			}
		}
		p, err := k.cs.CoreV1().Pods(ns).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.CreationTimestamp.After(lastPodCreated) {
			lastPodCreated = p.CreationTimestamp.Time
		}
		// The gate's lines come first in the etcd container's log.
		logs, err := k.cs.CoreV1().Pods(ns).GetLogs(m.Name, &corev1.PodLogOptions{Container: "etcd", LimitBytes: ptr.To[int64](8 << 10)}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(logs), "waits until etcd lists") || !strings.Contains(string(logs), "starting etcd with --initial-cluster=") {
			t.Errorf("joiner %s: its etcd did not start behind the join gate; its log begins:\n%.2000s", m.Name, logs)
		}
	}
	if joiners != 2 || lastAdd.IsZero() || firstPromote.IsZero() {
		t.Fatalf("%d joiners, last MemberAdded %v, first MemberPromoted %v: want 2 joiners with both events", joiners, lastAdd, firstPromote)
	}
	// Pod times have a resolution of a second: made before the promotion
	// means within the second of it at the latest.
	if lastPodCreated.After(firstPromote) {
		t.Errorf("a joiner's Pod was made at %v, after the first joiner was promoted at %v: the joiners were not prepared at once", lastPodCreated, firstPromote)
	}
	if !strings.HasPrefix(etcdVersion, "3.5.") && lastAdd.After(firstPromote) {
		t.Errorf("the second joiner was added at %v, after the first was promoted at %v: on etcd %s both are learners at once", lastAdd, firstPromote, etcdVersion)
	}
	t.Logf("scale by two: both joiner Pods made by %v, both added by %v, first promoted at %v", lastPodCreated.Format(time.RFC3339), lastAdd.Format(time.RFC3339Nano), firstPromote.Format(time.RFC3339Nano))
}

func TestMemberPodComesBackWithItsIdentity(t *testing.T) {
	parallel(t)
	f := features.New("pod recovery").
		Assess("a deleted member Pod returns with the same member ID and data", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			key, cli := runningCluster(ctx, t, k, "heal", 3)
			// The operator reports the cluster's conditions for Prometheus.
			want := fmt.Sprintf(`raftsman_etcdcluster_status_condition{name="heal",namespace="%s",reason="QuorumHealthy",status="True",type="Available"} 1`, key.Namespace)
			waitFor(ctx, t, 30*time.Second, "the Available series on /metrics", func() (bool, error) {
				out, err := k.operatorMetrics(ctx)
				return strings.Contains(out, want), err
			})
			before := memberIDs(ctx, t, cli)
			w := startWriter(ctx, cli, "heal/")

			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			victim := members.Items[0]
			old := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victim.Name}, old); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := k.c.Delete(ctx, old); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 2*time.Minute, "a new Ready Pod of "+victim.Name, func() (bool, error) {
				p := &corev1.Pod{}
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(old), p); err != nil {
					return false, ignoreNotFound(err)
				}
				return p.UID != old.UID && podReady(p), nil
			})
			t.Logf("member Pod back and Ready %.1fs after delete", time.Since(start).Seconds())
			waitConverged(ctx, t, k, key, 3, 2*time.Minute)
			acked, _ := w.stop()
			after := memberIDs(ctx, t, cli)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("member IDs changed: before %v after %v", before, after)
			}
			m := &etcdv1.EtcdMember{}
			if err := k.c.Get(ctx, client.ObjectKeyFromObject(&victim), m); err != nil {
				t.Fatal(err)
			}
			if m.Status.MemberID != victim.Status.MemberID {
				t.Errorf("EtcdMember ID %s, want %s", m.Status.MemberID, victim.Status.MemberID)
			}
			checkKeys(ctx, t, cli, "heal/", acked)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestOperatorKilledDuringScaleUp(t *testing.T) {
	serial(t, "it kills the operator in the middle of a scale-up")
	f := features.New("crash safety").
		Assess("killing the operator in the middle of a scale-up leaves no extra member", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			key, cli := runningCluster(ctx, t, k, "crash", 3)
			w := startWriter(ctx, cli, "crash/")

			setReplicas(ctx, t, k, key, 5)
			// Kill the operator as soon as the first new member exists.
			waitFor(ctx, t, time.Minute, "a fourth EtcdMember", func() (bool, error) {
				l := &etcdv1.EtcdMemberList{}
				err := k.c.List(ctx, l, client.InNamespace(ns))
				return len(l.Items) > 3, err
			})
			if err := k.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(operatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			t.Log("operator killed in the middle of the scale-up")
			waitConverged(ctx, t, k, key, 5, 4*time.Minute)
			acked, _ := w.stop()
			ids := memberIDs(ctx, t, cli)
			l := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(ids) != 5 || len(l.Items) != 5 {
				t.Fatalf("etcd members %d, EtcdMembers %d, want 5 and 5: %v", len(ids), len(l.Items), ids)
			}
			checkKeys(ctx, t, cli, "crash/", acked)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func TestInvalidSpecIsRefused(t *testing.T) {
	parallel(t)
	f := features.New("validation").
		Assess("the API server refuses a bad spec with a message naming the field", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			bad := newCluster(ns, "bad", 3)
			bad.Spec.Version = "latest"
			if err := k.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.version") {
				t.Errorf("version latest: err = %v, want a message naming spec.version", err)
			}
			bad = newCluster(ns, "bad", 3)
			bad.Spec.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"initial-cluster-state": "new"}
			if err := k.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.options.extraArgs") {
				t.Errorf("owned flag: err = %v, want a message naming spec.options.extraArgs", err)
			}
			good := newCluster(ns, "shrink", 1)
			if err := k.c.Create(ctx, good); err != nil {
				t.Fatal(err)
			}
			// The operator writes the object too (finalizer, status): retry
			// conflicts, and expect the validation error itself.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
					return err
				}
				good.Spec.Storage.Size = ptr.To(resource.MustParse("64Mi"))
				return k.c.Update(ctx, good)
			})
			if err == nil || !strings.Contains(err.Error(), "spec.storage.size") {
				t.Errorf("shrink: err = %v, want a message naming spec.storage.size", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestNamesTheClusterDoesNotOwn: a Service under the name of a cluster's
// client Service that belongs to another application is left as it is
// (Degraded NameConflict names it); once it is deleted the cluster makes
// its own and becomes Available. A cluster whose name ends in -peer (its
// client Service would be another cluster's peer Service) is refused.
func TestNamesTheClusterDoesNotOwn(t *testing.T) {
	parallel(t)
	f := features.New("names").
		Assess("a foreign Service is left alone; -peer names are refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			if err := k.c.Create(ctx, newCluster(ns, "names-peer", 1)); err == nil || !strings.Contains(err.Error(), "cannot end in -peer") {
				t.Errorf("cluster names-peer: err = %v, want the -peer refusal", err)
			}
			foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "names", Labels: map[string]string{"app": "web"}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
			if err := k.c.Create(ctx, foreign); err != nil {
				t.Fatal(err)
			}
			c := newCluster(ns, "names", 1)
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitFor(ctx, t, 2*time.Minute, "Degraded NameConflict", func() (bool, error) {
				got := &etcdv1.EtcdCluster{}
				if err := k.c.Get(ctx, key, got); err != nil {
					return false, err
				}
				d := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionDegraded)
				return d != nil && d.Reason == etcdv1.ReasonNameConflict && strings.Contains(d.Message, "Service names"), nil
			})
			svc := &corev1.Service{}
			if err := k.c.Get(ctx, client.ObjectKeyFromObject(foreign), svc); err != nil {
				t.Fatal(err)
			}
			if svc.Spec.Selector["app"] != "web" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || len(svc.OwnerReferences) > 0 {
				t.Errorf("the foreign Service was changed: selector %v ports %v owners %v", svc.Spec.Selector, svc.Spec.Ports, svc.OwnerReferences)
			}
			if err := k.c.Delete(ctx, svc); err != nil {
				t.Fatal(err)
			}
			// Nothing of the cluster's wakes it when a Service it does not
			// own goes: its health poll (1m) finds the name free.
			waitFor(ctx, t, 3*time.Minute, "the cluster's own client Service, and Degraded no longer NameConflict", func() (bool, error) {
				got := getCluster(ctx, t, k, key)
				mine := &corev1.Service{}
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(foreign), mine); err != nil {
					return false, ignoreNotFound(err)
				}
				d := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionDegraded)
				return metav1.IsControlledBy(mine, got) && d != nil && d.Reason != etcdv1.ReasonNameConflict, nil
			})
			waitConverged(ctx, t, k, key, 1, 3*time.Minute)
			_ = k.c.Delete(ctx, c)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
