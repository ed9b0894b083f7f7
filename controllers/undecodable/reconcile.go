package undecodable

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Reconcile reports an undecodable object once per version of it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.New()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	why := etcdv1.Undecodable(obj)
	if why == "" {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Leaving an object the operator cannot decode alone", "why", why)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, "Undecodable", "Decode", "%s; the operator does nothing for this object until it is fixed (kubectl edit) or deleted; other objects are not affected", why)
	return ctrl.Result{}, nil
}
