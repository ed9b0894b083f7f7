//go:build e2e

package e2e

// Self-healing on the local cluster, with a client writing: a Pod that
// fails, a member whose volume is recreated empty behind the operator's
// back, a member whose database file is overwritten on its volume, and two
// of three members lost for good (quorum loss), recovered by annotation
// and automatically, and all three lost, restored from the newest backup. A member on a lost node is left to the unit tests:
// the local cluster's one node cannot be lost, and the operator does not
// replace a member whose node is there and Ready.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// healBound is how long a healing may take on the local cluster.
const healBound = 3 * time.Minute

func TestSelfHealing(t *testing.T) {
	failed := features.New("failed pod").
		Assess("a member whose Pod fails gets a new Pod on its volume, same identity", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			key, cli := runningCluster(ctx, t, k, "failed", 3)
			w := startWriter(ctx, cli, "failed/")
			victim := pickMember(ctx, t, k, key, false)
			before := memberIDs(ctx, t, cli)
			old := &corev1.Pod{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: victim}, old); err != nil {
				t.Fatal(err)
			}
			// The kubelet ends a Pod past its active deadline with phase
			// Failed (reason DeadlineExceeded), as it does an evicted Pod or
			// one stopped by a node's graceful shutdown; it never restarts it.
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`))
			if err := k.c.Patch(ctx, old, patch); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			waitFor(ctx, t, healBound, "a new ready Pod of "+victim, func() (bool, error) {
				p := &corev1.Pod{}
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(old), p); err != nil {
					return false, ignoreNotFound(err)
				}
				return p.UID != old.UID && podReady(p), nil
			})
			waitConverged(ctx, t, k, key, 3, healBound)
			t.Logf("%s back on a new Pod in %.1fs", victim, time.Since(start).Seconds())
			after := memberIDs(ctx, t, cli)
			if before[victim] != after[victim] {
				t.Errorf("member %s changed its ID from %x to %x, want the same member", victim, before[victim], after[victim])
			}
			waitEventFor(ctx, t, k, key.Namespace, "PodFailed", victim)
			acked, _ := w.stop()
			checkKeys(ctx, t, cli, "failed/", acked)
			return ctx
		}).Feature()

	emptied := features.New("volume recreated empty").
		Assess("a member whose recorded volume is gone never starts again on an empty one: it is replaced", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			key, cli := runningCluster(ctx, t, k, "emptied", 3)
			w := startWriter(ctx, cli, "emptied/")
			victim := pickMember(ctx, t, k, key, false)
			oldID := memberIDs(ctx, t, cli)[victim]
			// The record of the volume is lost first (a status write that
			// never landed), then the volume and the Pod.
			m := &etcdv1.EtcdMember{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: victim}, m); err != nil {
				t.Fatal(err)
			}
			if err := k.c.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"status":{"pvcName":null}}`))); err != nil {
				t.Fatal(err)
			}
			if err := k.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: objectMeta(key.Namespace, "data-"+victim)}); err != nil {
				t.Fatal(err)
			}
			if err := k.c.Delete(ctx, &corev1.Pod{ObjectMeta: objectMeta(key.Namespace, victim)}, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			waitReplaced(ctx, t, k, key, cli, victim, oldID, nil)
			t.Logf("%s replaced in %.1fs", victim, time.Since(start).Seconds())
			acked, _ := w.stop()
			checkKeys(ctx, t, cli, "emptied/", acked)
			return ctx
		}).Feature()

	corrupted := features.New("data directory etcd refuses").
		Assess("a member whose etcd keeps exiting on a database it cannot open is replaced", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			key, cli := runningCluster(ctx, t, k, "corrupt", 3)
			w := startWriter(ctx, cli, "corrupt/")
			victim := pickMember(ctx, t, k, key, false)
			oldID := memberIDs(ctx, t, cli)[victim]
			// A Pod beside the member's, on its volume, overwrites the
			// first pages of the database file (both bbolt meta pages)
			// again and again, so that whichever etcd opens it next finds
			// no database; then the member's Pod goes.
			corruptor := corruptorPod(key.Namespace, "data-"+victim)
			if err := k.c.Create(ctx, corruptor); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.c.Delete(context.Background(), corruptor, client.GracePeriodSeconds(0)) })
			waitFor(ctx, t, time.Minute, "the corrupting Pod running", func() (bool, error) {
				p := &corev1.Pod{}
				err := k.c.Get(ctx, client.ObjectKeyFromObject(corruptor), p)
				return err == nil && p.Status.Phase == corev1.PodRunning, err
			})
			if err := k.c.Delete(ctx, &corev1.Pod{ObjectMeta: objectMeta(key.Namespace, victim)}, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			waitReplaced(ctx, t, k, key, cli, victim, oldID, func() { _ = k.c.Delete(ctx, corruptor, client.GracePeriodSeconds(0)) })
			t.Logf("%s replaced %.1fs after its Pod was deleted on a corrupted database", victim, time.Since(start).Seconds())
			waitEventFor(ctx, t, k, key.Namespace, "MemberLost", victim)
			acked, _ := w.stop()
			checkKeys(ctx, t, cli, "corrupt/", acked)
			return ctx
		}).Feature()

	// The manual recovery's cluster has a backup destination: the member
	// it is recovered from is snapshotted there before it is forced.
	manual := quorumLossFeature("manual", func(ctx context.Context, t *testing.T, k *kube, c *etcdv1.EtcdCluster) {
		c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "0 0 1 1 *", Destination: s3srv.destination(ctx, t, k, "ql-manual/")}
	}, true)
	automatic := quorumLossFeature("automatic", func(_ context.Context, _ *testing.T, _ *kube, c *etcdv1.EtcdCluster) {
		c.Spec.Recovery = etcdv1.RecoverySpec{QuorumLoss: etcdv1.QuorumLossAutomatic, QuorumLossAfter: "30s"}
	}, false)
	testEach(t, failed, emptied, corrupted, manual, automatic, allLostFeature())
}

