package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// healResult is one failure healed: from the failure injected until the
// cluster has converged again with every member a healthy voter, and until
// the failure could be seen (a Pod Failed, Available False with
// QuorumLost; 0 when the injection itself is what the operator sees).
type healResult struct {
	took, visible float64
	victim        string
	log           []event
	// phases: when each status.recovery.phase was first seen, in seconds
	// after the failure (quorum loss only).
	phases map[string]float64
}

// healing is one run of every kind of failure, one after the other on the
// same settled cluster.
type healing struct {
	failed, replaced, emptied, quorum, restored healResult
	quorumRan                                   bool
}

// settle is how long a cluster is left alone after it converged: etcd
// refuses a membership change until every voter has been connected for 5 s.
const settle = 6 * time.Second

// heal injects each failure into the settled n-member cluster name (n = 3)
// and times it until the cluster has healed; the quorum loss last, when
// quorum is set.
func (b *bench) heal(ns, name string, quorum bool) (healing, error) {
	var h healing
	var err error
	if h.failed, err = b.failPod(ns, name); err != nil {
		return h, fmt.Errorf("failed pod: %w", err)
	}
	time.Sleep(settle)
	if h.replaced, err = b.loseMember(ns, name, false); err != nil {
		return h, fmt.Errorf("pod and pvc deleted: %w", err)
	}
	time.Sleep(settle)
	if h.emptied, err = b.loseMember(ns, name, true); err != nil {
		return h, fmt.Errorf("volume lost: %w", err)
	}
	if !quorum {
		return h, nil
	}
	time.Sleep(settle)
	if h.quorum, err = b.loseQuorum(ns, name, false); err != nil {
		return h, fmt.Errorf("quorum loss: %w", err)
	}
	time.Sleep(settle)
	if err := b.backupToPVC(ns, name); err != nil {
		return h, fmt.Errorf("backup before losing every member: %w", err)
	}
	if h.restored, err = b.loseQuorum(ns, name, true); err != nil {
		return h, fmt.Errorf("every member lost: %w", err)
	}
	h.quorumRan = true
	return h, nil
}

// backupToPVC takes a backup of the cluster into a PVC of its own and
// waits until it is Complete.
func (b *bench) backupToPVC(ns, name string) error {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-backups"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")}},
		},
	}
	if err := b.c.Create(b.ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	bk := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-before-loss"},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: name, Destination: etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: pvc.Name}}},
	}
	if err := b.c.Create(b.ctx, bk); err != nil {
		return err
	}
	_, err := b.poll(3*time.Minute, func() (bool, error) {
		if err := b.c.Get(b.ctx, client.ObjectKeyFromObject(bk), bk); err != nil {
			return false, err
		}
		if meta.IsStatusConditionTrue(bk.Status.Conditions, etcdv1.ConditionFailed) {
			return false, fmt.Errorf("backup failed: %+v", bk.Status.Conditions)
		}
		return meta.IsStatusConditionTrue(bk.Status.Conditions, etcdv1.ConditionComplete), nil
	})
	return err
}

// follower is a member of the cluster that is not the leader.
func (b *bench) follower(ns, name string) (string, error) {
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return "", err
	}
	for _, m := range c.Status.Members {
		if !m.Leader {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("no follower in %+v", c.Status.Members)
}

// failPod makes a follower's Pod Failed, as an eviction or a node's graceful
// shutdown does: its active deadline set to 1 s, the kubelet ends it with
// phase Failed and never restarts it. The operator deletes it and starts a
// new Pod on the same volume, with the same identity. Healed: a new Pod
// Ready, the EtcdMember Ready and the cluster converged.
func (b *bench) failPod(ns, name string) (healResult, error) {
	var res healResult
	victim, err := b.follower(ns, name)
	if err != nil {
		return res, err
	}
	res.victim = victim
	old := &corev1.Pod{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: victim}, old); err != nil {
		return res, err
	}
	converged := b.rolledOut(ns, name, 3, "")
	start := time.Now()
	if err := b.c.Patch(b.ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":1}}`))); err != nil {
		return res, err
	}
	var failedAt time.Time
	_, err = b.poll(3*time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		err := b.c.Get(b.ctx, client.ObjectKeyFromObject(old), p)
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		gone := err != nil || p.UID != old.UID
		if failedAt.IsZero() && (gone || p.Status.Phase == corev1.PodFailed) {
			failedAt = time.Now()
			res.log = append(res.log, event{failedAt.Sub(start), "old Pod Failed or gone"})
		}
		if err != nil || p.UID == old.UID || !isReady(p) {
			return false, nil
		}
		m := &etcdv1.EtcdMember{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: victim}, m); err != nil {
			return false, err
		}
		if !isTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			return false, nil
		}
		return converged()
	})
	if err != nil {
		return res, fmt.Errorf("%s back on a new Pod: %w", victim, err)
	}
	res.took, res.visible = time.Since(start).Seconds(), failedAt.Sub(start).Seconds()
	return res, nil
}

