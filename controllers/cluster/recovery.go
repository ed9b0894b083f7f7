package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// Recovery from a lost quorum (etcd's disaster recovery, by etcd's own
// means): one member restarts alone from its own data with etcd's
// --force-new-cluster, which makes it a one-member cluster that keeps every
// write it has; the members left behind are released with their volumes
// kept; then new members join as learners, as for any scale-up.
//
// Every step is recorded before it is taken, so that an operator restart in
// the middle resumes and never forces twice:
//  1. status.recovery is written with phase Forcing and the member, and
//     only once that status is stored (the next pass reads it back)
//  2. the member's spec gets forceNewCluster, and its Pod restarts with the
//     flag (the member controller, through the spec hash);
//  3. once etcd answers as that one member, forceNewCluster is cleared (the
//     Pod restarts without it: a later restart must never force again) and
//     the phase is Regrowing;
//  4. the members left behind are lost (etcd no longer lists them):
//     replaceLostMembers keeps their volumes, then scaleUp adds learners;
//  5. Available and converged: phase Done, the annotation removed.

// defaultQuorumLossAfter is how long an Automatic recovery waits.
const defaultQuorumLossAfter = 5 * time.Minute

// recovering says whether a recovery is under way (not Done).
func (s *scope) recovering() bool {
	rs := s.cluster.Status.Recovery
	return rs != nil && rs.Phase != etcdv1.RecoveryDone
}

// recoverQuorum starts or goes on with a recovery while etcd answers no
// membership question (observeEtcd found no quorum).
func (r *Reconciler) recoverQuorum(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if s.recovering() {
		return r.forceFrom(ctx, s)
	}
	name, automatic, why := r.recoverySource(s)
	if name == "" {
		if why != "" {
			s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, why
		}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval * 5}, nil
	}
	m := s.memberNamed(name)
	st, err := r.memberStatus(ctx, s, m)
	if err != nil {
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Cannot recover the quorum from member %s: its etcd does not answer (%v); name a member that runs", name, err)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval * 5}, nil
	}
	// 1. The intent, stored before anything is forced.
	c.Status.Recovery = &etcdv1.RecoveryStatus{
		Phase: etcdv1.RecoveryForcing, Member: name, Revision: st.Revision, RaftIndex: st.RaftIndex, Automatic: automatic,
		StartedAt: metav1.Now(),
		Message:   fmt.Sprintf("Restarting member %s alone from its own data (raft index %d, revision %d) with --force-new-cluster", name, st.RaftIndex, st.Revision),
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, c.Status.Recovery.Message
	r.Recorder.Eventf(c, m, corev1.EventTypeWarning, "QuorumRecoveryStarted", "Recover", "Recovering the lost quorum from member %s (raft index %d, revision %d): it restarts alone with --force-new-cluster; the other members' volumes are kept", name, st.RaftIndex, st.Revision)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// recoverySource is the member to recover from: the one the annotation
// names, or, with spec.recovery.quorumLoss Automatic, the reachable member
// with the highest raft index once the quorum has been lost for
// quorumLossAfter and no other member answered during that time. why says
// why there is none (yet).
func (r *Reconciler) recoverySource(s *scope) (name string, automatic bool, why string) {
	c := s.cluster
	if want, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
		if s.memberNamed(want) == nil {
			return "", false, fmt.Sprintf("The %s annotation names %q, which is not a member of this cluster; name one of its EtcdMembers", etcdv1.RecoverQuorumAnnotation, want)
		}
		return want, false, ""
	}
	if c.Spec.Recovery.QuorumLoss != etcdv1.QuorumLossAutomatic {
		return "", false, fmt.Sprintf("etcd has no quorum. To recover, annotate the cluster with %s=<member> (the member to restart alone from its own data; see status: the reachable members and their raft index), or set spec.recovery.quorumLoss Automatic", etcdv1.RecoverQuorumAnnotation)
	}
	after := defaultQuorumLossAfter
	if d, err := time.ParseDuration(c.Spec.Recovery.QuorumLossAfter); err == nil && c.Spec.Recovery.QuorumLossAfter != "" {
		after = d
	}
	a := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionAvailable)
	if a == nil || a.Reason != etcdv1.ReasonQuorumLost {
		return "", false, "" // just lost: the status says so this pass
	}
	if lost := time.Since(a.LastTransitionTime.Time); lost < after {
		return "", false, fmt.Sprintf("etcd has no quorum since %s; an Automatic recovery starts after %s if the members gone stay gone", a.LastTransitionTime.UTC().Format(time.RFC3339), after)
	}
	var best string
	var index uint64
	for _, m := range s.active() {
		st, ok := s.reachable[m.Name]
		if !ok {
			continue
		}
		if best == "" || st.RaftIndex > index {
			best, index = m.Name, st.RaftIndex
		}
	}
	if best == "" {
		return "", false, "etcd has no quorum and no member answers; no member's data can be recovered from automatically (restore a backup into a new cluster)"
	}
	if len(s.reachable)*2 > len(s.active()) {
		// A quorum of members answers on its own: etcd is electing, not lost.
		return "", false, ""
	}
	return best, true, ""
}

