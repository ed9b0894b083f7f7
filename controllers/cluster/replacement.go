package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/failpoint"
	"github.com/raftsman/raftsman/pkg/resources"
)

// Replacement moves a running cluster to other storage: a member whose
// volume is not what spec.storage asks for (another StorageClass, a
// smaller size, another medium: view.outdatedStorage) cannot take it by a
// restart, so it is replaced through etcd's membership API, one member at
// a time:
//
//  1. A new member is created on the new storage, annotated with the name
//     of the member it replaces (the persisted intent). While it exists
//     the cluster counts one member more than spec.replicas, so scaling
//     adds it as a learner and promotes it once etcd says it is in sync.
//  2. Once it is a healthy, caught-up voter and every voter is healthy,
//     the old member's EtcdMember is deleted: finishRemovals moves the
//     leadership away if it leads, calls MemberRemove, and its Pod and
//     PVC go (the PVC is kept under deletionPolicy Retain).
//
// A member that is down because its Pod cannot follow its volume (the
// scheduler says its volume is bound where the Pod's new scheduling may
// not run) is removed first instead, as a lost member is: etcd adds no
// member, not even a learner, while a voter is not connected. Scaling
// then adds its successor.
//
// Followers go first and the leader last. A replacement starts only while
// every other member is a healthy voter (the member replaced may be down:
// one whose Pod cannot follow its volume is), the cluster has spec.replicas members,
// and no rollout or defragmentation runs (those end first), and only when
// every member's database fits the quota of the new volumes. A new member
// that does not start or catch up within the learner timeout stops the
// replacement (Degraded, reason ReplacementStuck): the old member stays,
// and a new spec decides: set spec.storage back or fix it. Either way the
// new member is then one member too many (view.replacing), which scaling
// removes, and the replacement starts again if the spec still asks for
// one. The operator killed at any point
// finds the intent in the annotation and the EtcdMembers.

// replaceStorage is the replacement operation's step.
func (r *Reconciler) replaceStorage(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.formed || s.suspending {
		return ctrl.Result{}, nil
	}
	if n, o := s.replacing(); n != nil {
		return r.continueReplacement(ctx, s, n, o)
	}
	o, current := s.nextToReplace()
	if o == nil {
		return ctrl.Result{}, nil
	}
	return r.startReplacement(ctx, s, o, current)
}

