//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestTenantWhoseEtcdHangs: one tenant's etcd stops answering (its process
// paused, as a hung node or a full disk leaves it), in a namespace of its
// own, while another tenant scales with a client writing. The other tenant
// scales and keeps every acknowledged write; the hung tenant's cluster
// says its quorum is lost and nothing is done to it, and once its etcd goes
// on it is Available again with its data.
func TestTenantWhoseEtcdHangs(t *testing.T) {
	parallel(t)
	f := features.New("isolation").
		Assess("a tenant whose etcd hangs neither stops nor misleads the operator for another", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			hungNS := tenantNamespace(ctx, t, k)
			hung := newCluster(hungNS, "hung", 1)
			busy := newCluster(namespaceOf(ctx), "busy", 1)
			for _, c := range []*etcdv1.EtcdCluster{hung, busy} {
				if err := k.c.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			hungKey, busyKey := client.ObjectKeyFromObject(hung), client.ObjectKeyFromObject(busy)
			waitConverged(ctx, t, k, hungKey, 1, 3*time.Minute)
			waitConverged(ctx, t, k, busyKey, 1, 3*time.Minute)
			hungCli := etcdClient(ctx, t, k, hungKey)
			before := startWriter(ctx, hungCli, "hung/")
			// Some writes acknowledged before the hang, however busy the
			// machine is (one second gave none in one run).
			waitFor(ctx, t, time.Minute, "writes acknowledged by the cluster that will hang", func() (bool, error) {
				return before.ackedSoFar() >= 20, nil
			})
			hungAcked, _ := before.stop()

			members := membersOf(ctx, t, k, hungKey)
			if len(members) != 1 {
				t.Fatalf("hung cluster members: %d, want 1", len(members))
			}
			pid, err := pause(members[0].Name)
			if err != nil {
				t.Fatal(err)
			}
			resumed := false
			defer func() {
				if !resumed {
					_ = resume(pid)
				}
			}()
			t.Logf("paused etcd of %s/%s (pid %d)", hungNS, members[0].Name, pid)

			// The other tenant scales 1 -> 3 while the first one hangs. The
			// hung one is checked meanwhile: the kubelet restarts a paused
			// etcd once its liveness probe has failed for 2 minutes.
			busyCli := etcdClient(ctx, t, k, busyKey)
			w := startWriter(ctx, busyCli, "busy/")
			start := time.Now()
			setReplicas(ctx, t, k, busyKey, 3)

			// The hung tenant is told the truth, and nothing is done to it:
			// still one member, the same one, and no recovery (Manual).
			waitFor(ctx, t, time.Minute, "the hung cluster to say its quorum is lost", func() (bool, error) {
				c := &etcdv1.EtcdCluster{}
				if err := k.c.Get(ctx, hungKey, c); err != nil {
					return false, err
				}
				a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
				return a != nil && a.Status == metav1.ConditionFalse && a.Reason == etcdv1.ReasonQuorumLost, nil
			})
			t.Logf("the hung cluster says QuorumLost %.1fs after the pause", time.Since(start).Seconds())

			waitConverged(ctx, t, k, busyKey, 3, 3*time.Minute)
			t.Logf("the other tenant scaled 1 -> 3 in %.1fs while the first one's etcd hung", time.Since(start).Seconds())
			acked, failed := w.stop()
			t.Logf("writer: %d acknowledged, %d failed and retried", len(acked), failed)
			checkKeys(ctx, t, busyCli, "busy/", acked)

			if now := membersOf(ctx, t, k, hungKey); len(now) != 1 || now[0].Name != members[0].Name || now[0].Status.MemberID != members[0].Status.MemberID {
				t.Fatalf("the hung cluster's members changed while it hung: %v (was %s, ID %s)", memberNames(now), members[0].Name, members[0].Status.MemberID)
			}
			c := &etcdv1.EtcdCluster{}
			if err := k.c.Get(ctx, hungKey, c); err != nil {
				t.Fatal(err)
			}
			if c.Status.Recovery != nil {
				t.Fatalf("a recovery started for a cluster whose member only hangs: %+v", c.Status.Recovery)
			}

			if err := resume(pid); err != nil {
				// Gone: the kubelet restarted it (liveness), which ends
				// the hang the same way.
				t.Logf("resume %d: %v", pid, err)
			}
			resumed = true
			waitConverged(ctx, t, k, hungKey, 1, 3*time.Minute)
			checkKeys(ctx, t, hungCli, "hung/", hungAcked)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// tenantNamespace makes a second namespace for a test, as another tenant
// has, deleted with its clusters when the test ends.
func tenantNamespace(ctx context.Context, t *testing.T, k *kube) string {
	t.Helper()
	name, err := k.newNamespace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.removeNamespace(context.Background(), t, name) })
	t.Logf("second tenant's namespace %s", name)
	return name
}
