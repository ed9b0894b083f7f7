package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// reconcileDelete lets a deleted cluster go as a whole: its members are
// released without MemberRemove (there is no cluster left to keep a quorum
// of), and the garbage collector deletes them with their Pods and PVCs.
func (r *Reconciler) reconcileDelete(ctx context.Context, c *etcdv1.EtcdCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, etcdv1.ClusterFinalizer) {
		return ctrl.Result{}, nil
	}
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdv1.ClusterLabel: c.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list members: %w", err)
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
