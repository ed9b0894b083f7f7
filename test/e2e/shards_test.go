//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/scrape"
	"github.com/raftsman/raftsman/pkg/shard"
)

// setOperator runs the operator with n replicas and the given shard count,
// and waits until n of its Pods are ready.
func (k *kube) setOperator(ctx context.Context, t *testing.T, replicas int32, shards int) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "raftsman"}, d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(replicas)
		args := slices.DeleteFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--shards=") })
		d.Spec.Template.Spec.Containers[0].Args = append(args, fmt.Sprintf("--shards=%d", shards))
		return k.c.Update(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 3*time.Minute, fmt.Sprintf("%d operator replicas with %d shards", replicas, shards), func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "raftsman"}, d); err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := k.c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && slices.Contains(p.Spec.Containers[0].Args, fmt.Sprintf("--shards=%d", shards)) {
				ready++
			}
		}
		return d.Status.ObservedGeneration == d.Generation && ready == int(replicas) && len(pods.Items) == int(replicas), nil
	})
}

func (k *kube) shardHolder(ctx context.Context, i int) (string, error) {
	l := &coordinationv1.Lease{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: shard.LeaseName(i)}, l); err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

func TestShardsOverTwoReplicas(t *testing.T) {
	serial(t, "it runs the operator as two replicas and kills a shard holder")
	f := features.New("shards").
		Assess("two replicas with two shards manage six clusters; a replica's death moves its shard", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			k.setOperator(ctx, t, 2, 2)
			t.Cleanup(func() { k.setOperator(context.Background(), t, 1, 1) })

			var keys []client.ObjectKey
			for i := range 6 {
				c := newCluster(ns, fmt.Sprintf("s%d", i), 1)
				if err := k.c.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, client.ObjectKeyFromObject(c))
			}
			for _, key := range keys {
				waitConverged(ctx, t, k, key, 1, 3*time.Minute)
			}
			holders := map[int]string{}
			for i := range 2 {
				h, err := k.shardHolder(ctx, i)
				if err != nil || h == "" {
					t.Fatalf("shard %d has no holder (%v)", i, err)
				}
				holders[i] = h
			}
			t.Logf("shard holders %v", holders)
			for _, key := range keys {
				c := getCluster(ctx, t, k, key)
				if want := shard.Label(shard.Of(key.Namespace, key.Name, 2)); c.Labels[etcdv1.ShardLabel] != want {
					t.Errorf("%s: shard label %q, want %q", key.Name, c.Labels[etcdv1.ShardLabel], want)
				}
			}

			// Kill the holder of the shard of the first cluster, without a
			// chance to hand its Lease back.
			victimShard := shard.Of(keys[0].Namespace, keys[0].Name, 2)
			victim := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: holders[victimShard]}, victim); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := k.c.Delete(ctx, victim, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			// A cluster of that shard keeps converging: scale it up.
			setReplicas(ctx, t, k, keys[0], 3)
			waitConverged(ctx, t, k, keys[0], 3, 4*time.Minute)
			h, err := k.shardHolder(ctx, victimShard)
			if err != nil || h == victim.Name {
				t.Errorf("shard %d still held by the dead %s (%v)", victimShard, h, err)
			}
			t.Logf("shard %d moved to %s; its cluster scaled to 3 %.1fs after the holder died", victimShard, h, time.Since(start).Seconds())

			// Every replica reports the conditions of the clusters of its
			// shards, and which shards it holds.
			seen := map[string]bool{}
			waitFor(ctx, t, 2*time.Minute, "every cluster's Available series on some replica", func() (bool, error) {
				pods := &corev1.PodList{}
				if err := k.c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
					return false, err
				}
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil || !podReady(&p) {
						continue
					}
					out, err := scrape.Operator(ctx, k.cs, &p, operatorNamespace, metricsReader)
					if err != nil {
						t.Logf("scrape %s: %v", p.Name, err)
						continue
					}
					for _, key := range keys {
						series := fmt.Sprintf(`raftsman_etcdcluster_status_condition{name=%q,namespace=%q,reason="QuorumHealthy",status="True",type="Available"} 1`, key.Name, key.Namespace)
						if strings.Contains(out, series) {
							seen[key.Name] = true
						}
					}
					if !strings.Contains(out, "raftsman_shard_leader{shard=") {
						return false, fmt.Errorf("no raftsman_shard_leader on %s", p.Name)
					}
				}
				return len(seen) == len(keys), fmt.Errorf("series of %v", seen)
			})
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
