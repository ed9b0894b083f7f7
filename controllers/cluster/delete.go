package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// reconcileDelete lets a deleted cluster go as a whole: its members are
// released without MemberRemove (there is no cluster left to keep a quorum
// of), and the garbage collector deletes them with their Pods and PVCs.
// With spec.deletionPolicy Retain, each member first releases its PVC (the
// member controller's VolumeRetained condition) so that the PVC stays.
func (r *Reconciler) reconcileDelete(ctx context.Context, c *etcdv1.EtcdCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, etcdv1.ClusterFinalizer) {
		return ctrl.Result{}, nil
	}
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, kube.OfCluster(c.Namespace, c.Name)...); err != nil {
		return ctrl.Result{}, fmt.Errorf("list members: %w", err)
	}
	if c.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain {
		// Not yet: the members' VolumeRetained conditions wake this
		// controller through its watch of the EtcdMembers it owns.
		members := make([]*etcdv1.EtcdMember, 0, len(list.Items))
		for i := range list.Items {
			members = append(members, &list.Items[i])
		}
		waiting, err := r.retainVolumes(ctx, c, members)
		if err != nil || waiting > 0 {
			return ctrl.Result{}, err
		}
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !metav1.IsControlledBy(m, c) {
			continue
		}
		patch := client.MergeFrom(m.DeepCopy())
		if controllerutil.RemoveFinalizer(m, etcdv1.MemberFinalizer) {
			if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("release member %s: %w", m.Name, err)
			}
		}
	}
	r.Etcd.Forget(client.ObjectKeyFromObject(c).String())
	patch := client.MergeFrom(c.DeepCopy())
	controllerutil.RemoveFinalizer(c, etcdv1.ClusterFinalizer)
	if err := r.Patch(ctx, c, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// retainVolumes asks every member of a deleted Retain cluster, or of one
// restored from a backup, to release its PVC (spec.deletionPolicy Retain on
// the member, which the member controller acts on) and counts the members
// that have not reported it done for their current generation.
func (r *Reconciler) retainVolumes(ctx context.Context, c *etcdv1.EtcdCluster, members []*etcdv1.EtcdMember) (int, error) {
	waiting := 0
	for _, m := range members {
		if !metav1.IsControlledBy(m, c) {
			continue
		}
		if m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain {
			patch := client.MergeFrom(m.DeepCopy())
			m.Spec.DeletionPolicy = etcdv1.DeletionPolicyRetain
			if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("ask member %s to keep its volume: %w", m.Name, err)
			}
			waiting++
			continue
		}
		// Deleting a member bumps its generation; a PVC it released before
		// stays released, so True for an earlier generation is enough then.
		kept := kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation) ||
			(!m.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained))
		if !kept {
			waiting++
		}
	}
	if waiting == 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "VolumesRetained", "Delete", "The members' PVCs are kept, labelled %s=%s", etcdv1.RetainedFromLabel, c.Name)
	}
	return waiting, nil
}
