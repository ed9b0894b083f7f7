package user

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// retryDelete is how soon a deletion etcd could not do yet is tried again.
const retryDelete = 10 * time.Second

// reconcileDelete deletes the user and its role from etcd, then releases
// the EtcdUser; its Secret goes with it (owner reference). Nothing is
// asked of etcd when the user never reached it, or when its cluster is
// gone or being deleted (its etcd goes too).
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.user
	if !controllerutil.ContainsFinalizer(u, etcdv1.UserFinalizer) {
		return ctrl.Result{}, nil
	}
	if u.Status.RoleName != "" {
		done, err := r.deleteFromEtcd(ctx, s)
		if err != nil || !done {
			return ctrl.Result{RequeueAfter: retryDelete}, err
		}
	}
	patch := client.MergeFrom(u.DeepCopy())
	controllerutil.RemoveFinalizer(u, etcdv1.UserFinalizer)
	if err := r.Patch(ctx, u, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("release user %s: %w", u.Name, err)
	}
	return ctrl.Result{}, nil
}

// deleteFromEtcd deletes the user and its role; done is false while the
// cluster's certificates are not ready for its generation.
func (r *Reconciler) deleteFromEtcd(ctx context.Context, s *scope) (done bool, err error) {
	u := s.user
	cl, err := r.getCluster(ctx, u.Namespace, u.Spec.ClusterName)
	if err != nil || cl == nil {
		return cl == nil && err == nil, err
	}
	if _, ok := cl.TLSSecrets(); !ok {
		return false, nil
	}
	root, err := r.creds.Load(ctx, r.Client, r.APIReader, cl)
	if err != nil {
		return false, err
	}
	cli, err := r.etcdClient(ctx, cl, root)
	if err != nil {
		return false, err
	}
	tctx, cancel := context.WithTimeout(ctx, r.Options.EtcdTimeout)
	defer cancel()
	ctrl.LoggerFrom(ctx).Info("Deleting the user and its role from etcd", "user", u.Status.UserName, "role", u.Status.RoleName)
	if err := cli.DeleteUser(tctx, u.Status.UserName, u.Status.RoleName); err != nil {
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, "DeleteFailed", "DeleteUser", "Deleting user %s from etcd failed, retrying: %v", u.Status.UserName, err)
		return false, fmt.Errorf("delete user %s: %w", u.Status.UserName, err)
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, "UserDeleted", "DeleteUser",
		"User %s and role %s deleted from etcd: its certificate no longer reaches any key", u.Status.UserName, u.Status.RoleName)
	return true, nil
}
