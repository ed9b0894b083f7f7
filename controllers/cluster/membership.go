package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/failpoint"
	"github.com/raftsman/raftsman/pkg/resources"
)

// The membership steps change etcd one member at a time. Each returns a
// non-zero Result once it changed something or has to wait, so the next pass
// starts from a fresh view of etcd; the watch on EtcdMembers and Pods
// usually brings that pass sooner than the requeue.

// finishRemovals removes from etcd each member whose EtcdMember is being
// deleted, then releases the EtcdMember so that its Pod and PVC go.
func (r *Reconciler) finishRemovals(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, m := range s.members {
		if m.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(m, etcdv1.MemberFinalizer) {
			continue
		}
		s.progress, s.progressMsg = etcdv1.ReasonScalingDown, fmt.Sprintf("Removing member %s", m.Name)
		if !s.formed && s.cluster.Status.ClusterID != "" {
			s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Cannot remove member %s while etcd does not answer", m.Name)
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
		}
		if em, ok := s.inEtcd(m); ok {
			if res, err := r.removeFromEtcd(ctx, s, m, em); err != nil || !res.IsZero() {
				return res, err
			}
		} else if m.Status.MemberID != "" && s.formed {
			// A MemberRemove whose answer was lost (the member that served it
			// shut down first) succeeded all the same: etcd no longer lists it.
			r.Recorder.Eventf(s.cluster, m, corev1.EventTypeNormal, "MemberRemoved", "MemberRemove", "Member %s (%s) has left etcd", m.Name, m.Status.MemberID)
		}
		ctrl.LoggerFrom(ctx).Info("Releasing member", "member", m.Name)
		patch := client.MergeFrom(m.DeepCopy())
		controllerutil.RemoveFinalizer(m, etcdv1.MemberFinalizer)
		if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("release member %s: %w", m.Name, err)
		}
		// The member is gone from etcd; its status needs no more writes.
		delete(s.memberBases, m.Name)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return ctrl.Result{}, nil
}

// removeFromEtcd calls MemberRemove for em, first moving leadership away
// when em leads and refusing when the rest would have no healthy quorum.
func (r *Reconciler) removeFromEtcd(ctx context.Context, s *scope, m *etcdv1.EtcdMember, em etcd.Member) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !s.removalKeepsQuorum(em) {
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumAtRisk, fmt.Sprintf("Removing member %s now would leave fewer healthy voters than a quorum; waiting for the other members to be healthy", m.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if em.ID == s.leader && s.healthy(em.ID) {
		if to, ok := s.successor(em.ID, nil); ok {
			failpoint.Hit(failpoint.BeforeMoveLeader)
			return r.moveLeader(ctx, s, m, to, etcdv1.ReasonScalingDown, "removing")
		}
	}
	log.Info("Removing member from etcd", "member", m.Name, "id", etcd.FormatID(em.ID))
	failpoint.Hit(failpoint.BeforeMemberRemove)
	tctx, cancel := r.etcdCtx(ctx)
	defer cancel()
	err := s.client.MemberRemove(tctx, em.ID)
	observe("remove", err)
	if err != nil && !errors.Is(err, etcd.ErrMemberNotFound) {
		return r.notYet(s, err, etcdv1.ReasonWaitingForHealth, fmt.Sprintf("remove member %s", m.Name))
	}
	failpoint.Hit(failpoint.AfterMemberRemove)
	s.etcdList = slices.DeleteFunc(s.etcdList, func(x etcd.Member) bool { return x.ID == em.ID })
	r.Recorder.Eventf(s.cluster, m, corev1.EventTypeNormal, "MemberRemoved", "MemberRemove", "Removed member %s (%s) from etcd", m.Name, etcd.FormatID(em.ID))
	return ctrl.Result{}, nil
}

// moveLeader hands leadership from m, the leader, to the member to, before
// what is done to m next ("removing", "updating"); the next pass, with
// etcd's new view, goes on.
func (r *Reconciler) moveLeader(ctx context.Context, s *scope, m *etcdv1.EtcdMember, to etcd.Member, reason, next string) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).Info("Moving leadership away from the leader first", "member", m.Name, "to", to.Name, "next", next)
	tctx, cancel := r.etcdCtx(ctx)
	defer cancel()
	if err := s.client.MoveLeader(tctx, m.Spec.ClientURL, to.ID); err != nil {
		observe("move_leader", err)
		return r.notYet(s, err, reason, fmt.Sprintf("move leadership away from %s", m.Name))
	}
	observe("move_leader", nil)
	r.Recorder.Eventf(s.cluster, m, corev1.EventTypeNormal, eventLeaderMoved, "MoveLeader", "Moved leadership from %s to %s before %s it", m.Name, to.Name, next)
	countEvent(s.cluster, eventLeaderMoved)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// scaleDown picks one member to remove and deletes its EtcdMember (the
