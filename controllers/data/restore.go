package data

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// recheckAfter is how long a failed check of a snapshot stays the answer
// before the snapshot is read again (someone may have put the right one
// back).
const recheckAfter = 5 * time.Minute

// restoreFacts are what RestoreReady is made from.
type restoreFacts struct {
	// wanted: the cluster is to be restored (or was).
	wanted bool
	// verified: the snapshot was checked, now or before the cluster formed.
	verified bool
	// failReason and failMsg say why the snapshot cannot be used yet.
	failReason, failMsg string
}

func restoreCheckPodName(c *etcdv1.EtcdCluster) string { return c.Name + "-restore-check" }

// reconcileRestore checks the snapshot a new cluster is to be restored
// from: an agent Pod reads it whole and compares its sha256 with the one
// recorded when it was taken (or given in the spec). Only a match fills
// status.restore and turns RestoreReady True, which the cluster controller
// waits for before it creates any member.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, f := s.cluster, &s.restore
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return ctrl.Result{}, nil
	}
	f.wanted = true
	id, _ := c.ObservedID() // unknown counts as not formed: the members say it too
	if c.Status.Restore != nil && (id != "" || len(s.members) > 0 || meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionRestoreReady)) {
		f.verified = true
		return ctrl.Result{}, kube.DeletePod(ctx, r.Client, c.Namespace, restoreCheckPodName(c))
	}
	src, err := r.restoreSource(ctx, s)
	if err != nil || src == nil {
		return ctrl.Result{RequeueAfter: 30 * time.Second}, err
	}
	pod := &corev1.Pod{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: restoreCheckPodName(c)}, pod); {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.startCheck(ctx, s, src)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get pod %s: %w", restoreCheckPodName(c), err)
	}
	res, ended := agent.PodResult(pod)
	if !ended {
		f.failReason, f.failMsg = etcdv1.ReasonVerifyingSnapshot, fmt.Sprintf("Reading the snapshot %s to check its sha256", src.Key)
		return ctrl.Result{}, nil
	}
	if res.Error != "" {
		f.failReason, f.failMsg = etcdv1.ReasonSnapshotUnreadable, fmt.Sprintf("The snapshot cannot be used, nothing was started: %s", res.Error)
		if res.Reason == agent.ReasonChecksumMismatch {
			f.failReason = etcdv1.ReasonChecksumMismatch
		}
		// The ended Pod is the record of the failure until it is retried.
		if age := s.now.Sub(pod.CreationTimestamp.Time); age < recheckAfter {
			return ctrl.Result{RequeueAfter: recheckAfter - age}, nil
		}
		return ctrl.Result{RequeueAfter: time.Second}, kube.DeletePod(ctx, r.Client, c.Namespace, restoreCheckPodName(c))
	}
	src.URI, src.SHA256, src.Size = res.URI, res.SHA256, res.Size
	if pvc := src.Destination.PVC; pvc != nil {
		src.URI = resources.PVCURI(pvc, src.Key)
	}
	c.Status.Restore = src
	f.verified = true
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "SnapshotVerified", "Restore", "Snapshot %s has the recorded sha256 %s; the first member is made from it", res.URI, res.SHA256)
	return ctrl.Result{}, kube.DeletePod(ctx, r.Client, c.Namespace, restoreCheckPodName(c))
}

// restoreSource resolves what the spec names into a destination, key and
// expected checksum; nil with a False condition when it cannot yet.
func (r *Reconciler) restoreSource(ctx context.Context, s *scope) (*etcdv1.RestoreStatus, error) {
	c, f := s.cluster, &s.restore
	spec := c.Spec.Bootstrap.Restore
	if src := spec.Source; src != nil {
		return &etcdv1.RestoreStatus{Destination: src.BackupDestination, Key: src.Key, SHA256: src.SHA256}, nil
	}
	b := &etcdv1.EtcdBackup{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: spec.BackupName}, b); {
	case apierrors.IsNotFound(err):
		f.failReason, f.failMsg = etcdv1.ReasonBackupNotFound, fmt.Sprintf("EtcdBackup %s does not exist in namespace %s", spec.BackupName, c.Namespace)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get backup %s: %w", spec.BackupName, err)
	}
	snap, ok := b.Snapshot()
	if !ok || snap.SHA256 == "" {
		f.failReason, f.failMsg = etcdv1.ReasonBackupNotComplete, fmt.Sprintf("EtcdBackup %s is not Complete", b.Name)
		return nil, nil
	}
	return &etcdv1.RestoreStatus{Destination: b.Spec.Destination, Key: snap.Key, SHA256: snap.SHA256}, nil
}

func (r *Reconciler) startCheck(ctx context.Context, s *scope, src *etcdv1.RestoreStatus) error {
	c := s.cluster
	args := []string{"verify", "--key=" + src.Key}
	if src.SHA256 != "" {
		args = append(args, "--sha256="+src.SHA256)
	}
	pod := resources.AgentPod(resources.AgentTask{
		Name: restoreCheckPodName(c), Namespace: c.Namespace, Labels: resources.AgentLabels(c), Image: r.Options.AgentImage,
		Args: args, Destination: src.Destination, Deadline: int64(r.Options.CheckDeadline.Seconds()),
	})
	if err := controllerutil.SetControllerReference(c, pod, r.Scheme()); err != nil {
		return fmt.Errorf("own pod: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Checking the snapshot to restore from", "key", src.Key)
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	s.restore.failReason, s.restore.failMsg = etcdv1.ReasonVerifyingSnapshot, fmt.Sprintf("Reading the snapshot %s to check its sha256", src.Key)
	return nil
}
