//go:build e2e

package e2e

// The robustness scenarios: faults injected while recorded traffic flows
// through the client Service, and the history checked for linearizability
// and lost writes (test/robustness). `make test` runs each scenario once;
// `make robustness` runs RAFTSMAN_ROBUSTNESS_ROUNDS rounds with random fault
// timing and writes RAFTSMAN_ROBUSTNESS_REPORT.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/failpoint"
	"github.com/raftsman/raftsman/test/robustness"
)

// availableBound is how long a cluster may take to be Available and
// converged again after the last fault was healed.
const availableBound = 3 * time.Minute

// faultEnv is what a scenario's faults act on.
type faultEnv struct {
	ctx context.Context
	t   *testing.T
	k   *kube
	key client.ObjectKey
	rnd *rand.Rand
	// faults counts the faults injected; failpoints those that kill the
	// operator on purpose (each must show as one operator restart).
	faults, failpoints int
	// faultEnded is when the last fault ended (a Pod killed, a partition
	// healed, a process resumed, the operator dead); recovery is the
	// longest time from such an end to the cluster converged again.
	faultEnded time.Time
	recovery   time.Duration
}

// onStorage says whether the cluster's members are exactly 3, none being
// removed, each on a PVC of the class and size.
func (e *faultEnv) onStorage(class string, size resource.Quantity) (bool, error) {
	ms := e.members()
	if len(ms) != 3 {
		return false, nil
	}
	for _, m := range ms {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := e.k.c.Get(e.ctx, client.ObjectKey{Namespace: m.Namespace, Name: "data-" + m.Name}, pvc); err != nil {
			return false, ignoreNotFound(err)
		}
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if !m.DeletionTimestamp.IsZero() || ptr.Deref(pvc.Spec.StorageClassName, "") != class || req.Cmp(size) != 0 {
			return false, nil
		}
	}
	return true, nil
}

