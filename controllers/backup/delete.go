package backup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// reconcileDelete deletes the snapshot of an EtcdBackup that is being
// deleted (by retention or by a user), through an agent Pod, then releases
// it. A backup that never stored anything is released at once. In a
// namespace that is going away no Pod can start: the snapshot is left in
// place (it may be what a restore needs) and the EtcdBackup released.
func (r *Reconciler) reconcileDelete(ctx context.Context, b *etcdv1.EtcdBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, etcdv1.BackupFinalizer) {
		return ctrl.Result{}, nil
	}
	key := b.Status.Key
	if key == "" && b.Status.StartTime != nil {
		// Deleted while its snapshot ran: the agent may still write it.
		key = resources.BackupKey(b)
	}
	if key != "" {
		done, err := r.deleteSnapshot(ctx, b, key)
		if err != nil || !done {
			return ctrl.Result{RequeueAfter: time.Minute}, err
		}
	}
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.RemoveFinalizer(b, etcdv1.BackupFinalizer)
	if err := r.Patch(ctx, b, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("release backup %s: %w", b.Name, err)
	}
	return ctrl.Result{}, nil
}

// deleteSnapshot runs the agent's delete and says whether it is done.
func (r *Reconciler) deleteSnapshot(ctx context.Context, b *etcdv1.EtcdBackup, key string) (bool, error) {
	pod := &corev1.Pod{}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: deletePodName(b)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		pod = resources.AgentPod(resources.AgentTask{
			Name: deletePodName(b), Namespace: b.Namespace, Labels: resources.AgentLabels(b), Image: r.Options.AgentImage,
			Args: []string{"delete", "--key=" + key}, Destination: b.Spec.Destination, Deadline: 600,
		})
		if err := controllerutil.SetControllerReference(b, pod, r.Scheme()); err != nil {
			return false, fmt.Errorf("own pod: %w", err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleting the snapshot", "uri", b.Status.URI)
		err := r.Create(ctx, pod)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return true, nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get pod %s: %w", deletePodName(b), err)
	}
	res, ended := agent.PodResult(pod)
	if !ended {
		return false, nil
	}
	if res.Error != "" {
		r.Recorder.Eventf(b, pod, corev1.EventTypeWarning, "SnapshotDeleteFailed", "Delete", "Deleting %s failed, retrying in a minute: %s", b.Status.URI, res.Error)
		// Try again with a new Pod.
		return false, kube.DeletePod(ctx, r.Client, b.Namespace, pod.Name)
	}
	r.Recorder.Eventf(b, pod, corev1.EventTypeNormal, "SnapshotDeleted", "Delete", "Deleted %s", b.Status.URI)
	return true, nil
}
