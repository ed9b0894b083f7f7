package member

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// reconcileDelete leaves a member that is being deleted alone: the cluster
// controller removes it from etcd first and then releases it, and the
// garbage collector deletes its Pod and PVC through their owner references.
// Recreating the Pod meanwhile would only restart a member on its way out.
func (r *Reconciler) reconcileDelete(context.Context, *scope) (ctrl.Result, error) {
	return ctrl.Result{}, nil
}

// retainVolume releases the PVC of a member whose cluster is deleted with
// spec.deletionPolicy Retain: it drops the member's owner reference, so the
// garbage collector leaves it, and trades the labels the operator selects
// on for the retained-from ones, so that no later cluster of the same name
// counts it as its own. It reads the API server, not the cache: the cache
// of a shard stops seeing the PVC once its shard label is gone.
func (r *Reconciler) retainVolume(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.member
	if !resources.UsesPVC(m) {
		s.volume = volumeNone
		return ctrl.Result{}, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: resources.PVCName(m.Name)}, pvc); {
	case apierrors.IsNotFound(err):
		s.volume = volumeNone
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get pvc of %s: %w", m.Name, err)
	}
	if !pvc.DeletionTimestamp.IsZero() {
		// Deleted before the cluster was: nothing left to keep.
		s.volume = volumeNone
		return ctrl.Result{}, nil
	}
	if released(pvc, m) {
		s.volume = volumeReleased
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Releasing the PVC of a deleted cluster that keeps its volumes", "pvc", pvc.Name)
	patch := client.MergeFromWithOptions(pvc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	refs := pvc.OwnerReferences[:0]
	for _, ref := range pvc.OwnerReferences {
		if ref.UID != m.UID {
			refs = append(refs, ref)
		}
	}
	pvc.OwnerReferences = refs
	for _, l := range []string{etcdv1.ClusterLabel, etcdv1.MemberLabel, etcdv1.ShardLabel, etcdv1.ManagedByLabel} {
		delete(pvc.Labels, l)
	}
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	pvc.Labels[etcdv1.RetainedFromLabel] = m.Spec.ClusterName
	pvc.Labels[etcdv1.RetainedMemberLabel] = m.Name
	if err := r.Patch(ctx, pvc, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("release pvc %s: %w", pvc.Name, err)
	}
	r.Recorder.Eventf(m, pvc, corev1.EventTypeNormal, "VolumeRetained", "Retain", "PVC %s is kept after the cluster's deletion, labelled %s=%s", pvc.Name, etcdv1.RetainedFromLabel, m.Spec.ClusterName)
	s.volume = volumeReleased
	return ctrl.Result{}, nil
}

// released: the PVC no longer belongs to the member.
func released(pvc *corev1.PersistentVolumeClaim, m *etcdv1.EtcdMember) bool {
	for _, ref := range pvc.OwnerReferences {
		if ref.UID == m.UID {
			return false
		}
	}
	_, labelled := pvc.Labels[etcdv1.RetainedFromLabel]
	return labelled && !metav1.HasLabel(pvc.ObjectMeta, etcdv1.ClusterLabel)
}
