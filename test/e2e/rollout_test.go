//go:build e2e

package e2e

// Rolling changes under recorded traffic: a robustness scenario whose
// "faults" are spec changes that restart every member in turn. The history
// is checked like any other scenario's (linearizability, lost acknowledged
// writes, watch gaps).

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// The versions of the upgrade path; their images are on the local cluster.
var (
	etcdOldVersion  = envOr("ETCD_OLD_VERSION", "3.5.35")
	etcdNextVersion = envOr("ETCD_NEXT_VERSION", "3.7.3")
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// rollBound is how long one rolling change of 3 members may take.
const rollBound = 4 * time.Minute

func init() {
	scenarios = append(scenarios, scenario{
		name: "rolling-changes", replicas: 3, version: etcdOldVersion,
		inject: func(e *faultEnv) {
			hasVersion := func(v string) func(c *etcdv1.EtcdCluster, pods []corev1.Pod) error {
				return func(c *etcdv1.EtcdCluster, pods []corev1.Pod) error {
					if c.Status.Version != v {
						return fmt.Errorf("status.version %s, want %s", c.Status.Version, v)
					}
					for _, m := range c.Status.Members {
						if m.Version != v {
							return fmt.Errorf("member %s runs %s, want %s", m.Name, m.Version, v)
						}
					}
					for _, p := range pods {
						if img := p.Spec.Containers[0].Image; img != "quay.io/coreos/etcd:v"+v {
							return fmt.Errorf("pod %s runs %s", p.Name, img)
						}
					}
					return nil
				}
			}
			setVersion := func(v string) func(*etcdv1.EtcdClusterSpec) {
				return func(s *etcdv1.EtcdClusterSpec) { s.Version = v }
			}
			// Up one minor at a time, then down through etcd's downgrade API.
			e.roll("upgrade to "+etcdVersion, setVersion(etcdVersion), hasVersion(etcdVersion))
			e.roll("upgrade to "+etcdNextVersion, setVersion(etcdNextVersion), hasVersion(etcdNextVersion))
			e.roll("downgrade to "+etcdVersion, setVersion(etcdVersion), hasVersion(etcdVersion))
			e.roll("new resources", func(s *etcdv1.EtcdClusterSpec) {
				s.Resources.Requests = etcdv1.ResourceList{corev1.ResourceCPU: "20m", corev1.ResourceMemory: "160Mi"}
			}, func(_ *etcdv1.EtcdCluster, pods []corev1.Pod) error {
				for _, p := range pods {
					if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "20m" {
						return fmt.Errorf("pod %s requests cpu %s", p.Name, got.String())
					}
				}
				return nil
			})
			e.roll("a new extra flag", func(s *etcdv1.EtcdClusterSpec) {
				s.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"max-txn-ops": "256"}
			}, func(_ *etcdv1.EtcdCluster, pods []corev1.Pod) error {
				for _, p := range pods {
					if !slices.Contains(p.Spec.Containers[0].Args, "--max-txn-ops=256") {
						return fmt.Errorf("pod %s args %v", p.Name, p.Spec.Containers[0].Args)
					}
				}
				return nil
			})
			e.stuckThenReverted()
			e.rejectedThenReverted()
		},
	})
}

// roll changes the spec and waits until every member runs it: the cluster
// converged for the new generation, each member's Pod built from its
// member's current spec (and, for each member whose spec the change
// touched, started after it), and check passing. Available must stay True
// throughout.
func (e *faultEnv) roll(what string, change func(*etcdv1.EtcdClusterSpec), check func(*etcdv1.EtcdCluster, []corev1.Pod) error) {
	e.t.Helper()
	before := e.memberPods()
	hashes := map[string]string{}
	for _, m := range e.members() {
		hashes[m.Name] = resources.PodSpecHash(&m)
	}
	e.patchSpec(change)
	e.faults++
	start := time.Now()
	e.t.Logf("%s: spec changed", what)
	unavailable := ""
	waitFor(e.ctx, e.t, rollBound, what+" rolled out", func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		ok, err := e.k.converged(e.ctx, e.key, 3, c)
		if a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable); a != nil && a.Status != metav1.ConditionTrue && unavailable == "" {
			unavailable = fmt.Sprintf("%s: %s", a.Reason, a.Message)
		}
		if !ok {
			return false, err
		}
		pods := e.memberPods()
		for _, m := range e.members() {
			p, ok := pods[m.Name]
			if !ok {
				return false, fmt.Errorf("no pod for %s", m.Name)
			}
			if p.Annotations[etcdv1.PodSpecHashAnnotation] != resources.PodSpecHash(&m) {
				return false, fmt.Errorf("pod %s built from another spec than its member's", p.Name)
			}
			if old, ok := before[m.Name]; ok && old.UID == p.UID && hashes[m.Name] != resources.PodSpecHash(&m) {
				return false, fmt.Errorf("pod %s not restarted yet", p.Name)
			}
		}
		return true, check(c, slices.Collect(func(yield func(corev1.Pod) bool) {
			for _, p := range pods {
				if !yield(p) {
					return
				}
			}
		}))
	})
	if unavailable != "" {
		e.t.Errorf("%s: the cluster was not Available during the rolling change: %s", what, unavailable)
	}
	e.t.Logf("%s: every member restarted and converged in %.1fs", what, time.Since(start).Seconds())
}