func (s *scope) memberNamed(name string) *etcdv1.EtcdMember {
	i := slices.IndexFunc(s.active(), func(m *etcdv1.EtcdMember) bool { return m.Name == name })
	if i < 0 {
		return nil
	}
	return s.active()[i]
}

func (r *Reconciler) memberStatus(ctx context.Context, s *scope, m *etcdv1.EtcdMember) (etcd.Status, error) {
	if st, ok := s.reachable[m.Name]; ok {
		return st, nil
	}
	tctx, cancel := context.WithTimeout(ctx, r.Options.StatusTimeout)
	defer cancel()
	return s.client.Status(tctx, m.Spec.ClientURL)
}

// forceFrom goes on with a recovery whose intent is stored.
func (r *Reconciler) forceFrom(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	m := s.memberNamed(rs.Member)
	if m == nil {
		rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
		rs.Message = fmt.Sprintf("Member %s is gone; the recovery stopped", rs.Member)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
	}
	switch rs.Phase {
	case etcdv1.RecoveryForcing:
		if base := s.base.Status.Recovery; base == nil || base.Phase != etcdv1.RecoveryForcing || base.Member != rs.Member {
			// 1. not stored yet: the status write of this pass stores it.
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
		}
		if s.formed && len(s.etcdList) == 1 {
			if em, ok := s.inEtcd(m); ok && em.ID == s.etcdList[0].ID {
				// 3. etcd answers as that one member.
				if m.Spec.ForceNewCluster {
					if err := r.setForce(ctx, s, m, false); err != nil {
						return ctrl.Result{}, err
					}
				}
				rs.Phase = etcdv1.RecoveryRegrowing
				rs.Message = fmt.Sprintf("Member %s runs alone from its own data (revision %d); the others are released with their volumes kept, and new members join as learners", m.Name, rs.Revision)
				r.Recorder.Eventf(c, m, corev1.EventTypeNormal, "QuorumRestored", "Recover", "Member %s runs alone as a new one-member cluster with its data; growing back to %d members", m.Name, s.desired)
				return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
			}
		}
		if !m.Spec.ForceNewCluster && s.formed {
			// etcd answered before anything was forced: the quorum came
			// back by itself, and nothing is to be forced any more.
			rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
			rs.Message = "etcd regained its quorum by itself before anything was forced; nothing was changed"
			r.Recorder.Eventf(c, m, corev1.EventTypeNormal, "QuorumRecoveryCancelled", "Recover", "%s", rs.Message)
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
		}
		if !m.Spec.ForceNewCluster {
			// 2. force it, once: the flag is the stored intent.
			if err := r.setForce(ctx, s, m, true); err != nil {
				return ctrl.Result{}, err
			}
		}
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Recovering the quorum: member %s restarts alone with --force-new-cluster", m.Name)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval * 5}, nil
	case etcdv1.RecoveryRegrowing:
		if m.Spec.ForceNewCluster {
			if err := r.setForce(ctx, s, m, false); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

// setForce sets or clears a member's forceNewCluster.
func (r *Reconciler) setForce(ctx context.Context, s *scope, m *etcdv1.EtcdMember, on bool) error {
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.ForceNewCluster = on
	if err := r.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("set forceNewCluster=%v on member %s: %w", on, m.Name, err)
	}
	s.rebase(m)
	ctrl.LoggerFrom(ctx).Info("Set forceNewCluster", "member", m.Name, "on", on)
	return nil
}

// continueRecovery goes on with a recovery while etcd answers: nothing
// else runs until the member forced runs alone without the flag.
func (r *Reconciler) continueRecovery(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.recovering() {
		return ctrl.Result{}, nil
	}
	phase := s.cluster.Status.Recovery.Phase
	res, err := r.forceFrom(ctx, s)
	if err != nil || phase == etcdv1.RecoveryForcing {
		return res, err
	}
	return ctrl.Result{}, nil
}

// finishRecovery ends a recovery once the cluster is back at its size and
// healthy: phase Done, and the annotation that asked for it removed.
func (r *Reconciler) finishRecovery(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	if rs == nil || rs.Phase != etcdv1.RecoveryRegrowing || !s.formed {
		return ctrl.Result{}, nil
	}
	all, healthy := s.voters()
	if all != s.desired || healthy != all || len(s.active()) != s.desired {
		s.progress, s.progressMsg = etcdv1.ReasonReplacingMember, fmt.Sprintf("Recovered from member %s; growing back to %d members (%d healthy voters)", rs.Member, s.desired, healthy)
		return ctrl.Result{}, nil
	}
	if err := r.dropRecoverAnnotation(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
	rs.Message = fmt.Sprintf("Recovered from member %s at revision %d; the volumes of the members left behind are kept, labelled %s=%s", rs.Member, rs.Revision, etcdv1.RetainedFromLabel, c.Name)
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "QuorumRecovered", "Recover", "%s", rs.Message)
	return ctrl.Result{}, nil
}

// dropRecoverAnnotation removes the annotation that asked for a recovery
// once the recovery ended, however it ended: left in place, it would start
// a forced recovery at the next loss with nobody deciding. A copy is
// patched: the answer carries the stored status, which must not overwrite
// what this pass decided.
func (r *Reconciler) dropRecoverAnnotation(ctx context.Context, s *scope) error {
	c := s.cluster
	if _, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; !ok {
		return nil
	}
	cp := c.DeepCopy()
	patch := client.MergeFrom(cp.DeepCopy())
	delete(cp.Annotations, etcdv1.RecoverQuorumAnnotation)
	if err := r.Patch(ctx, cp, patch); err != nil {
		return fmt.Errorf("remove the %s annotation: %w", etcdv1.RecoverQuorumAnnotation, err)
	}
	c.Annotations, c.ResourceVersion = cp.Annotations, cp.ResourceVersion
	s.base.Annotations, s.base.ResourceVersion = maps.Clone(cp.Annotations), cp.ResourceVersion
	return nil
}

// keepVolumeOfLost makes a lost member release its PVC before it is
// deleted while a recovery runs: its data may be all that is left of some
// writes. It says whether the member may go now.
func (r *Reconciler) keepVolumeOfLost(ctx context.Context, s *scope, m *etcdv1.EtcdMember) (bool, error) {
	if !s.recovering() || s.cluster.Status.Recovery.Member == m.Name {
		return true, nil
	}
	if m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain {
		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.DeletionPolicy = etcdv1.DeletionPolicyRetain
		if err := r.Patch(ctx, m, patch); err != nil {
			return false, fmt.Errorf("keep the volume of member %s: %w", m.Name, err)
		}
		s.rebase(m)
		return false, nil
	}
	return kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation), nil
}
