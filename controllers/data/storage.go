package data

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// storageFacts are what StorageReady is made from.
type storageFacts struct {
	memory bool
	want   resource.Quantity
	// grown counts the volumes at the wanted size, of total.
	grown, total int
	// notExpandable names a StorageClass that does not allow expansion,
	// when a volume of it is too small.
	notExpandable string
}

// observeStorage compares the member volumes with spec.storage.size. The
// member controller asks each PVC to grow; this only reports.
func (r *Reconciler) observeStorage(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, f := s.cluster, &s.storage
	if c.Spec.Storage.Medium == etcdv1.StorageMediumMemory {
		f.memory = true
		return ctrl.Result{}, nil
	}
	f.want = resources.DefaultStorageSize
	if c.Spec.Storage.Size != nil {
		f.want = *c.Spec.Storage.Size
	}
	for _, pvc := range s.pvcs {
		if !pvc.DeletionTimestamp.IsZero() {
			continue
		}
		f.total++
		have := pvc.Status.Capacity[corev1.ResourceStorage]
		if pvc.Status.Phase != corev1.ClaimBound {
			// Not provisioned yet: it will have the size it asks for.
			have = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		if have.Cmp(f.want) >= 0 {
			f.grown++
			continue
		}
		if pvc.Status.Phase != corev1.ClaimBound || f.notExpandable != "" {
			continue
		}
		expandable, class, err := r.expandable(ctx, pvc)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !expandable {
			f.notExpandable = class
		}
	}
	// The PVCs' changes wake this controller: nothing to poll.
	return ctrl.Result{}, nil
}

// expandable says whether the StorageClass of a PVC allows expansion.
func (r *Reconciler) expandable(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, string, error) {
	name := ""
	if pvc.Spec.StorageClassName != nil {
		name = *pvc.Spec.StorageClassName
	}
	if name == "" {
		return false, "(none)", nil
	}
	sc := &storagev1.StorageClass{}
	switch err := r.Get(ctx, client.ObjectKey{Name: name}, sc); {
	case apierrors.IsNotFound(err):
		return false, name, nil
	case err != nil:
		return false, name, fmt.Errorf("get storage class %s: %w", name, err)
	}
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, name, nil
}