// stuckThenReverted sets an image no node has: the first member restarted
// cannot run it, the rollout stops there (Degraded, RolloutStuck, naming
// it) and touches no other member; reverting the image resumes, the stuck
// member first.
func (e *faultEnv) stuckThenReverted() {
	e.t.Helper()
	e.patchSpec(func(s *etcdv1.EtcdClusterSpec) { s.Image = "quay.io/coreos/etcd:v0.0.0-missing" })
	e.faults++
	var stuckAt string
	waitFor(e.ctx, e.t, rollBound, "the rollout of a missing image to stop", func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
			return false, err
		}
		d := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionDegraded)
		if d == nil || d.Reason != etcdv1.ReasonRolloutStuck || d.ObservedGeneration != c.Generation {
			return false, fmt.Errorf("degraded %+v", d)
		}
		for _, m := range e.members() {
			if strings.Contains(d.Message, "stopped at member "+m.Name) {
				stuckAt = m.Name
			}
		}
		return stuckAt != "", fmt.Errorf("message %q names no member", d.Message)
	})
	e.t.Logf("the rollout stopped at %s", stuckAt)
	// Long enough for a rollout that went on to touch the next member.
	time.Sleep(10 * time.Second)
	bad := 0
	for _, p := range e.memberPods() {
		if strings.HasSuffix(p.Spec.Containers[0].Image, "v0.0.0-missing") {
			bad++
			if p.Name != stuckAt {
				e.t.Errorf("pod %s got the missing image, the rollout stopped at %s", p.Name, stuckAt)
			}
		}
	}
	if bad != 1 {
		e.t.Errorf("%d pods got the missing image, want 1", bad)
	}
	c := &etcdv1.EtcdCluster{}
	if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
		e.t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionAvailable) {
		e.t.Errorf("not Available while one member is stuck: %v", c.Status.Conditions)
	}
	e.roll("the image set back", func(s *etcdv1.EtcdClusterSpec) { s.Image = "" }, func(_ *etcdv1.EtcdCluster, pods []corev1.Pod) error {
		for _, p := range pods {
			if strings.HasSuffix(p.Spec.Containers[0].Image, "v0.0.0-missing") {
				return fmt.Errorf("pod %s still runs the missing image", p.Name)
			}
		}
		return nil
	})
}

// rejectedThenReverted sets resources the API server refuses in a Pod
// (a request above its limit; the CRD lets it through): the member
// controller's dry run finds it before any Pod is deleted, so no Pod
// restarts, the cluster stays Available and says Degraded PodRejected with
// the API server's message; setting it back clears that, with the same
// Pods.
func (e *faultEnv) rejectedThenReverted() {
	e.t.Helper()
	before := e.memberPods()
	c := &etcdv1.EtcdCluster{}
	if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
		e.t.Fatal(err)
	}
	previous := c.Spec.Resources.DeepCopy()
	e.patchSpec(func(s *etcdv1.EtcdClusterSpec) {
		s.Resources.Requests = maps.Clone(s.Resources.Requests)
		if s.Resources.Requests == nil {
			s.Resources.Requests = etcdv1.ResourceList{}
		}
		s.Resources.Requests[corev1.ResourceCPU] = "200m"
		s.Resources.Limits = etcdv1.ResourceList{corev1.ResourceCPU: "100m"}
	})
	e.faults++
	waitFor(e.ctx, e.t, rollBound, "Degraded PodRejected", func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
			return false, err
		}
		d := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionDegraded)
		if d == nil || d.Reason != etcdv1.ReasonPodRejected || d.ObservedGeneration != c.Generation {
			return false, fmt.Errorf("degraded %+v", d)
		}
		if !strings.Contains(d.Message, "must be less than or equal to cpu limit") {
			return false, fmt.Errorf("the message lacks the API server's: %s", d.Message)
		}
		if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionAvailable) {
			return false, fmt.Errorf("not Available while a spec is refused: %v", c.Status.Conditions)
		}
		return true, nil
	})
	// Back to exactly the resources the members run.
	e.patchSpec(func(s *etcdv1.EtcdClusterSpec) { s.Resources = *previous })
	e.ended()
	e.converged(3)
	for name, p := range e.memberPods() {
		if was, ok := before[name]; !ok || was.UID != p.UID {
			e.t.Errorf("pod %s was restarted for a spec the API server refuses", name)
		}
	}
}

// patchSpec changes the cluster's spec with a merge patch.
func (e *faultEnv) patchSpec(change func(*etcdv1.EtcdClusterSpec)) {
	e.t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := e.k.c.Get(e.ctx, e.key, c); err != nil {
		e.t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	change(&c.Spec)
	if err := e.k.c.Patch(e.ctx, c, patch); err != nil {
		e.t.Fatal(err)
	}
}

// memberPods are the cluster's member Pods by name.
func (e *faultEnv) memberPods() map[string]corev1.Pod {
	e.t.Helper()
	list := &corev1.PodList{}
	if err := e.k.c.List(e.ctx, list, client.InNamespace(e.key.Namespace), client.MatchingLabels{etcdv1.ClusterLabel: e.key.Name}); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if _, ok := p.Labels[etcdv1.MemberLabel]; ok && p.DeletionTimestamp.IsZero() {
			out[p.Name] = p
		}
	}
	return out
}