// allLostFeature loses every member for good (Pods and volumes deleted)
// while a client writes, and restores the cluster's newest complete backup
// into the same EtcdCluster by the annotation: every write acknowledged
// before the backup began is there afterwards.
func allLostFeature() features.Feature {
	return features.New("all members lost").
		Assess("3 of 3 members lost: restored from the newest backup with every write acknowledged before it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := newCluster(namespaceOf(ctx), "ql-all", 3)
			c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "0 0 1 1 *", Destination: s3srv.destination(ctx, t, k, "ql-all/")}
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			before := waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			cli := etcdClient(ctx, t, k, key)
			w := startWriter(ctx, cli, "qla/before/")
			time.Sleep(3 * time.Second)
			acked, _ := w.stop()
			older := takeBackup(ctx, t, k, key, "ql-all-older", c.Spec.Backup.Destination)
			w = startWriter(ctx, cli, "qla/between/")
			time.Sleep(2 * time.Second)
			between, _ := w.stop()
			newest := takeBackup(ctx, t, k, key, "ql-all-newest", c.Spec.Backup.Destination)
			t.Logf("backups %s (revision %d) and %s (revision %d) Complete", older.Name, older.Status.Revision, newest.Name, newest.Status.Revision)
			// Writes go on until the members are lost; those after the
			// backup began may or may not be in it.
			w = startWriter(ctx, cli, "qla/after/")
			time.Sleep(2 * time.Second)
			members := membersOf(ctx, t, k, key)
			for _, m := range members {
				loseMember(ctx, t, k, key.Namespace, m.Name)
			}
			lostAt := time.Now()
			_, _ = w.stop()
			t.Logf("deleted the Pods and volumes of all %d members", len(members))
			waitFor(ctx, t, 2*time.Minute, "Available False, QuorumLost", func() (bool, error) {
				c := &etcdv1.EtcdCluster{}
				if err := k.c.Get(ctx, key, c); err != nil {
					return false, err
				}
				a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
				return a != nil && a.Reason == etcdv1.ReasonQuorumLost, fmt.Errorf("available %+v", a)
			})
			annotateRecovery(ctx, t, k, key, etcdv1.RecoverFromLatestBackup)
			annotatedAt := time.Now()
			waitRecovered(ctx, t, k, key, 6*time.Minute)
			t.Logf("restored and back at 3 members %.1fs after the loss, %.1fs after the annotation", time.Since(lostAt).Seconds(), time.Since(annotatedAt).Seconds())
			got := getCluster(ctx, t, k, key)
			rs := got.Status.Recovery
			if rs.Backup != newest.Name || rs.Revision != newest.Status.Revision || rs.Automatic || rs.Member != "" {
				t.Errorf("status.recovery %+v, want backup %s at revision %d, not automatic", rs, newest.Name, newest.Status.Revision)
			}
			if got.Status.ClusterID == "" || got.Status.ClusterID == before.Status.ClusterID {
				t.Errorf("cluster ID %q after the restore, want a new one (was %s)", got.Status.ClusterID, before.Status.ClusterID)
			}
			if _, ok := got.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
				t.Errorf("the %s annotation is still there", etcdv1.RecoverQuorumAnnotation)
			}
			for _, m := range membersOf(ctx, t, k, key) {
				for _, old := range members {
					if m.Name == old.Name {
						t.Errorf("member name %s reused by the restored cluster", m.Name)
					}
				}
			}
			cli2 := etcdClient(ctx, t, k, key)
			checkKeys(ctx, t, cli2, "qla/before/", acked)
			checkKeys(ctx, t, cli2, "qla/between/", between)
			if _, err := cli2.Put(ctx, "qla/restored", "x"); err != nil {
				t.Errorf("write after the restore: %v", err)
			}
			waitEventFor(ctx, t, k, key.Namespace, "MembersReleased", "")
			waitEventFor(ctx, t, k, key.Namespace, "QuorumRecovered", "")
			return ctx
		}).Feature()
}

