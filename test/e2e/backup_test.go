//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// putKeys writes n keys under prefix and returns them with their values.
func putKeys(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, n int) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("%s%04d", prefix, i), fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50))
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cli.Put(c, k, v)
		cancel()
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		want[k] = v
	}
	return want
}

// readAll reads every key under prefix.
func readAll(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) map[string]string {
	t.Helper()
	var resp *clientv3.GetResponse
	waitFor(ctx, t, time.Minute, "read "+prefix, func() (bool, error) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		resp, err = cli.Get(c, prefix, clientv3.WithPrefix())
		return err == nil, err
	})
	have := map[string]string{}
	for _, kv := range resp.Kvs {
		have[string(kv.Key)] = string(kv.Value)
	}
	return have
}

func sameData(t *testing.T, want, have map[string]string) {
	t.Helper()
	bad := 0
	for k, v := range want {
		if have[k] != v {
			bad++
		}
	}
	if bad > 0 || len(have) != len(want) {
		t.Fatalf("%d of %d keys differ; %d keys read", bad, len(want), len(have))
	}
	t.Logf("all %d keys and values match", len(want))
}

func waitCondition(ctx context.Context, t *testing.T, k *kube, obj client.Object, conds func() []metav1.Condition, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	waitFor(ctx, t, timeout, fmt.Sprintf("%s %s=%s (%s)", obj.GetName(), typ, status, reason), func() (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		got = meta.FindStatusCondition(conds(), typ)
		if got == nil {
			return false, fmt.Errorf("no %s condition yet", typ)
		}
		return got.Status == status && (reason == "" || got.Reason == reason) && got.ObservedGeneration == obj.GetGeneration(),
			fmt.Errorf("%s is %s (%s): %s", typ, got.Status, got.Reason, got.Message)
	})
	return got
}

func backupComplete(ctx context.Context, t *testing.T, k *kube, b *etcdv1.EtcdBackup) {
	t.Helper()
	waitFor(ctx, t, 3*time.Minute, "backup "+b.Name+" Complete", func() (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		if f := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionFailed); f != nil && f.Status == metav1.ConditionTrue {
			t.Fatalf("backup %s failed: %s", b.Name, f.Message)
		}
		c := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionComplete)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Errorf("conditions %v", b.Status.Conditions)
	})
}