// ensureStorageClass makes a StorageClass of the local cluster's
// provisioner under name, beside its default one, and returns the name.
func ensureStorageClass(ctx context.Context, t *testing.T, k *kube, name string) string {
	t.Helper()
	def := &storagev1.StorageClassList{}
	if err := k.c.List(ctx, def); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(def.Items, func(sc storagev1.StorageClass) bool {
		return sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true"
	})
	if i < 0 {
		t.Fatal("the cluster has no default StorageClass")
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          def.Items[i].Provisioner,
		Parameters:           def.Items[i].Parameters,
		ReclaimPolicy:        def.Items[i].ReclaimPolicy,
		VolumeBindingMode:    def.Items[i].VolumeBindingMode,
		AllowVolumeExpansion: def.Items[i].AllowVolumeExpansion,
	}
	if err := k.c.Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// wait sleeps a random time in [min, max): random fault timing.
func (e *faultEnv) wait(min, max time.Duration) {
	d := min + time.Duration(e.rnd.Int64N(int64(max-min)+1))
	select {
	case <-e.ctx.Done():
	case <-time.After(d):
	}
}

// converged waits for the cluster to converge at n members and records
// how long that took since the last fault ended.
func (e *faultEnv) converged(n int32) {
	e.t.Helper()
	waitConverged(e.ctx, e.t, e.k, e.key, n, availableBound)
	if !e.faultEnded.IsZero() {
		e.recovery = max(e.recovery, time.Since(e.faultEnded))
		e.faultEnded = time.Time{}
	}
}

func (e *faultEnv) ended() { e.faultEnded = time.Now() }

func (e *faultEnv) members() []etcdv1.EtcdMember {
	e.t.Helper()
	list := &etcdv1.EtcdMemberList{}
	if err := e.k.c.List(e.ctx, list, client.InNamespace(e.key.Namespace), client.MatchingLabels{etcdv1.ClusterLabel: e.key.Name}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// pick is a random member among those etcd's status lists that match.
func (e *faultEnv) pick(match func(etcdv1.ClusterMemberStatus) bool) string {
	e.t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, m := range c.Status.Members {
		if match(m) {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		e.t.Fatalf("no member to pick in %+v", c.Status.Members)
	}
	return names[e.rnd.IntN(len(names))]
}

func anyMember(etcdv1.ClusterMemberStatus) bool    { return true }
func isLeader(m etcdv1.ClusterMemberStatus) bool   { return m.Leader }
func isFollower(m etcdv1.ClusterMemberStatus) bool { return !m.Leader }

// scale sets spec.replicas, with a failpoint armed first when point is set,
// and waits for the cluster to converge at n. An armed point must fire: the
// operator restarts once.
func (e *faultEnv) scale(n int32, point string) {
	e.t.Helper()
	e.changeAt(point, func() { setReplicas(e.ctx, e.t, e.k, e.key, n) }, func() (bool, error) {
		ok, _ := e.k.converged(e.ctx, e.key, n, &etcdv1.EtcdCluster{})
		return ok, nil
	})
	e.converged(n)
}

// scaleThrough sets spec.replicas once and kills the operator at each of
// points in turn during that one change: each point is armed once the
// operator that died at the one before is ready again. A point the change
// no longer passes is disarmed and counts as no fault (changeAt).
func (e *faultEnv) scaleThrough(n int32, points ...string) {
	e.t.Helper()
	done := func() (bool, error) {
		ok, _ := e.k.converged(e.ctx, e.key, n, &etcdv1.EtcdCluster{})
		return ok, nil
	}
	for i, point := range points {
		change := func() {}
		if i == 0 {
			change = func() { setReplicas(e.ctx, e.t, e.k, e.key, n) }
		} else {
			e.k.waitOperatorReady(e.ctx, e.t)
		}
		e.changeAt(point, change, done)
	}
	e.converged(n)
}

// changeAt makes a change with a failpoint armed first when point is set,
// and waits for the operator to die there or for done.
func (e *faultEnv) changeAt(point string, change func(), done func() (bool, error)) {
	e.t.Helper()
	before, err := e.k.operatorRestarts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if point != "" {
		if err := e.k.armFailpoint(e.ctx, point); err != nil {
			e.t.Fatal(err)
		}
	}
	change()
	if point == "" {
		return
	}
	// A change may take a path without the point: a MemberRemove whose
	// answer was lost (the removed member served it) is found done on the
	// next pass, after no AfterMemberRemove. Then the cluster converges
	// with the point still armed, and no fault was injected.
	died := false
	waitFor(e.ctx, e.t, availableBound, "the operator to die at "+point+" or the change to be done without it", func() (bool, error) {
		after, err := e.k.operatorRestarts(e.ctx)
		if err != nil {
			return false, err
		}
		if died = after > before; died {
			return true, nil
		}
		return done()
	})
	if !died {
		// The status may show the change done while the operator that
		// did it is dying: look again once an operator is ready.
		e.k.waitOperatorReady(e.ctx, e.t)
		after, err := e.k.operatorRestarts(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		died = after > before
	}
	if !died {
		if err := e.k.disarmFailpoint(e.ctx, point); err != nil {
			e.t.Fatal(err)
		}
		e.t.Logf("the change did not pass %s this time", point)
		return
	}
	e.ended()
	e.faults++
	e.failpoints++
	e.t.Logf("operator killed at %s", point)
}

// scenario is one kind of fault, injected while traffic flows.
type scenario struct {
	name     string
	replicas int32
	// version the cluster starts on; the suite's etcd when empty.
	version string
	// failpoints: run the operator built with failpoints.
	failpoints bool
	// spec changes the cluster's spec before it is created.
	spec   func(*etcdv1.EtcdCluster)
	inject func(e *faultEnv)
	// index names the scenario's cluster, unique within the test's
	// namespace.
	index int
}

var scenarios = []scenario{
	{
		// The operator dies at every step boundary of a membership change,
		// along 3 -> 5 -> 3 -> 1 -> 4, and once more at the leader's
		// removal (a deleted EtcdMember that leads). The scales up are by
		// two and by three: their joiners are prepared at once, and on
		// etcd 3.6 added as learners together, so the operator dies
		// between two creations, between two adds and between two
		// promotions of one change.
		name: "operator-killed-during-membership-changes", replicas: 3, failpoints: true,
		inject: func(e *faultEnv) {
			e.scaleThrough(5, failpoint.AfterJoinerCreate, failpoint.BeforeMemberAdd)
			e.scale(4, failpoint.BeforeMemberRemove)
			e.scale(3, failpoint.AfterMemberRemove)
			e.scale(2, "")
			// The operator Pod killed outright at a random moment of a removal.
			setReplicas(e.ctx, e.t, e.k, e.key, 1)
			e.wait(0, 3*time.Second)
			if err := e.k.c.DeleteAllOf(e.ctx, &corev1.Pod{}, client.InNamespace(operatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}, client.GracePeriodSeconds(0)); err != nil {
				e.t.Fatal(err)
			}
			e.ended()
			e.faults++
			e.k.waitOperatorReady(e.ctx, e.t)
			e.converged(1)
			e.scaleThrough(4, failpoint.AfterMemberAdd, failpoint.BeforePromote, failpoint.AfterPromote)
			// The leader's EtcdMember deleted: leadership moves first.
			before, _ := e.k.operatorRestarts(e.ctx)
			if err := e.k.armFailpoint(e.ctx, failpoint.BeforeMoveLeader); err != nil {
				e.t.Fatal(err)
			}
			leader := e.pick(isLeader)
			if err := e.k.c.Delete(e.ctx, &etcdv1.EtcdMember{ObjectMeta: objectMeta(e.key.Namespace, leader)}); err != nil {
				e.t.Fatal(err)
			}
			waitFor(e.ctx, e.t, 2*time.Minute, "the operator to die at "+failpoint.BeforeMoveLeader, func() (bool, error) {
				after, err := e.k.operatorRestarts(e.ctx)
				return after > before, err
			})
			e.ended()
			e.faults++
			e.failpoints++
			// Converged counts only once the member is gone and replaced:
			// until its removal the status still shows three voters.
			waitFor(e.ctx, e.t, availableBound, leader+" removed", func() (bool, error) {
				err := e.k.c.Get(e.ctx, client.ObjectKey{Namespace: e.key.Namespace, Name: leader}, &etcdv1.EtcdMember{})
				return apierrors.IsNotFound(err), ignoreNotFound(err)
			})
			waitFor(e.ctx, e.t, availableBound, "a replacement of "+leader, func() (bool, error) {
				return len(e.members()) == 4, nil
			})
			e.converged(4)
		},
	},
	{
		// The members move to volumes of another StorageClass and half the
		// size, replaced one at a time through etcd's membership API; the
		// operator dies as it is about to remove a replaced member.
		name: "storage-migration-operator-killed", replicas: 3, failpoints: true,
		spec: func(c *etcdv1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("256Mi")) },
		inject: func(e *faultEnv) {
			class := ensureStorageClass(e.ctx, e.t, e.k, "raftsman-e2e-second")
			size := resource.MustParse("128Mi")
			moved := func() (bool, error) { return e.onStorage(class, size) }
			e.changeAt(failpoint.BeforeReplacedRemoval, func() {
				patch := fmt.Sprintf(`{"spec":{"storage":{"storageClassName":%q,"size":%q}}}`, class, size.String())
				if err := e.k.c.Patch(e.ctx, &etcdv1.EtcdCluster{ObjectMeta: objectMeta(e.key.Namespace, e.key.Name)}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					e.t.Fatal(err)
				}
			}, moved)
			waitFor(e.ctx, e.t, 2*availableBound, "every member on a volume of "+class+" and "+size.String(), moved)
			e.converged(3)
		},
	},
	{
		name: "member-pod-killed", replicas: 3,
		inject: func(e *faultEnv) {
			for range 2 * repeats() {
				e.wait(time.Second, 5*time.Second)
				victim := e.pick(anyMember)
				old := &corev1.Pod{}
				if err := e.k.c.Get(e.ctx, client.ObjectKey{Namespace: e.key.Namespace, Name: victim}, old); err != nil {
					e.t.Fatal(err)
				}
				if err := e.k.c.Delete(e.ctx, old, client.GracePeriodSeconds(0)); err != nil {
					e.t.Fatal(err)
				}
				e.ended()
				e.faults++
				e.t.Logf("killed the Pod of %s", victim)
				// Converged counts only once the member's new Pod is ready:
				// the status may not have noticed the old one go yet.
				waitFor(e.ctx, e.t, availableBound, "a new ready Pod of "+victim, func() (bool, error) {
					p := &corev1.Pod{}
					if err := e.k.c.Get(e.ctx, client.ObjectKeyFromObject(old), p); err != nil {
						return false, ignoreNotFound(err)
					}
					return p.UID != old.UID && podReady(p), nil
				})
				e.converged(3)
			}
		},
	},
	{
		name: "member-pod-and-pvc-deleted", replicas: 3,
		inject: func(e *faultEnv) {
			e.wait(time.Second, 5*time.Second)
			victim := e.pick(anyMember)
			ns := e.key.Namespace
			if err := e.k.c.Delete(e.ctx, &corev1.PersistentVolumeClaim{ObjectMeta: objectMeta(ns, "data-"+victim)}); err != nil {
				e.t.Fatal(err)
			}
			if err := e.k.c.Delete(e.ctx, &corev1.Pod{ObjectMeta: objectMeta(ns, victim)}, client.GracePeriodSeconds(0)); err != nil {
				e.t.Fatal(err)
			}
			e.ended()
			e.faults++
			e.t.Logf("deleted the Pod and PVC of %s", victim)
			waitFor(e.ctx, e.t, availableBound, victim+" replaced", func() (bool, error) {
				for _, m := range e.members() {
					if m.Name == victim {
						return false, nil
					}
				}
				return true, nil
			})
			e.converged(3)
		},
	},
	{
		name: "member-then-leader-partitioned", replicas: 3,
		inject: func(e *faultEnv) {
			e.followerThenLeader("cut off from its peers", 3*time.Second, 8*time.Second, func(victim string) (func() error, error) {
				return func() error { return heal(e.ctx, victim) }, partition(e.ctx, victim)
			})
		},
	},
	{
		name: "member-paused", replicas: 3,
		inject: func(e *faultEnv) {
			e.followerThenLeader("paused", 2*time.Second, 6*time.Second, func(victim string) (func() error, error) {
				pid, err := pause(victim)
				return func() error { return resume(pid) }, err
			})
		},
	},
	{
		// A member paused while the two others acknowledge writes; then
		// those two paused and the first resumed, with quorumLoss
		// Automatic: only the member that missed the writes answers, and
		// forcing it would give them up. The operator must wait (its
		// Progressing message says the members gone may hold writes)
		// until the two come back.
		name: "majority-paused-automatic-recovery", replicas: 3,
		spec: func(c *etcdv1.EtcdCluster) {
			c.Spec.Recovery = etcdv1.RecoverySpec{QuorumLoss: etcdv1.QuorumLossAutomatic, QuorumLossAfter: "30s"}
		},
		inject: func(e *faultEnv) {
			e.wait(time.Second, 3*time.Second)
			behind := e.pick(isFollower)
			first, err := pause(behind)
			if err != nil {
				e.t.Fatal(err)
			}
			paused := []int{first}
			defer func() {
				for _, pid := range paused {
					_ = resume(pid)
				}
			}()
			e.faults++
			e.t.Logf("paused %s", behind)
			e.wait(3*time.Second, 5*time.Second)
			for _, m := range e.members() {
				if m.Name == behind {
					continue
				}
				pid, err := pause(m.Name)
				if err != nil {
					e.t.Fatal(err)
				}
				paused = append(paused, pid)
				e.t.Logf("paused %s", m.Name)
			}
			if err := resume(first); err != nil && !errors.Is(err, syscall.ESRCH) {
				e.t.Fatal(err)
			}
			e.t.Logf("resumed %s, the only member that answers", behind)
			// The automatic recovery's time comes (30s after the loss) and it
			// declines: the condition says so.
			waitFor(e.ctx, e.t, 2*time.Minute, "the automatic recovery to decline", func() (bool, error) {
				c := &etcdv1.EtcdCluster{}
				if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
					return false, err
				}
				if c.Status.Recovery != nil && c.Status.Recovery.Phase != etcdv1.RecoveryDone {
					return false, fmt.Errorf("a recovery started: %+v", *c.Status.Recovery)
				}
				p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
				return p != nil && p.Reason == etcdv1.ReasonQuorumLost && strings.Contains(p.Message, "may still hold acknowledged writes"), nil
			})
			for _, pid := range paused[1:] {
				// ESRCH: the kubelet restarted the container meanwhile.
				if err := resume(pid); err != nil && !errors.Is(err, syscall.ESRCH) {
					e.t.Fatal(err)
				}
			}
			paused = nil
			e.ended()
			e.converged(3)
		},
	},
}

// followerThenLeader injects a fault into a follower, then into the
// leader, repeats() times: fault starts it and returns what ends it; the
// fault lasts a random time in [min, max), and the cluster must converge
// again after each.
func (e *faultEnv) followerThenLeader(what string, min, max time.Duration, fault func(victim string) (func() error, error)) {
	e.t.Helper()
	for i := range 2 * repeats() {
		leader := i%2 == 1
		e.wait(time.Second, 4*time.Second)
		victim := e.pick(isFollower)
		if leader {
			victim = e.pick(isLeader)
		}
		end, err := fault(victim)
		if err != nil {
			e.t.Fatal(err)
		}
		e.faults++
		e.t.Logf("%s %s (leader %v)", what, victim, leader)
		e.wait(min, max)
		if err := end(); err != nil {
			e.t.Fatal(err)
		}
		e.ended()
		e.converged(3)
	}
}

// outcome is one run of a scenario, for the report.
type outcome struct {
	scenario          string
	round             int
	ops, acked, indet int
	faults            int
	verdict           string
	longestGap        time.Duration
	backToAvailable   time.Duration
	ok                bool
}

var (
	outcomesMu sync.Mutex
	outcomes   []outcome
)

func rounds() int {
	n, err := strconv.Atoi(os.Getenv("RAFTSMAN_ROBUSTNESS_ROUNDS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// repeats is how often the quick faults (a Pod killed, a partition, a
// pause) repeat within one run: once for make test, three times for the rounds
// of make robustness, which are about many faults.
func repeats() int {
	if rounds() > 1 {
		return 3
	}
	return 1
}

// TestRobustness runs the scenarios whose faults stay inside their own
// cluster, each beside the other parallel tests in a namespace of its own.
func TestRobustness(t *testing.T) {
	parallel(t)
	robustnessScenarios(t, false)
}

// TestRobustnessOperatorKilled runs the scenarios that kill the operator.
func TestRobustnessOperatorKilled(t *testing.T) {
	serial(t, "the operator runs its failpoints build and dies at them")
	robustnessScenarios(t, true)
}

// robustnessScenarios runs every round of the scenarios that kill the
// operator (failpoints) or of those that do not, as subtests: in parallel
// for the latter.
func robustnessScenarios(t *testing.T, failpoints bool) {
	for round := range rounds() {
		for i, sc := range scenarios {
			if sc.failpoints != failpoints {
				continue
			}
			if only := os.Getenv("RAFTSMAN_ROBUSTNESS_ONLY"); only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
				continue // a developer's run of some scenarios
			}
			sc.index = i
			name := fmt.Sprintf("%s round %d", sc.name, round+1)
			t.Run(name, func(t *testing.T) {
				if !failpoints {
					t.Parallel()
				}
				testenv.Test(t, features.New(name).
					Assess(sc.name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
						runScenario(ctx, t, mustKube(t, cfg), sc, round)
						return ctx
					}).Feature())
			})
		}
	}
}

func runScenario(ctx context.Context, t *testing.T, k *kube, sc scenario, round int) {
	// The outcome is recorded however the run ends: one that stopped
	// before its check is in the report as not checked and failed.
	o := outcome{scenario: sc.name, round: round + 1, verdict: "not checked"}
	var e *faultEnv
	defer func() {
		if e != nil {
			o.faults = e.faults
		}
		o.ok = o.ok && !t.Failed()
		outcomesMu.Lock()
		outcomes = append(outcomes, o)
		outcomesMu.Unlock()
		// Written after every run, so that a long make robustness that
		// is stopped keeps what it measured.
		if path := os.Getenv("RAFTSMAN_ROBUSTNESS_REPORT"); path != "" {
			if err := writeReport(path); err != nil {
				t.Error(err)
			}
		}
	}()
	if sc.failpoints {
		k.useFailpointOperator(ctx, t)
	}
	restartsBefore, err := k.operatorRestarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(namespaceOf(ctx), fmt.Sprintf("rb%d-%d", sc.index, round+1), sc.replicas)
	if sc.version != "" {
		c.Spec.Version = sc.version
	}
	if sc.spec != nil {
		sc.spec(c)
	}
	if err := k.c.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Each run frees its Pods and volumes for the next.
	defer func() { _ = k.c.Delete(context.Background(), c) }()
	key := client.ObjectKeyFromObject(c)
	waitConverged(ctx, t, k, key, sc.replicas, availableBound)

	newClient := robustness.NewClientFactory(k.clientConfig(ctx, t, key, k.rootTLS(ctx, t, key)))
	wc, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	prefix := fmt.Sprintf("/rb/%s/%d/", sc.name, round)
	w, err := robustness.Watch(ctx, wc, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}

	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	var (
		h       *robustness.History
		herr    error
		running = make(chan struct{})
	)
	go func() {
		defer close(running)
		h, herr = robustness.Run(trafficCtx, robustness.TrafficConfig{
			NewClient: newClient, Prefix: prefix, Clients: 4, Keys: 10,
			Duration: 30 * time.Minute, MaxOperations: 1 << 30, Rate: 100,
			Seed: uint64(time.Now().UnixNano()),
		})
	}()
	e = &faultEnv{ctx: ctx, t: t, k: k, key: key, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(round)))}
	// Traffic before the first fault, so the history has a baseline.
	time.Sleep(2 * time.Second)
	sc.inject(e)
	backToAvailable := e.recovery
	// Traffic after the last repair, on the healed cluster.
	time.Sleep(3 * time.Second)
	stopTraffic()
	<-running
	if herr != nil {
		t.Fatalf("traffic: %v", herr)
	}
	final, err := robustness.ReadFinal(ctx, wc, prefix, time.Minute)
	if err != nil {
		t.Fatalf("final read: %v", err)
	}
	watch := w.Stop(final.Revision, 30*time.Second)
	r := robustness.Check(h, final, robustness.CheckConfig{Watch: watch, Timeout: 2 * time.Minute})

	o.ops, o.acked, o.indet = r.Counts.Operations, r.Counts.Acked, r.Counts.Indeterminate
	o.verdict, o.longestGap, o.backToAvailable, o.ok = string(r.Linearizable), longestGap(h), backToAvailable, r.OK()
	t.Logf("%s: %d faults, %d ops (%d acked, %d indeterminate), %s, longest gap between successful operations %.1fs, converged again at most %.1fs after a fault ended",
		sc.name, e.faults, o.ops, o.acked, o.indet, r.Linearizable, o.longestGap.Seconds(), o.backToAvailable.Seconds())
	if !r.OK() {
		dir := filepath.Join(repoRoot, "_output/robustness", fmt.Sprintf("%s-%s", sc.name, time.Now().Format("20060102-150405")))
		if err := r.Write(dir); err != nil {
			t.Error(err)
		}
		t.Errorf("history not correct (kept in %s): %s", dir, r)
	}

	// etcd's member list is the EtcdMembers.
	ids := memberIDs(ctx, t, wc)
	members := e.members()
	if len(ids) != len(members) {
		t.Errorf("etcd has members %v, EtcdMembers are %v", ids, memberNames(members))
	}
	for _, m := range members {
		if id, ok := ids[m.Name]; !ok || fmt.Sprintf("%x", id) != strings.TrimLeft(m.Status.MemberID, "0") {
			t.Errorf("EtcdMember %s (ID %s) is not etcd's member %x", m.Name, m.Status.MemberID, id)
		}
	}
	// The operator died only where a failpoint made it.
	restarts, err := k.operatorRestarts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(restarts - restartsBefore); !sc.failpoints && got != 0 {
		t.Errorf("the operator restarted %d times with no failpoint armed", got)
	} else if sc.failpoints && got > e.failpoints {
		t.Errorf("the operator restarted %d times, %d of them at failpoints", got, e.failpoints)
	}
	// controller-runtime recovers a reconciler's panic and logs it; a
	// failpoint ends the process with "panic: failpoint <name>".
	for _, previous := range []bool{false, true} {
		out, err := k.operatorLog(ctx, previous)
		if err != nil {
			continue // no previous run
		}
		if strings.Contains(out, "Observed a panic") || (strings.Contains(out, "panic:") && !strings.Contains(out, "panic: failpoint")) {
			t.Errorf("the operator panicked outside a failpoint:\n%s", tail(out, 40))
		}
	}
}

// longestGap is the longest time with no successful operation.
func longestGap(h *robustness.History) time.Duration {
	var done []int64
	for _, op := range h.Operations {
		if op.Error == "" && !op.Indeterminate {
			done = append(done, op.Return)
		}
	}
	slices.Sort(done)
	var gap int64
	for i := 1; i < len(done); i++ {
		gap = max(gap, done[i]-done[i-1])
	}
	return time.Duration(gap)
}

func memberNames(ms []etcdv1.EtcdMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// writeReport writes the rounds' outcomes as a Markdown table.
func writeReport(path string) error {
	outcomesMu.Lock()
	defer outcomesMu.Unlock()
	var b strings.Builder
	faults := 0
	for _, o := range outcomes {
		faults += o.faults
	}
	fmt.Fprintf(&b, "# Robustness\n\n`make robustness ROUNDS=%d`, %s: %d runs, %d faults injected in all, with random timing. ", rounds(), time.Now().UTC().Format("2006-01-02"), len(outcomes), faults)
	b.WriteString("Each row is one run: a fresh 3-member cluster (etcd " + etcdVersion + ", TLS; rolling-changes starts on " + etcdOldVersion + " and goes up to " + etcdNextVersion + " and back, then changes resources, flags and the image), 4 clients writing and reading through the client Service at up to 100 operations/s while the faults happen, then the whole history checked for linearizability (porcupine), every acknowledged write looked for in a final read, the watch checked for gaps, etcd's member list compared with the EtcdMembers, and the operator's restarts with the failpoints fired.\n\n")
	b.WriteString("| scenario | round | faults | operations | acknowledged | indeterminate | verdict | longest gap between successful operations | longest time from a fault's end to converged again | pass |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, o := range outcomes {
		pass := "yes"
		if !o.ok {
			pass = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %.1f s | %.1f s | %s |\n", o.scenario, o.round, o.faults, o.ops, o.acked, o.indet, o.verdict, o.longestGap.Seconds(), o.backToAvailable.Seconds(), pass)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
