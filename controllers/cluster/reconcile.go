package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// cacheLag is how soon a pass that found the cache behind this controller's
// own last write runs again, should that write's watch event not bring it
// back first.
const cacheLag = time.Second

// scope is what one reconcile of a cluster decides, beside what it knows
// of the cluster (view, view.go).
type scope struct {
	view

	base *etcdv1.EtcdCluster
	// memberBases holds each member as read, for the status apply of the
	// ones that changed.
	memberBases map[string]*etcdv1.EtcdMember

	client etcd.Client
	// etcdErr is the last unexpected etcd error, for the conditions.
	etcdErr error

	// progress says what membership change is under way, if any, and
	// waiting why it does not move on right now.
	progress, progressMsg string
	waiting, waitingMsg   string
	// joinersWaiting says which members wait for a learner slot, for the
	// Progressing message of the pass that waits for a learner.
	joinersWaiting string

	// quorumReport names, once etcd has no quorum, the members gone and
	// what each reachable member holds.
	quorumReport string

	// plan is how the members get to spec.version (prepareVersion).
	plan versionPlan
	// stuck says why a rollout stopped, replaceStuck why a replacement
	// did, for the Degraded condition.
	stuck, replaceStuck string
	// foreign names the objects under names the cluster needs (its
	// Services, its PDB) that it does not own: they are left as they are.
	foreign []string

	// acted is the operation that ended the pass (operations.go).
	acted opKind
	// observing: etcd's answer is not there yet (Observer), so the pass
	// decided nothing and its facts say nothing of etcd.
	observing bool
	// pollIn is how soon etcd is polled again (pollInterval), once known.
	pollIn time.Duration

	// afterWrite runs once this pass's status is written: events that
	// report what the status records, so that a pass whose write failed
	// (and is done again) does not report it twice.
	afterWrite []func()

	// written records the writes of this pass (Reconciler.written).
	written *kube.Written
}

// Reconcile drives an EtcdCluster towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	if r.Options.Observe != nil {
		defer r.Options.Observe(req.String())()
	}
	c := &etcdv1.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Etcd.Forget(req.String())
			r.Observer.forget(req.NamespacedName)
			r.polls.forget(req.NamespacedName)
			r.creds.Forget(req.NamespacedName)
			dbSizes.Delete(req.String())
			forgetEvents(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, c)
	}
	if err := kube.AddFinalizer(ctx, r.Client, ControllerName, c, etcdv1.ClusterFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	s, err := r.newScope(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.cacheBehind(s) {
		// The cache has not seen this controller's last write yet: that
		// write's event brings the cluster back.
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	defer func() {
		if !s.observing {
			// A pass without etcd's answer keeps the conditions as they
			// are: it still writes what its steps recorded on the way.
			setStatus(s)
		}
		err := r.applyStatuses(ctx, s)
		if err == nil {
			for _, f := range s.afterWrite {
				f()
			}
		}
		retErr = errors.Join(retErr, err)
	}()
	return kube.Run(ctx, s, r.steps(s)...)
}

// steps are the steps of one pass, in this order (the file of each in
// brackets):
//
//  1. ensureServices: the peer and client Services [services.go];
//  2. ensurePDB: the PodDisruptionBudget [services.go];
//  3. syncStorage: PVCs follow spec.storage.size [storage.go];
//  4. waitForTLS(true): a new cluster waits for its certificates [bootstrap.go];
//  5. waitForRestore: a restored one for its checked snapshot [storage.go];
//  6. bootstrap: the initial members of a new cluster, or the first member
//     of one a quorum recovery restores from a backup [bootstrap.go];
//  7. observeEtcd: what etcd says of its members and alarms [observe.go];
//  8. undrain: back into the client Service, a member whose
//     defragmentation cannot go on now [maintenance.go];
//  9. holdForUndecodable: nothing changes while a member cannot be read;
//  10. arbitrate: the operations, in the order operations.go gives and
//     explains: quorum recovery [recovery.go], removal [membership.go],
//     healing [healing.go], version [version.go], scaling [membership.go],
//     rollout [rollout.go], maintenance [maintenance.go];
//  11. healthCheckLater: come back for a health check.
//
// A suspended cluster runs 1-3 only: its Pods are stopped. While it is
// being suspended, a change under way ends (removals, learners added and
// promoted) and none starts, not even a quorum recovery: without a quorum
// the pass waits (holdWithoutQuorum).
func (r *Reconciler) steps(s *scope) []kube.Step[*scope] {
	switch {
	case s.suspended:
		return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage}
	case s.suspending:
		return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage, r.waitForTLS(true), r.waitForRestore,
			r.bootstrap, r.observeEtcd, r.holdWithoutQuorum, r.undrain, r.waitForTLS(false), r.finishRemovals, r.addLearners, r.promoteLearners, r.healthCheckLater}
	}
	return []kube.Step[*scope]{r.ensureServices, r.ensurePDB, r.syncStorage, r.waitForTLS(true), r.waitForRestore,
		r.bootstrap, r.observeEtcd, r.undrain, r.holdForUndecodable, r.arbitrate(r.operations()), r.healthCheckLater}
}