func clusterPods(ctx context.Context, t *testing.T, k *kube, ns, cluster string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: cluster}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// TestBackups runs the data-keeping features side by side in one
// namespace: each waits mostly on time (schedules, Pods starting).
func TestBackups(t *testing.T) {
	restore := features.New("backup and restore").
		Assess("a backup to S3 restores into a new cluster with every key; a damaged one starts nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			key, cli := runningCluster(ctx, t, k, "source", 3)
			want := putKeys(ctx, t, cli, "data/", 500)
			dest := s3srv.destination(ctx, t, k, "restore-test/")

			b := &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns},
				Spec: etcdv1.EtcdBackupSpec{ClusterName: key.Name, Destination: dest}}
			start := time.Now()
			if err := k.c.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			backupComplete(ctx, t, k, b)
			t.Logf("backup Complete %.1fs after create: %d bytes, revision %d, member %s, %s", time.Since(start).Seconds(), b.Status.Size, b.Status.Revision, b.Status.Member, b.Status.URI)
			if b.Status.Revision < 500 || b.Status.SHA256 == "" || b.Status.Size == 0 {
				t.Errorf("backup status lacks a revision of at least 500, a sha256 or a size: %+v", b.Status)
			}
			// The operator reports each member's database size from its health checks.
			waitFor(ctx, t, 2*time.Minute, "the database size of each member on /metrics", func() (bool, error) {
				out, err := k.operatorMetrics(ctx)
				n := 0
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "raftsman_etcdmember_db_size_bytes{") && strings.Contains(line, fmt.Sprintf(`,name="source",namespace=%q}`, ns)) {
						n++
					}
				}
				return n == 3, fmt.Errorf("%d series (%v)", n, err)
			})
			src := getCluster(ctx, t, k, key)
			for _, m := range src.Status.Members {
				if m.Name == b.Status.Member && m.Leader && len(src.Status.Members) > 1 {
					t.Errorf("the snapshot came from the leader %s although followers were healthy", m.Name)
				}
			}
			objs, err := s3srv.objects(ctx, "restore-test/")
			if err != nil {
				t.Fatal(err)
			}
			obj, ok := objs["restore-test/"+b.Status.Key]
			if !ok || obj.Size != b.Status.Size || len(objs) != 1 {
				t.Fatalf("S3 holds %v, want exactly %s of %d bytes", objs, b.Status.Key, b.Status.Size)
			}

			restored := newCluster(ns, "restored", 3)
			restored.Spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: b.Name}}
			start = time.Now()
			if err := k.c.Create(ctx, restored); err != nil {
				t.Fatal(err)
			}
			rkey := client.ObjectKeyFromObject(restored)
			rc := waitConverged(ctx, t, k, rkey, 3, 4*time.Minute)
			t.Logf("restored cluster of 3 Available %.1fs after create", time.Since(start).Seconds())
			if rc.Status.ClusterID == src.Status.ClusterID {
				t.Errorf("the restored cluster has the source's cluster ID %s", rc.Status.ClusterID)
			}
			sameData(t, want, readAll(ctx, t, etcdClient(ctx, t, k, rkey), "data/"))

			// Damage the snapshot: same size, same recorded checksum.
			if err := s3srv.corrupt(ctx, "restore-test/"+b.Status.Key); err != nil {
				t.Fatal(err)
			}
			bad := newCluster(ns, "from-damaged", 1)
			bad.Spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: b.Name}}
			if err := k.c.Create(ctx, bad); err != nil {
				t.Fatal(err)
			}
			cond := waitCondition(ctx, t, k, bad, func() []metav1.Condition { return bad.Status.Conditions }, etcdv1.ConditionRestoreReady, metav1.ConditionFalse, etcdv1.ReasonChecksumMismatch, 2*time.Minute)
			t.Logf("RestoreReady False %s: %s", cond.Reason, cond.Message)
			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: bad.Name}); err != nil {
				t.Fatal(err)
			}
			if n := len(members.Items) + len(clusterPods(ctx, t, k, ns, bad.Name)); n != 0 {
				t.Fatalf("a damaged snapshot started %d members or Pods", n)
			}
			return ctx
		}).Feature()

	suspend := features.New("suspend and resume").
		Assess("a suspended cluster runs no Pod, keeps its volumes, and comes back with the same IDs and data", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			key, cli := runningCluster(ctx, t, k, "sleepy", 3)
			want := putKeys(ctx, t, cli, "keep/", 300)
			before := memberIDs(ctx, t, cli)
			c := getCluster(ctx, t, k, key)
			clusterID := c.Status.ClusterID

			// A schedule that never fires in the test: only the final backup runs.
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "0 0 1 1 *", Destination: s3srv.destination(ctx, t, k, "suspend-test/")}
			c.Spec.Suspend = true
			start := time.Now()
			if err := k.c.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
			waitCondition(ctx, t, k, c, func() []metav1.Condition { return c.Status.Conditions }, etcdv1.ConditionSuspended, metav1.ConditionTrue, etcdv1.ReasonSuspended, 3*time.Minute)
			waitFor(ctx, t, 2*time.Minute, "no etcd Pod of sleepy", func() (bool, error) {
				n := len(clusterPods(ctx, t, k, ns, key.Name))
				return n == 0, fmt.Errorf("%d Pods", n)
			})
			t.Logf("suspended, all Pods gone %.1fs after spec.suspend", time.Since(start).Seconds())
			pvcs := &corev1.PersistentVolumeClaimList{}
			if err := k.c.List(ctx, pvcs, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: key.Name}); err != nil {
				t.Fatal(err)
			}
			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: key.Name}); err != nil {
				t.Fatal(err)
			}
			if len(pvcs.Items) != 3 || len(members.Items) != 3 {
				t.Fatalf("suspended: %d PVCs and %d EtcdMembers, want 3 and 3", len(pvcs.Items), len(members.Items))
			}
			final := &etcdv1.EtcdBackup{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("sleepy-suspend-%d", c.Generation)}, final); err != nil {
				t.Fatalf("the final backup: %v", err)
			}
			if !meta.IsStatusConditionTrue(final.Status.Conditions, etcdv1.ConditionComplete) {
				t.Fatalf("the final backup is not Complete: %v", final.Status.Conditions)
			}
			if c.Status.Replicas != 3 || ptr.Deref(c.Spec.Replicas, 0) != 3 {
				t.Errorf("replicas changed by suspend: spec %d status %d", ptr.Deref(c.Spec.Replicas, 0), c.Status.Replicas)
			}

			patch = client.MergeFrom(c.DeepCopy())
			c.Spec.Suspend = false
			start = time.Now()
			if err := k.c.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
			c = waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			t.Logf("resumed and Available %.1fs after spec.suspend=false", time.Since(start).Seconds())
			if c.Status.ClusterID != clusterID {
				t.Errorf("cluster ID %s after resume, want %s", c.Status.ClusterID, clusterID)
			}
			cli2 := etcdClient(ctx, t, k, key)
			after := memberIDs(ctx, t, cli2)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("member IDs changed: before %v after %v", before, after)
			}
			sameData(t, want, readAll(ctx, t, cli2, "keep/"))
			return ctx
		}).Feature()

	schedule := features.New("scheduled backups").
		Assess("backups every minute keep exactly the last two", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			c := newCluster(ns, "ticker", 1)
			c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "* * * * *", Retention: etcdv1.BackupRetention{KeepLast: ptr.To[int32](2)},
				Destination: s3srv.destination(ctx, t, k, "schedule-test/")}
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 1, 3*time.Minute)
			// Three scheduled times pass: three backups were made, one expired.
			seen := map[string]bool{}
			waitFor(ctx, t, 5*time.Minute, "three scheduled backups", func() (bool, error) {
				list := &etcdv1.EtcdBackupList{}
				if err := k.c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: key.Name, etcdv1.BackupKindLabel: "scheduled"}); err != nil {
					return false, err
				}
				for _, b := range list.Items {
					seen[b.Name] = true
				}
				return len(seen) >= 3, fmt.Errorf("%d seen", len(seen))
			})
			var names []string
			waitFor(ctx, t, time.Minute, "exactly two complete backups in the cluster and in S3", func() (bool, error) {
				list := &etcdv1.EtcdBackupList{}
				if err := k.c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: key.Name}); err != nil {
					return false, err
				}
				names = names[:0]
				complete := 0
				for _, b := range list.Items {
					names = append(names, b.Name)
					if meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1.ConditionComplete) {
						complete++
					}
				}
				objs, err := s3srv.objects(ctx, "schedule-test/")
				if err != nil {
					return false, err
				}
				// A third may be running right at a minute's turn.
				return complete == 2 && len(objs) == 2 && len(list.Items) == 2, fmt.Errorf("backups %v (%d complete), %d objects", names, complete, len(objs))
			})
			c = getCluster(ctx, t, k, key)
			if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionBackupReady) || c.Status.Backup == nil || c.Status.Backup.LastSuccessfulBackup == nil {
				t.Fatalf("BackupReady or lastSuccessfulBackup missing: %v %+v", c.Status.Conditions, c.Status.Backup)
			}
			t.Logf("%d scheduled backups seen, kept %v; last successful %s", len(seen), names, c.Status.Backup.LastSuccessfulBackup.URI)
			return ctx
		}).Feature()

	storage := features.New("storage growth").
		Assess("spec.storage.size grows every volume online; a class without expansion says so", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			fixed := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed-" + ns}, Provisioner: "rancher.io/local-path",
				AllowVolumeExpansion: ptr.To(false), VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}
			if err := k.c.Create(ctx, fixed); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.c.Delete(context.Background(), fixed) })
			stop := startResizer(ctx, t, k, ns)
			defer stop()

			key, cli := runningCluster(ctx, t, k, "grow", 1)
			want := putKeys(ctx, t, cli, "grow/", 100)
			stuck := newCluster(ns, "stuck", 1)
			stuck.Spec.Storage.StorageClassName = ptr.To(fixed.Name)
			if err := k.c.Create(ctx, stuck); err != nil {
				t.Fatal(err)
			}
			waitConverged(ctx, t, k, client.ObjectKeyFromObject(stuck), 1, 3*time.Minute)

			for _, name := range []string{"grow", "stuck"} {
				c := getCluster(ctx, t, k, client.ObjectKey{Namespace: ns, Name: name})
				patch := client.MergeFrom(c.DeepCopy())
				c.Spec.Storage.Size = ptr.To(resource.MustParse("256Mi"))
				if err := k.c.Patch(ctx, c, patch); err != nil {
					t.Fatal(err)
				}
			}
			g := getCluster(ctx, t, k, key)
			waitCondition(ctx, t, k, g, func() []metav1.Condition { return g.Status.Conditions }, etcdv1.ConditionStorageReady, metav1.ConditionTrue, etcdv1.ReasonVolumesMatch, 2*time.Minute)
			pvc := &corev1.PersistentVolumeClaim{}
			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: "grow"}); err != nil || len(members.Items) != 1 {
				t.Fatalf("members of grow: %v", err)
			}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + members.Items[0].Name}, pvc); err != nil {
				t.Fatal(err)
			}
			if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.Cmp(resource.MustParse("256Mi")) != 0 {
				t.Fatalf("PVC capacity %s, want 256Mi", got.String())
			}
			waitConverged(ctx, t, k, key, 1, time.Minute)
			sameData(t, want, readAll(ctx, t, cli, "grow/"))

			s := getCluster(ctx, t, k, client.ObjectKey{Namespace: ns, Name: "stuck"})
			cond := waitCondition(ctx, t, k, s, func() []metav1.Condition { return s.Status.Conditions }, etcdv1.ConditionStorageReady, metav1.ConditionFalse, etcdv1.ReasonExpansionNotSupported, 2*time.Minute)
			if !strings.Contains(cond.Message, fixed.Name) {
				t.Errorf("the message does not name the class: %s", cond.Message)
			}
			t.Logf("StorageReady False: %s", cond.Message)

			// A size under etcd's minimum is refused by the API server (a
			// smaller size above it replaces the members: the robustness
			// scenario storage-migration-operator-killed moves a cluster to smaller volumes).
			c := getCluster(ctx, t, k, key)
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Storage.Size = ptr.To(resource.MustParse("64Mi"))
			if err := k.c.Patch(ctx, c, patch); err == nil || !strings.Contains(err.Error(), "of at least 128Mi") {
				t.Fatalf("a size under 128Mi was not refused: %v", err)
			}
			return ctx
		}).Feature()

	pvc := features.New("backup to a PVC").
		Assess("a backup to a PVC restores into a new cluster", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backups", Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")}},
			}}
			if err := k.c.Create(ctx, claim); err != nil {
				t.Fatal(err)
			}
			key, cli := runningCluster(ctx, t, k, "onpvc", 1)
			want := putKeys(ctx, t, cli, "pvc/", 200)
			b := &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "to-pvc", Namespace: ns}, Spec: etcdv1.EtcdBackupSpec{
				ClusterName: key.Name, Destination: etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: claim.Name, Path: "etcd"}},
			}}
			if err := k.c.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			backupComplete(ctx, t, k, b)
			t.Logf("backup to the PVC Complete: %d bytes at %s", b.Status.Size, b.Status.URI)
			if want := "pvc://backups/etcd/" + ns + "/onpvc/to-pvc.db"; b.Status.URI != want {
				t.Errorf("URI %s, want %s", b.Status.URI, want)
			}
			restored := newCluster(ns, "frompvc", 1)
			restored.Spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: b.Name}}
			if err := k.c.Create(ctx, restored); err != nil {
				t.Fatal(err)
			}
			rkey := client.ObjectKeyFromObject(restored)
			waitConverged(ctx, t, k, rkey, 1, 3*time.Minute)
			sameData(t, want, readAll(ctx, t, etcdClient(ctx, t, k, rkey), "pvc/"))
			return ctx
		}).Feature()

	testEach(t, restore, suspend, schedule, storage, pvc)
}