// quorumLossFeature loses two of three members for good (their Pods and
// volumes deleted) after a client wrote and every member caught up, and
// recovers from the third: by the annotation when annotate is set, else by
// the cluster's own spec.recovery.
func quorumLossFeature(name string, mutate func(context.Context, *testing.T, *kube, *etcdv1.EtcdCluster), annotate bool) features.Feature {
	return features.New("quorum loss "+name).
		Assess("2 of 3 members lost: recovered from the third with every acknowledged write", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := newCluster(namespaceOf(ctx), "ql-"+name, 3)
			mutate(ctx, t, k, c)
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			cli := etcdClient(ctx, t, k, key)
			w := startWriter(ctx, cli, "ql/")
			time.Sleep(3 * time.Second)
			acked, _ := w.stop()
			// Well before the loss: every member has applied every write.
			time.Sleep(2 * time.Second)
			survivor := pickMember(ctx, t, k, key, false)
			for _, m := range membersOf(ctx, t, k, key) {
				if m.Name != survivor {
					loseMember(ctx, t, k, key.Namespace, m.Name)
				}
			}
			lostAt := time.Now()
			t.Logf("deleted the Pods and volumes of every member but %s", survivor)
			waitFor(ctx, t, 2*time.Minute, "Available False, QuorumLost", func() (bool, error) {
				c := &etcdv1.EtcdCluster{}
				if err := k.c.Get(ctx, key, c); err != nil {
					return false, err
				}
				a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
				return a != nil && a.Reason == etcdv1.ReasonQuorumLost && strings.Contains(a.Message, survivor+" (raft index"), fmt.Errorf("available %+v", a)
			})
			if annotate {
				annotateRecovery(ctx, t, k, key, survivor)
			}
			waitRecovered(ctx, t, k, key, 5*time.Minute)
			t.Logf("recovered and back at 3 members %.1fs after the loss", time.Since(lostAt).Seconds())
			got := &etcdv1.EtcdCluster{}
			if err := k.c.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			rs := got.Status.Recovery
			if rs.Member != survivor || rs.Automatic == annotate {
				t.Errorf("status.recovery %+v, want member %s, automatic %v", rs, survivor, !annotate)
			}
			if _, ok := got.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
				t.Errorf("the %s annotation is still there", etcdv1.RecoverQuorumAnnotation)
			}
			if got.Spec.Backup != nil {
				// The survivor was snapshotted before it was forced.
				b := &etcdv1.EtcdBackup{}
				switch err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: rs.Snapshot}, b); {
				case rs.Snapshot == "" || err != nil:
					t.Errorf("no snapshot of %s before it was forced: status.recovery.snapshot %q (%v)", survivor, rs.Snapshot, err)
				case b.Status.Member != survivor || !meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1.ConditionComplete) || b.Status.Revision < int64(len(acked)):
					t.Errorf("snapshot %s: member %s, revision %d, conditions %+v; want a Complete one of %s holding the %d writes", b.Name, b.Status.Member, b.Status.Revision, b.Status.Conditions, survivor, len(acked))
				default:
					t.Logf("snapshot %s of %s at revision %d before forcing", b.Name, survivor, b.Status.Revision)
				}
			}
			if got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
				t.Errorf("spec.replicas changed: %v", got.Spec.Replicas)
			}
			cli2 := etcdClient(ctx, t, k, key)
			checkKeys(ctx, t, cli2, "ql/", acked)
			if _, err := cli2.Put(ctx, "ql/after", "x"); err != nil {
				t.Errorf("write after the recovery: %v", err)
			}
			waitEventFor(ctx, t, k, key.Namespace, "QuorumRecovered", "")
			// The members left behind were fenced before the survivor was
			// forced.
			waitEventFor(ctx, t, k, key.Namespace, "MembersFenced", "")
			return ctx
		}).Feature()
}