// loseMember deletes a follower's PVC and Pod: the operator removes the
// member from etcd and adds a new one as a learner. With record set, the
// EtcdMember's record of its volume (status.pvcName) is cleared first, as
// if that status write had never landed: the operator then makes a new
// empty PVC and a Pod, whose check-data init container refuses the empty
// volume (DataLost), and the member is replaced all the same. Healed: the
// victim's EtcdMember gone, no longer in the cluster's status, and the
// cluster converged.
func (b *bench) loseMember(ns, name string, record bool) (healResult, error) {
	var res healResult
	victim, err := b.follower(ns, name)
	if err != nil {
		return res, err
	}
	res.victim = victim
	if record {
		m := &etcdv1.EtcdMember{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: victim}, m); err != nil {
			return res, err
		}
		if err := b.c.Status().Patch(b.ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"status":{"pvcName":null}}`))); err != nil {
			return res, err
		}
	}
	converged := b.rolledOut(ns, name, 3, "")
	start := time.Now()
	if err := b.c.Delete(b.ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-" + victim}}); err != nil {
		return res, err
	}
	if err := b.c.Delete(b.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}}, client.GracePeriodSeconds(0)); err != nil {
		return res, err
	}
	var goneAt time.Time
	_, err = b.poll(5*time.Minute, func() (bool, error) {
		err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: victim}, &etcdv1.EtcdMember{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		if goneAt.IsZero() {
			goneAt = time.Now()
			res.log = append(res.log, event{goneAt.Sub(start), "EtcdMember " + victim + " gone"})
		}
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		if slices.ContainsFunc(c.Status.Members, func(ms etcdv1.ClusterMemberStatus) bool { return ms.Name == victim }) {
			return false, nil
		}
		return converged()
	})
	if err != nil {
		return res, fmt.Errorf("%s replaced: %w", victim, err)
	}
	res.took = time.Since(start).Seconds()
	return res, nil
}

// loseQuorum deletes the PVCs and Pods of every member but one follower, the
// survivor, and, once the cluster reports Available False with reason
// QuorumLost (naming the survivor reachable), annotates it to recover from
// the survivor. With all, it deletes every member's and annotates it to
// restore the newest backup. Healed: status.recovery Done for a recovery
// started after the loss, and the cluster converged on 3 members.
func (b *bench) loseQuorum(ns, name string, all bool) (healResult, error) {
	res := healResult{phases: map[string]float64{}}
	survivor, from := "", etcdv1.RecoverFromLatestBackup
	if !all {
		var err error
		if survivor, err = b.follower(ns, name); err != nil {
			return res, err
		}
		from = survivor
	}
	res.victim = from
	members := &etcdv1.EtcdMemberList{}
	if err := b.c.List(b.ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
		return res, err
	}
	converged := b.rolledOut(ns, name, 3, "")
	start := time.Now()
	for _, m := range members.Items {
		if m.Name == survivor {
			continue
		}
		if err := b.loseVolumeAndPod(ns, m.Name); err != nil {
			return res, err
		}
	}
	if _, err := b.poll(2*time.Minute, b.quorumLost(ns, name, survivor, all)); err != nil {
		return res, fmt.Errorf("available False, QuorumLost: %w", err)
	}
	res.visible = time.Since(start).Seconds()
	res.log = append(res.log, event{time.Since(start), "Available False, QuorumLost; annotated"})
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, etcdv1.RecoverQuorumAnnotation, from)))
	if err := b.c.Patch(b.ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch); err != nil {
		return res, err
	}
	var phase string
	_, err := b.poll(5*time.Minute, func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		rs := c.Status.Recovery
		if rs == nil || rs.StartedAt.Time.Before(start.Truncate(time.Second)) {
			return false, nil
		}
		if rs.Phase != phase {
			phase = rs.Phase
			res.phases[phase] = time.Since(start).Seconds()
			res.log = append(res.log, event{time.Since(start), "recovery " + phase})
		}
		if rs.Phase != etcdv1.RecoveryDone {
			return false, nil
		}
		return converged()
	})
	if err != nil {
		return res, fmt.Errorf("recovery from %s: %w", from, err)
	}
	res.took = time.Since(start).Seconds()
	return res, nil
}

// loseVolumeAndPod deletes a member's PVC, then its Pod at once.
func (b *bench) loseVolumeAndPod(ns, member string) error {
	if err := b.c.Delete(b.ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-" + member}}); err != nil {
		return err
	}
	return b.c.Delete(b.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: member}}, client.GracePeriodSeconds(0))
}

// quorumLost says whether the cluster reports Available False with reason
// QuorumLost, naming survivor reachable unless all were lost.
func (b *bench) quorumLost(ns, name, survivor string, all bool) func() (bool, error) {
	return func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		a := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionAvailable)
		return a != nil && a.Status == metav1.ConditionFalse && a.Reason == etcdv1.ReasonQuorumLost &&
			(all || strings.Contains(a.Message, survivor+" (raft index")), nil
	}
}
