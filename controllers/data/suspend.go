package data

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// suspendFacts are what the Suspended condition is made from.
type suspendFacts struct {
	// ready: the cluster may be suspended now (or already is).
	ready bool
	// waiting and waitingMsg say why not yet.
	waiting, waitingMsg string
}

// reconcileSuspend decides whether the members' Pods may stop. A cluster in
// the middle of a membership change waits for it to end (the cluster
// controller starts no new one meanwhile). With spec.backup set, a final
// backup is taken first, while the cluster still runs.
func (r *Reconciler) reconcileSuspend(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	f := &s.suspend
	if !c.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	if meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionSuspended) {
		// Once stopped, a cluster stays stopped whatever else changes in
		// its spec, until spec.suspend is false.
		f.ready = true
		return ctrl.Result{}, nil
	}
	progressing := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
	id, observed := c.ObservedID()
	switch {
	case observed && id == "":
		f.waiting, f.waitingMsg = etcdv1.ReasonWaitingForMembershipChange, "The cluster has not formed yet; it is suspended once it has"
		return ctrl.Result{}, nil
	case !observed || progressing == nil || progressing.ObservedGeneration != c.Generation:
		f.waiting, f.waitingMsg = etcdv1.ReasonWaitingForMembershipChange, "Waiting for the cluster controller to pause membership changes"
		return ctrl.Result{}, nil
	case progressing.Status == metav1.ConditionTrue:
		f.waiting, f.waitingMsg = etcdv1.ReasonWaitingForMembershipChange, fmt.Sprintf("A membership change runs (%s: %s); the cluster is suspended once it ends", progressing.Reason, progressing.Message)
		return ctrl.Result{}, nil
	}
	for _, m := range s.members {
		if role, ok := m.RegisteredRole(); !m.DeletionTimestamp.IsZero() || !ok || role == etcdv1.RoleLearner {
			f.waiting, f.waitingMsg = etcdv1.ReasonWaitingForMembershipChange, fmt.Sprintf("Member %s is joining or leaving; the cluster is suspended once it is done", m.Name)
			return ctrl.Result{}, nil
		}
	}
	if c.Spec.Backup != nil {
		done, err := r.finalBackup(ctx, s)
		if err != nil || !done {
			return ctrl.Result{}, err
		}
	}
	f.ready = true
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Suspended", "Suspend", "The members' Pods stop; their volumes and identities are kept")
	return ctrl.Result{}, nil
}

// finalBackup takes one backup per suspend request (per generation) and
// says whether it is complete.
func (r *Reconciler) finalBackup(ctx context.Context, s *scope) (bool, error) {
	c, f := s.cluster, &s.suspend
	name := fmt.Sprintf("%s-suspend-%s", c.Name, strconv.FormatInt(c.Generation, 10))
	for _, b := range s.backups {
		if b.Name != name {
			continue
		}
		switch {
		case kube.IsTrue(b.Status.Conditions, etcdv1.ConditionComplete, b.Generation):
			return true, nil
		case kube.IsTrue(b.Status.Conditions, etcdv1.ConditionFailed, b.Generation):
			f.waiting, f.waitingMsg = etcdv1.ReasonFinalBackupFailed, fmt.Sprintf("The final backup %s failed (%s); the cluster keeps running. Fix the destination and set spec.suspend again, or remove spec.backup", name, meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionFailed).Message)
			return false, nil
		}
		f.waiting, f.waitingMsg = etcdv1.ReasonTakingFinalBackup, fmt.Sprintf("Taking the final backup %s before the Pods stop", name)
		return false, nil
	}
	b := newBackup(c, name, "suspend")
	ctrl.LoggerFrom(ctx).Info("Taking the final backup before suspending", "backup", name)
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create backup %s: %w", name, err)
	}
	f.waiting, f.waitingMsg = etcdv1.ReasonTakingFinalBackup, fmt.Sprintf("Taking the final backup %s before the Pods stop", name)
	return false, nil
}

// newBackup is an EtcdBackup the operator makes for a cluster, to its
// scheduled destination. It is not owned by the cluster: snapshots outlive
// the cluster they were taken from.
func newBackup(c *etcdv1.EtcdCluster, name, kind string) *etcdv1.EtcdBackup {
	b := &etcdv1.EtcdBackup{}
	b.Name, b.Namespace = name, c.Namespace
	b.Labels = resources.ObjectLabels(c)
	b.Labels[etcdv1.BackupKindLabel] = kind
	b.Spec = etcdv1.EtcdBackupSpec{ClusterName: c.Name, Destination: c.Spec.Backup.Destination}
	return b
}
