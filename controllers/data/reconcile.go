package data

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// scope is what one reconcile of a cluster learns.
type scope struct {
	cluster *etcdv1.EtcdCluster
	base    *etcdv1.EtcdCluster
	now     time.Time

	// backups are the cluster's EtcdBackups, oldest first.
	backups []*etcdv1.EtcdBackup
	members []*etcdv1.EtcdMember
	pvcs    []*corev1.PersistentVolumeClaim

	suspend suspendFacts
	storage storageFacts
	sched   scheduleFacts
	restore restoreFacts
}

// cacheLag is how soon a pass that found the cache behind this controller's
// own last status write runs again, should that write's watch event not
// bring it back first.
const cacheLag = time.Second

// Reconcile keeps a cluster's Suspended, StorageReady, BackupReady and
// RestoreReady conditions, and does what they stand for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	c := &etcdv1.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		// Snapshots outlive their cluster: nothing to clean up.
		return ctrl.Result{}, nil
	}
	if r.written.Behind(c) {
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	s, err := r.newScope(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		setStatus(s)
		rv, err := kube.ApplyStatus(ctx, r.Client, StatusOwner, s.base, c)
		if rv != "" {
			r.written.Record(c, rv)
		}
		retErr = errors.Join(retErr, err)
	}()
	// Each concern stands on its own, so all run and the soonest requeue
	// wins: 1. suspend; 2. volume sizes; 3. scheduled backups and their
	// retention; 4. the snapshot a new cluster is restored from.
	return runAll(ctx, s, r.reconcileSuspend, r.observeStorage, r.reconcileSchedule, r.reconcileRestore)
}

// runAll runs every step and merges their results: the first error, and
// the soonest requeue.
func runAll(ctx context.Context, s *scope, steps ...kube.Step[*scope]) (ctrl.Result, error) {
	var out ctrl.Result
	var errs []error
	for _, step := range steps {
		res, err := step(ctx, s)
		errs = append(errs, err)
		if res.RequeueAfter > 0 && (out.RequeueAfter == 0 || res.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = res.RequeueAfter
		}
	}
	return out, errors.Join(errs...)
}

func (r *Reconciler) newScope(ctx context.Context, c *etcdv1.EtcdCluster) (*scope, error) {
	s := &scope{cluster: c, base: c.DeepCopy(), now: now(r.Now)}
	in := kube.OfCluster(c.Namespace, c.Name)
	backups := &etcdv1.EtcdBackupList{}
	if err := r.List(ctx, backups, in...); err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	for i := range backups.Items {
		if b := &backups.Items[i]; b.Spec.ClusterName == c.Name {
			s.backups = append(s.backups, b)
		}
	}
	slices.SortFunc(s.backups, func(a, b *etcdv1.EtcdBackup) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	members := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, members, in...); err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	for i := range members.Items {
		s.members = append(s.members, &members.Items[i])
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, pvcs, append(in, client.MatchingLabels(resources.ClusterLabels(c.Name)))...); err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for i := range pvcs.Items {
		if _, ok := pvcs.Items[i].Labels[etcdv1.MemberLabel]; ok {
			s.pvcs = append(s.pvcs, &pvcs.Items[i])
		}
	}
	return s, nil
}