// persisted intent); finishRemovals does the rest.
func (r *Reconciler) scaleDown(ctx context.Context, s *scope) (ctrl.Result, error) {
	active := s.active()
	if len(active) <= s.desired || !s.formed {
		return ctrl.Result{}, nil
	}
	victim := s.pickVictim(active)
	s.progress, s.progressMsg = etcdv1.ReasonScalingDown, fmt.Sprintf("Scaling down from %d to %d members: removing %s", len(active), s.desired, victim.Name)
	if em, ok := s.inEtcd(victim); ok && !s.removalKeepsQuorum(em) {
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumAtRisk, fmt.Sprintf("Removing member %s now would leave fewer healthy voters than a quorum; waiting for the other members to be healthy", victim.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Scaling down", "member", victim.Name, "from", len(active), "to", s.desired)
	if err := r.Delete(ctx, victim); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("delete member %s: %w", victim.Name, err)
	}
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// scaleUp creates the EtcdMembers of every member still missing, at once,
// once every member is a healthy voter. Their existence is the intent that
// addLearners acts on; each one's Pod is made at once too and waits, its
// etcd not started, until etcd lists it (a prepared joiner:
// resources.JoinsGated), so that scheduling, volumes and image starts of
// all of them overlap with the first add.
func (r *Reconciler) scaleUp(ctx context.Context, s *scope) (ctrl.Result, error) {
	active := s.active()
	if len(active) >= s.desired || !s.formed {
		return ctrl.Result{}, nil
	}
	s.progress, s.progressMsg = etcdv1.ReasonScalingUp, fmt.Sprintf("Scaling up from %d to %d members", len(active), s.desired)
	if len(active) < len(s.members) {
		return ctrl.Result{}, nil // a removal is still under way
	}
	for _, m := range active {
		if em, ok := s.inEtcd(m); !ok || em.IsLearner {
			return ctrl.Result{}, nil // a member is being added: addLearners and promoteLearners go on
		} else if !s.healthy(em.ID) {
			s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForHealth, fmt.Sprintf("Member %s is not healthy; new members are added once all members are", m.Name)
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
		}
	}
	for range s.desired - len(active) {
		name := newMemberName(s.cluster.Name, s.hasMember)
		spec := r.joinerSpec(s, name)
		ctrl.LoggerFrom(ctx).Info("Creating member to add", "member", name, "version", spec.Version)
		if err := r.newMember(ctx, s, name, spec, nil); err != nil {
			return ctrl.Result{}, err
		}
		failpoint.Hit(failpoint.AfterJoinerCreate)
	}
	return ctrl.Result{}, nil
}

// joinerSpec is the spec of a member to add to the running cluster.
func (r *Reconciler) joinerSpec(s *scope, name string) etcdv1.EtcdMemberSpec {
	spec := r.memberSpec(s, name, etcdv1.InitialClusterStateExisting, "")
	if v := s.newMemberVersion(); v != spec.Version {
		// A version change is blocked or a downgrade runs: the new member
		// runs a version the others accept; the rollout updates it later.
		spec.Version = v
		if s.cluster.Spec.Image == "" {
			spec.Image = resources.ImageFor(v, r.Options.EtcdRepository)
		}
		spec.MaxLearners = resources.MaxLearners(v, r.Options.MaxLearners)
	}
	spec.InitialCluster = s.initialCluster(name, spec.PeerURL)
	return spec
}

// addLearners adds the members to be registered to etcd as learners, as
// many at once as etcd takes (learnerSlots). Each one's EtcdMember already
// exists, so a crash after MemberAddAsLearner is found again by peer URL in
// observeEtcd and never added twice.
func (r *Reconciler) addLearners(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.formed {
		return ctrl.Result{}, nil
	}
	slots, why := s.learnerSlots()
	learners := 0
	for _, em := range s.etcdList {
		if em.IsLearner {
			learners++
		}
	}
	for _, m := range s.active() {
		if _, ok := s.inEtcd(m); ok || m.Spec.InitialClusterState != etcdv1.InitialClusterStateExisting {
			continue
		}
		if learners >= slots {
			// promoteLearners frees a slot; the promotion's pass adds this one.
			s.joinersWaiting = fmt.Sprintf("member %s waits to be added: etcd holds %d learner(s) at once (%s)", m.Name, slots, why)
			s.progress, s.progressMsg = etcdv1.ReasonScalingUp, s.joinersWaiting
			return ctrl.Result{}, nil
		}
		s.progress, s.progressMsg = etcdv1.ReasonScalingUp, fmt.Sprintf("Adding member %s as a learner", m.Name)
		if !resources.JoinsGated(m, true) {
			// A member whose Pod is not prepared starts with the
			// --initial-cluster of its spec: etcd's member list as it is
			// now, with the learner (membership may have changed since its
			// EtcdMember was created). It is written before the add (the
			// add itself cannot be repeated), and the Pod starts only once
			// the member is Registered, after the add. A prepared joiner
			// takes the list from etcd as it starts (pkg/agent, join).
			if ic := s.initialCluster(m.Name, m.Spec.PeerURL); ic != m.Spec.InitialCluster {
				patch := client.MergeFrom(m.DeepCopy())
				m.Spec.InitialCluster = ic
				if err := r.Patch(ctx, m, patch); err != nil {
					return ctrl.Result{}, fmt.Errorf("record the initial cluster of %s: %w", m.Name, err)
				}
				s.wrote(m)
			}
		}
		ctrl.LoggerFrom(ctx).Info("Adding learner", "member", m.Name, "peerURL", m.Spec.PeerURL, "learners", learners, "slots", slots)
		failpoint.Hit(failpoint.BeforeMemberAdd)
		tctx, cancel := r.etcdCtx(ctx)
		em, err := s.client.MemberAddAsLearner(tctx, m.Spec.PeerURL)
		cancel()
		observe("add_learner", err)
		if err == nil {
			failpoint.Hit(failpoint.AfterMemberAdd)
		}
		if errors.Is(err, etcd.ErrPeerURLExists) {
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil // observeEtcd adopts it next pass
		}
		if err != nil {
			return r.notYet(s, err, etcdv1.ReasonWaitingForHealth, fmt.Sprintf("add member %s as a learner", m.Name))
		}
		em.PeerURLs = []string{m.Spec.PeerURL}
		s.etcdList = append(s.etcdList, em)
		learners++
		// The new learner checks the next adds too, with its own limit.
		slots = min(slots, max(1, int(m.Spec.MaxLearners)))
		m.Status.MemberID, m.Status.Role = etcd.FormatID(em.ID), etcdv1.RoleLearner
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeNormal, "MemberAdded", "MemberAddAsLearner", "Added member %s (%s) as a learner", m.Name, etcd.FormatID(em.ID))
	}
	return ctrl.Result{}, nil
}

// learnerFailingFor is how long a learner that never started may keep
// failing (its container exiting, its image missing) before it is added
// again: long enough for a first exit the kubelet's restart cures, short
// enough to be back well within a minute.
const learnerFailingFor = 20 * time.Second

// promoteLearners promotes a learner once its etcd has started, one per
// pass, the first started one first; etcd itself refuses while the learner
// is behind, which is retried soon.
func (r *Reconciler) promoteLearners(ctx context.Context, s *scope) (ctrl.Result, error) {
	var wait ctrl.Result
	for _, m := range s.active() {
		em, ok := s.inEtcd(m)
		if !ok || !em.IsLearner {
			continue
		}
		s.progress, s.progressMsg = etcdv1.ReasonPromotingLearner, fmt.Sprintf("Waiting for learner %s to start and catch up with the leader", m.Name)
		if s.joinersWaiting != "" {
			s.progressMsg += "; " + s.joinersWaiting
		}
		if why := s.learnerCannotJoin(m, em); why != "" {
			waited, _ := r.learnerStuck(m)
			return r.replaceStuckLearner(ctx, s, m, waited, why)
		}
		if waited, stuck := r.learnerStuck(m); stuck {
			why := "did not catch up with the leader"
			if !em.Started() {
				why = "did not start"
			}
			if n, o := s.replacing(); n == m {
				// Another learner on the same storage would fare no
				// better: a person decides (replacement.go).
				r.replacementStuck(s, o, fmt.Sprintf("its replacement %s %s within %s (%s)", m.Name, why, waited.Round(time.Second), s.unsettledWhy(m)))
				return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
			}
			return r.replaceStuckLearner(ctx, s, m, waited, why)
		}
		if !em.Started() {
			// A learner that has not started does not hold back another
			// that has. Its Pod starting wakes us; the requeue covers etcd
			// publishing the member a moment after it starts (a prepared
			// joiner's Pod started long before).
			wait = ctrl.Result{RequeueAfter: r.Options.RetryInterval}
			continue
		}
		failpoint.Hit(failpoint.BeforePromote)
		tctx, cancel := r.etcdCtx(ctx)
		err := s.client.MemberPromote(tctx, em.ID)
		cancel()
		observe("promote", err)
		if err == nil {
			failpoint.Hit(failpoint.AfterPromote)
		}
		if err != nil && !errors.Is(err, etcd.ErrNotLearner) {
			return r.notYet(s, err, etcdv1.ReasonPromotingLearner, fmt.Sprintf("promote learner %s", m.Name))
		}
		for i := range s.etcdList {
			if s.etcdList[i].ID == em.ID {
				s.etcdList[i].IsLearner = false
			}
		}
		m.Status.Role = etcdv1.RoleVoter
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeNormal, "MemberPromoted", "MemberPromote", "Promoted learner %s (%s) to voter", m.Name, etcd.FormatID(em.ID))
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return wait, nil
}
