package member

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// reconcileDelete leaves a member that is being deleted alone: the cluster
// controller removes it from etcd first and then releases it, and the
// garbage collector deletes its Pod and PVC through their owner references.
// Recreating the Pod meanwhile would only restart a member on its way out.
func (r *Reconciler) reconcileDelete(context.Context, *scope) (ctrl.Result, error) {
	return ctrl.Result{}, nil
}
