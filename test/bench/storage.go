package main

import (
	"fmt"
	"slices"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// secondClass is a StorageClass of the default one's provisioner under
// another name, for a cluster to move to.
const secondClass = "raftsman-bench-second"

// migrate moves a settled 3-member cluster to volumes of secondClass and
// returns the time from the patch of spec.storage.storageClassName until
// every member is a new one on that class and the cluster has converged.
func (b *bench) migrate(ns, name string) (float64, error) {
	if err := b.ensureClass(); err != nil {
		return 0, err
	}
	patch := fmt.Sprintf(`{"spec":{"storage":{"storageClassName":%q}}}`, secondClass)
	start := time.Now()
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := b.c.Patch(b.ctx, c, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return 0, err
	}
	converged := b.converged(ns, name, 3)
	if _, err := b.poll(10*time.Minute, func() (bool, error) {
		ms := &etcdv1.EtcdMemberList{}
		if err := b.c.List(b.ctx, ms, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
			return false, err
		}
		if len(ms.Items) != 3 || slices.ContainsFunc(ms.Items, func(m etcdv1.EtcdMember) bool {
			return m.Spec.Storage.StorageClassName == nil || *m.Spec.Storage.StorageClassName != secondClass || !m.DeletionTimestamp.IsZero()
		}) {
			return false, nil
		}
		return converged()
	}); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// ensureClass makes secondClass like the default StorageClass.
func (b *bench) ensureClass() error {
	list := &storagev1.StorageClassList{}
	if err := b.c.List(b.ctx, list); err != nil {
		return err
	}
	i := slices.IndexFunc(list.Items, func(sc storagev1.StorageClass) bool {
		return sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true"
	})
	if i < 0 {
		return fmt.Errorf("the cluster has no default StorageClass")
	}
	def := list.Items[i]
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: secondClass}, Provisioner: def.Provisioner, Parameters: def.Parameters,
		ReclaimPolicy: def.ReclaimPolicy, VolumeBindingMode: def.VolumeBindingMode, AllowVolumeExpansion: def.AllowVolumeExpansion}
	if err := b.c.Create(b.ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