// startResizer stands in for a volume driver's resizer, which the local
// cluster's directory volumes do not have: it gives a PVC of the test's
// namespace the capacity it asks for, on its PV and in its status, as a
// CSI resizer does once the driver grew the volume.
func startResizer(ctx context.Context, t *testing.T, k *kube, ns string) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pvcs := &corev1.PersistentVolumeClaimList{}
			if err := k.c.List(ctx, pvcs, client.InNamespace(ns)); err == nil {
				for i := range pvcs.Items {
					resize(ctx, t, k, &pvcs.Items[i])
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return func() { cancel(); <-done }
}

func resize(ctx context.Context, t *testing.T, k *kube, pvc *corev1.PersistentVolumeClaim) {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if pvc.Status.Phase != corev1.ClaimBound || want.Cmp(have) <= 0 || pvc.Spec.VolumeName == "" {
		return
	}
	pv := &corev1.PersistentVolume{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return
	}
	patch := client.MergeFrom(pv.DeepCopy())
	pv.Spec.Capacity[corev1.ResourceStorage] = want
	if err := k.c.Patch(ctx, pv, patch); err != nil {
		return
	}
	spatch := client.MergeFrom(pvc.DeepCopy())
	pvc.Status.Capacity[corev1.ResourceStorage] = want
	if err := k.c.Status().Patch(ctx, pvc, spatch); err == nil {
		t.Logf("resized %s to %s", pvc.Name, want.String())
	}
}