// startReplacement creates the member that replaces o, once the gates
// allow it.
func (r *Reconciler) startReplacement(ctx context.Context, s *scope, o *etcdv1.EtcdMember, current int) (ctrl.Result, error) {
	c := s.cluster
	total := int(resources.Replicas(c))
	if ro := c.Status.Rollout; (ro != nil && ro.Member != "" && ro.Member != o.Name) || s.defragging != "" || len(s.active()) != s.desired {
		// A rollout, a defragmentation or scaling ends first: the
		// operations after this one go on. A rollout that waits for o
		// itself (its new scheduling is what its volume cannot follow)
		// never would.
		return ctrl.Result{}, nil
	}
	why := s.outdatedStorage(o)
	s.progress, s.progressMsg = etcdv1.ReasonReplacingMembers, fmt.Sprintf("Replacing member %s (%d of %d): %s", o.Name, current+1, total, why)
	if !s.healthyVotersBut(o) {
		s.waiting, s.waitingMsg = etcdv1.ReasonReplacingMembers, fmt.Sprintf("Replacing member %s (%d of %d) waits until every other member is a healthy voter", o.Name, current+1, total)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if em, ok := s.inEtcd(o); ok && !s.healthy(em.ID) {
		// o is down (its Pod cannot follow its volume), and etcd adds no
		// member, not even a learner, while a voter is not connected: o
		// leaves first, as a lost member does, and scaling adds its
		// successor. The others hold every acknowledged write.
		return r.removeReplaced(ctx, s, o, fmt.Sprintf("Member %s (%d of %d), which is down, is removed first: etcd adds no member while a voter is down; a new member follows", o.Name, current+1, total))
	}
	if full := s.databaseTooLarge(r.joinerSpec(s, "")); full != "" {
		r.replacementStuck(s, o, full)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if adopted, err := r.adoptStorageClass(ctx, s, o); err != nil || adopted {
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, err
	}
	name := newMemberName(c.Name, s.hasMember)
	spec := r.joinerSpec(s, name)
	ctrl.LoggerFrom(ctx).Info("Creating member to replace another", "member", name, "replaces", o.Name, "why", why)
	if err := r.newMember(ctx, s, name, spec, map[string]string{etcdv1.ReplacesAnnotation: o.Name}); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(c, o, corev1.EventTypeNormal, eventReplacingMember, "Replace", "Member %s (%d of %d) is replaced by a new member %s: %s", o.Name, current+1, total, name, why)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// continueReplacement waits for n, the member that replaces o, to be a
// healthy voter, then deletes o's EtcdMember.
func (r *Reconciler) continueReplacement(ctx context.Context, s *scope, n, o *etcdv1.EtcdMember) (ctrl.Result, error) {
	step := s.replacementStep()
	s.progress = etcdv1.ReasonReplacingMembers
	if !s.settled(n) {
		// Being caught up shows in no watched object: look again soon.
		s.progressMsg = fmt.Sprintf("%s: waiting for %s to be a healthy voter (%s)", step, n.Name, s.unsettledWhy(n))
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if !s.healthyVotersBut(o) {
		s.waiting, s.waitingMsg = etcdv1.ReasonReplacingMembers, fmt.Sprintf("%s: %s is a voter; %s is removed once every other member is a healthy voter", step, n.Name, o.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	s.progressMsg = fmt.Sprintf("%s: %s is a healthy voter; removing %s", step, n.Name, o.Name)
	return r.removeReplaced(ctx, s, o, fmt.Sprintf("Member %s is replaced by %s, a healthy voter, and leaves etcd (%s)", o.Name, n.Name, step))
}

// removeReplaced deletes the EtcdMember of o, a replaced member: the
// persisted intent finishRemovals acts on.
func (r *Reconciler) removeReplaced(ctx context.Context, s *scope, o *etcdv1.EtcdMember, msg string) (ctrl.Result, error) {
	failpoint.Hit(failpoint.BeforeReplacedRemoval)
	ctrl.LoggerFrom(ctx).Info("Removing a replaced member", "member", o.Name, "why", msg)
	r.Recorder.Eventf(s.cluster, o, corev1.EventTypeNormal, eventMemberReplaced, "Replace", "%s", msg)
	countEvent(s.cluster, eventMemberReplaced)
	if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("delete replaced member %s: %w", o.Name, err)
	}
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// replacementStuck stops the replacement of o: Degraded says why, with an
// event the first time.
func (r *Reconciler) replacementStuck(s *scope, o *etcdv1.EtcdMember, why string) {
	s.replaceStuck = fmt.Sprintf("The replacement of member %s stopped: %s. %s stays and no other member is replaced; change spec.storage to go on (set it back to cancel)", o.Name, why, o.Name)
	if prev := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionDegraded); prev == nil || prev.Reason != etcdv1.ReasonReplacementStuck {
		r.Recorder.Eventf(s.cluster, o, corev1.EventTypeWarning, eventReplacementStuck, "Replace", "%s", s.replaceStuck)
		countEvent(s.cluster, eventReplacementStuck)
	}
	s.progressMsg = s.replaceStuck
}

// adoptStorageClass records the StorageClass of o's volume in its spec
// when o was made without one (the default class) and its PVC is of the
// class the spec now names: the volume is what the spec asks for, and
// needs no replacement.
func (r *Reconciler) adoptStorageClass(ctx context.Context, s *scope, o *etcdv1.EtcdMember) (bool, error) {
	want := s.cluster.Spec.Storage.StorageClassName
	if want == nil || o.Spec.Storage.StorageClassName != nil || !resources.UsesPVC(o) {
		return false, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: resources.PVCName(o.Name)}, pvc); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get the volume of %s: %w", o.Name, err)
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != *want:
		return false, nil
	}
	ctrl.LoggerFrom(ctx).Info("Recording the StorageClass of a member's volume", "member", o.Name, "class", *want)
	patch := client.MergeFrom(o.DeepCopy())
	o.Spec.Storage.StorageClassName = pvc.Spec.StorageClassName
	if err := r.Patch(ctx, o, patch); err != nil {
		return false, fmt.Errorf("record the StorageClass of %s: %w", o.Name, err)
	}
	s.wrote(o)
	return true, nil
}