func (r *Reconciler) newScope(ctx context.Context, c *etcdv1.EtcdCluster) (*scope, error) {
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, kube.OfCluster(c.Namespace, c.Name, kube.WithUndecodable)...); err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	s := &scope{
		view: view{cluster: c, desired: int(resources.Replicas(c)), health: map[uint64]etcd.Status{}},
		base: c.DeepCopy(), memberBases: map[string]*etcdv1.EtcdMember{}, written: &r.written,
	}
	if c.Spec.Suspend {
		// Once True, Suspended stays True while spec.suspend does (the
		// data controller restamps it for later generations).
		s.suspended = meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionSuspended)
		s.suspending = !s.suspended
	}
	if m := c.Status.Maintenance; m != nil && m.Defrag != nil && m.Defrag.Phase == etcdv1.DefragDefragmenting && r.Long.busy(c, defragKey(m.Defrag)) {
		s.defragging = m.Defrag.Member
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !metav1.IsControlledBy(m, c) {
			continue
		}
		if etcdv1.Undecodable(m) != "" {
			s.undecodable = append(s.undecodable, m.Name)
			continue
		}
		s.members = append(s.members, m)
		s.memberBases[m.Name] = m.DeepCopy()
	}
	slices.SortFunc(s.members, func(a, b *etcdv1.EtcdMember) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	if n, _ := s.replacing(); n != nil {
		// The member that replaces another counts beside it until the
		// other leaves (replacement.go).
		s.desired++
	}
	return s, nil
}

// cacheBehind says whether the cluster or one of its members, as cached,
// is older than this controller's last write to it.
func (r *Reconciler) cacheBehind(s *scope) bool {
	if r.written.Behind(s.cluster) {
		return true
	}
	return slices.ContainsFunc(s.members, func(m *etcdv1.EtcdMember) bool { return r.written.Behind(m) })
}

// holdForUndecodable stops the pass while an EtcdMember of the cluster
// cannot be decoded (a value an older CRD let through; the undecodable
// controller reports it on the member): the cluster would count one member
// too few and add another, or recover a lost quorum without fencing it.
// Nothing changes membership or restarts a member until it is fixed or
// deleted; Degraded names it.
func (r *Reconciler) holdForUndecodable(_ context.Context, s *scope) (ctrl.Result, error) {
	if len(s.undecodable) == 0 {
		return ctrl.Result{}, nil
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonMemberUndecodable, fmt.Sprintf("No membership change, rollout or recovery while EtcdMember %s cannot be decoded (see its Undecodable event): fix it with kubectl edit or delete it", strings.Join(s.undecodable, ", "))
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// holdWithoutQuorum ends the pass of a cluster being suspended while etcd
// has no quorum: no membership change can end, and no recovery starts
// while spec.suspend asks for the members to stop.
func (r *Reconciler) holdWithoutQuorum(_ context.Context, s *scope) (ctrl.Result, error) {
	if !s.quorumLost {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// applyStatuses writes the cluster's status and that of each member whose
// status this reconcile changed.
func (r *Reconciler) applyStatuses(ctx context.Context, s *scope) error {
	var errs []error
	for _, m := range s.members {
		if base, ok := s.memberBases[m.Name]; ok {
			rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, base, m)
			errs = append(errs, client.IgnoreNotFound(err))
			if rv != "" {
				r.written.Record(m, rv)
			}
		}
	}
	rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, s.cluster)
	if rv != "" {
		r.written.Record(s.cluster, rv)
	}
	return errors.Join(append(errs, err)...)
}

// notYet turns etcd's "not now" answers into a retry with a reason.
func (r *Reconciler) notYet(s *scope, err error, reason, msg string) (ctrl.Result, error) {
	if errors.Is(err, etcd.ErrNotYet) || errors.Is(err, etcd.ErrUnreachable) {
		s.waiting, s.waitingMsg = reason, fmt.Sprintf("%s: %v", msg, err)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	s.etcdErr = err
	return ctrl.Result{}, fmt.Errorf("%s: %w", msg, err)
}

// wrote records a write of obj this pass made, so that the next pass does
// not decide from a cached copy that has not seen it.
func (s *scope) wrote(obj client.Object) {
	s.written.Record(obj, "")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// healthCheckLater brings the cluster back for a health check: soon while a
// member does not answer (a member that just started or was promoted may miss
// one status question, and no Kubernetes event follows its recovery), at
// the pace of its polls once all are healthy (polls.go).
func (r *Reconciler) healthCheckLater(_ context.Context, s *scope) (ctrl.Result, error) {
	for _, em := range s.etcdList {
		if !s.healthy(em.ID) {
			return ctrl.Result{RequeueAfter: r.Options.UnhealthyInterval}, nil
		}
	}
	return ctrl.Result{RequeueAfter: r.pollInterval(s)}, nil
}

// pollInterval is how soon etcd is polled again after this pass, counted
// once per pass.
func (r *Reconciler) pollInterval(s *scope) time.Duration {
	if s.pollIn == 0 {
		s.pollIn = r.polls.next(&s.view, time.Now(), r.Options.HealthInterval, r.Options.CalmHealthInterval)
	}
	return s.pollIn
}
