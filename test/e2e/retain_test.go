//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestDeletionPolicyRetain: a cluster deleted with spec.deletionPolicy
// Retain leaves its members' PVCs, labelled with the cluster's name, and
// the data on them is the cluster's: etcdutl reads every key written
// before the deletion from the retained database file. The member Pods
// also show the defaults a production cluster needs: requests (so they
// are not BestEffort) and a soft spread over nodes.
func TestDeletionPolicyRetain(t *testing.T) {
	parallel(t)
	f := features.New("deletion policy").
		Assess("Retain keeps the volumes and their data", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			c := newCluster(ns, "keep", 1)
			c.Spec.DeletionPolicy = etcdv1.DeletionPolicyRetain
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 1, 3*time.Minute)
			cli := etcdClient(ctx, t, k, key)
			const keys = 50
			for i := range keys {
				if _, err := cli.Put(ctx, fmt.Sprintf("keep/%03d", i), "v"); err != nil {
					t.Fatalf("put: %v", err)
				}
			}
			_ = cli.Close()

			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns)); err != nil || len(members.Items) != 1 {
				t.Fatalf("members %v: %v", len(members.Items), err)
			}
			name := members.Items[0].Name
			pod := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
				t.Fatal(err)
			}
			if pod.Status.QOSClass == corev1.PodQOSBestEffort {
				t.Errorf("member Pod is BestEffort: %+v", pod.Spec.Containers[0].Resources)
			}
			if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
				t.Errorf("member Pod has no spreading preference: %+v", a)
			}

			if err := k.c.Delete(ctx, c); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 2*time.Minute, "cluster, member and Pod gone", func() (bool, error) {
				for _, obj := range []client.Object{&etcdv1.EtcdCluster{}, &etcdv1.EtcdMember{}, &corev1.Pod{}} {
					n := name
					if _, ok := obj.(*etcdv1.EtcdCluster); ok {
						n = key.Name
					}
					err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, obj)
					if !apierrors.IsNotFound(err) {
						return false, ignoreNotFound(err)
					}
				}
				return true, nil
			})
			// The garbage collector has had its chance: the PVC stays.
			time.Sleep(5 * time.Second)
			pvcs := &corev1.PersistentVolumeClaimList{}
			if err := k.c.List(ctx, pvcs, client.InNamespace(ns), client.MatchingLabels{etcdv1.RetainedFromLabel: key.Name}); err != nil {
				t.Fatal(err)
			}
			if len(pvcs.Items) != 1 {
				t.Fatalf("%d PVCs labelled %s=%s, want 1", len(pvcs.Items), etcdv1.RetainedFromLabel, key.Name)
			}
			pvc := pvcs.Items[0]
			if !pvc.DeletionTimestamp.IsZero() || len(pvc.OwnerReferences) != 0 || pvc.Labels[etcdv1.RetainedMemberLabel] != name {
				t.Fatalf("retained PVC %s: deleting %v, owners %v, labels %v", pvc.Name, !pvc.DeletionTimestamp.IsZero(), pvc.OwnerReferences, pvc.Labels)
			}

			out, err := k.runPodSpec(ctx, ns, corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532)},
				Containers: []corev1.Container{restrictedContainer(corev1.Container{
					Name: "read", Image: etcdImage(),
					Command:      []string{"/usr/local/bin/etcdutl", "snapshot", "status", "/var/lib/etcd/data/member/snap/db", "-w", "json"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd", ReadOnly: true}},
				})},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name, ReadOnly: true}}}},
			})
			if err != nil {
				t.Fatalf("read the retained database: %v", err)
			}
			var status struct {
				TotalKey int `json:"totalKey"`
			}
			if err := json.Unmarshal([]byte(lastLine(out)), &status); err != nil {
				t.Fatalf("etcdutl output %q: %v", out, err)
			}
			if status.TotalKey < keys {
				t.Errorf("retained database holds %d keys, want at least the %d written", status.TotalKey, keys)
			}
			t.Logf("retained PVC %s holds %d keys", pvc.Name, status.TotalKey)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// lastLine is the last line of a Pod's output (tools may log before it).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
