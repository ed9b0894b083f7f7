package cluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// restoring says whether the cluster is still to be made from a snapshot.
func restoring(c *etcdv1.EtcdCluster) bool {
	return c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil && c.Status.ClusterID == ""
}

// waitForRestore holds the bootstrap of a restored cluster back until the
// data controller found the snapshot and checked its sha256: a damaged
// snapshot starts nothing.
func (r *Reconciler) waitForRestore(_ context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if !restoring(c) || len(s.members) > 0 || s.restoringBackup() {
		return ctrl.Result{}, nil
	}
	if _, ok := c.CheckedRestore(); ok {
		return ctrl.Result{}, nil
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForRestore, "The first member waits for the RestoreReady condition: the data controller checks the snapshot first"
	return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
}

// syncStorage gives every member with a PVC the volume size of the spec;
// the member controller expands the PVC online, with no restart. Sizes
// only grow (the CRD refuses a smaller one). A Memory member's tmpfs size
// is part of its Pod, so it changes through the rollout instead.
func (r *Reconciler) syncStorage(ctx context.Context, s *scope) (ctrl.Result, error) {
	want := s.cluster.Spec.Storage.Size
	if want == nil {
		return ctrl.Result{}, nil
	}
	for _, m := range s.active() {
		if m.Spec.Storage.Medium == etcdv1.StorageMediumMemory {
			continue
		}
		have := m.Spec.Storage.Size
		if have != nil && have.Cmp(*want) >= 0 {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Growing the member's volume", "member", m.Name, "size", want.String())
		patch := client.MergeFrom(m.DeepCopy())
		size := want.DeepCopy()
		m.Spec.Storage.Size = &size
		if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("grow the volume of member %s: %w", m.Name, err)
		}
		s.wrote(m)
	}
	return ctrl.Result{}, nil
}