// takeBackup takes an EtcdBackup of the cluster and waits until it is
// Complete.
func takeBackup(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, name string, dest etcdv1.BackupDestination) *etcdv1.EtcdBackup {
	t.Helper()
	b := &etcdv1.EtcdBackup{ObjectMeta: objectMeta(key.Namespace, name), Spec: etcdv1.EtcdBackupSpec{ClusterName: key.Name, Destination: dest}}
	if err := k.c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	backupComplete(ctx, t, k, b)
	return b
}

// loseMember deletes a member's PVC and Pod: the member is lost for good.
func loseMember(ctx context.Context, t *testing.T, k *kube, ns, name string) {
	t.Helper()
	if err := k.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: objectMeta(ns, "data-"+name)}); err != nil {
		t.Fatal(err)
	}
	if err := k.c.Delete(ctx, &corev1.Pod{ObjectMeta: objectMeta(ns, name)}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// annotateRecovery asks for a quorum recovery from value (a member or
// latest-backup), as a person does.
func annotateRecovery(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, value string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, etcdv1.RecoverQuorumAnnotation, value)))
	if err := k.c.Patch(ctx, &etcdv1.EtcdCluster{ObjectMeta: objectMeta(key.Namespace, key.Name)}, patch); err != nil {
		t.Fatal(err)
	}
}

// waitRecovered waits until status.recovery is Done and the cluster has
// its 3 healthy voters.
func waitRecovered(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, timeout time.Duration) {
	t.Helper()
	waitFor(ctx, t, timeout, "the recovery done", func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := k.c.Get(ctx, key, c); err != nil {
			return false, err
		}
		if c.Status.Recovery == nil || c.Status.Recovery.Phase != etcdv1.RecoveryDone {
			return false, fmt.Errorf("recovery %+v", c.Status.Recovery)
		}
		return k.converged(ctx, key, 3, c)
	})
}

// waitReplaced waits until the EtcdMember victim is gone (then runs
// gone, if any) and the cluster has 3 healthy voters again, none of them
// etcd's old member oldID.
func waitReplaced(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, cli *clientv3.Client, victim string, oldID uint64, gone func()) {
	t.Helper()
	waitFor(ctx, t, healBound, victim+" replaced", func() (bool, error) {
		err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: victim}, &etcdv1.EtcdMember{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if gone != nil {
		gone()
	}
	waitConverged(ctx, t, k, key, 3, healBound)
	for name, id := range memberIDs(ctx, t, cli) {
		if id == oldID {
			t.Errorf("etcd still lists the old member %x (as %s)", oldID, name)
		}
	}
}

// corruptorPod mounts a member's volume and overwrites the first 16 KiB
// of its database file every 50ms for two minutes. It runs as the etcd
// user, as the namespace's restricted Pod Security asks.
func corruptorPod(ns, claim string) *corev1.Pod {
	const uid = int64(65532)
	script := `for i in $(seq 1 2400); do dd if=/dev/urandom of=/v/data/member/snap/db bs=4096 count=4 conv=notrunc 2>/dev/null; sleep 0.05; done`
	return &corev1.Pod{
		ObjectMeta: objectMeta(ns, "corrupt-"+claim),
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(uid), RunAsGroup: ptr.To(uid),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "dd", Image: "docker.io/library/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
			}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
		},
	}
}

// pickMember is a member of the cluster: the leader or a follower.
func pickMember(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, leader bool) string {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := k.c.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Status.Members {
		if m.Leader == leader {
			return m.Name
		}
	}
	t.Fatalf("no member with leader=%v in %+v", leader, c.Status.Members)
	return ""
}

func membersOf(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey) []etcdv1.EtcdMember {
	t.Helper()
	list := &etcdv1.EtcdMemberList{}
	if err := k.c.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{etcdv1.ClusterLabel: key.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitEventFor waits for an event with reason whose message names object
// (any when empty).
func waitEventFor(ctx context.Context, t *testing.T, k *kube, ns, reason, object string) {
	t.Helper()
	waitFor(ctx, t, time.Minute, "event "+reason, func() (bool, error) {
		evs, err := k.cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == reason && (object == "" || strings.Contains(e.Note, object) || e.Regarding.Name == object) {
				return true, nil
			}
		}
		return false, nil
	})
}
