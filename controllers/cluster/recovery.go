package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
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
//
// A recovery is one operation (operations.go), entered from one place,
// recover: recoverQuorum starts one, or goes on with it, while etcd has no
// quorum; continueRecovery goes on once etcd answers, and finishRecovery
// ends it. A restore from a backup makes its new cluster's first member
// through bootstrap, which reads the backup from status.recovery.

// defaultQuorumLossAfter is how long an Automatic recovery waits.
const defaultQuorumLossAfter = 5 * time.Minute

// recoverQuorum starts or goes on with a recovery while etcd answers no
// membership question (observeEtcd found no quorum).
func (r *Reconciler) recoverQuorum(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.quorumLost {
		return ctrl.Result{}, nil
	}
	if s.cluster.Spec.Suspend || len(s.undecodable) > 0 {
		// An undecodable member may be one of the voters a recovery would
		// have to fence: none starts (holdForUndecodable).
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	c := s.cluster
	if s.recovering() {
		return r.forceFrom(ctx, s)
	}
	src, why, err := r.recoverySource(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if src.backup != nil {
		return r.startRestore(s, src)
	}
	name := src.member
	if name == "" {
		if why != "" {
			s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, why
		}
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	m := s.memberNamed(name)
	st, err := r.memberStatus(ctx, s, m)
	if err != nil {
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Cannot recover the quorum from member %s: its etcd does not answer (%v); name a member that runs", name, err)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	// 1. The intent, stored before anything is forced.
	c.Status.Recovery = &etcdv1.RecoveryStatus{
		Phase: etcdv1.RecoveryForcing, Member: name, Revision: st.Revision, RaftIndex: int64(st.RaftIndex), Automatic: src.automatic,
		StartedAt: metav1.Now(),
		Message:   fmt.Sprintf("Restarting member %s alone from its own data (raft index %d, revision %d) with --force-new-cluster", name, st.RaftIndex, st.Revision),
	}
	snapshot := ""
	if c.Spec.Backup != nil {
		// What the member holds is kept in the backup destination first.
		c.Status.Recovery.Snapshot = recoverySnapshotName(c, c.Status.Recovery.StartedAt.Time)
		snapshot = fmt.Sprintf("; a snapshot of it is taken first (EtcdBackup %s)", c.Status.Recovery.Snapshot)
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, c.Status.Recovery.Message
	r.Recorder.Eventf(c, m, corev1.EventTypeWarning, "QuorumRecoveryStarted", "Recover", "Recovering the lost quorum from member %s (raft index %d, revision %d): it restarts alone with --force-new-cluster; the other members' volumes are kept%s", name, st.RaftIndex, st.Revision, snapshot)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// recoverySnapshotName names the EtcdBackup of the member a recovery
// starts from: from the cluster's name (at most 35 characters) and the
// recovery's start, so that a pass that runs again names the same one.
func recoverySnapshotName(c *etcdv1.EtcdCluster, started time.Time) string {
	return fmt.Sprintf("%s-recovery-%d", c.Name, started.Unix())
}

// source is where a recovery starts from: a member, or a backup.
type source struct {
	member    string
	backup    *etcdv1.EtcdBackup
	automatic bool
}

// recoverySource is where to recover from: what the annotation names (a
// member, or the newest complete backup), or, with spec.recovery.quorumLoss
// Automatic, once the quorum has been lost for quorumLossAfter, a member
// that cannot lose an acknowledged write: the reachable voter with the
// highest raft index, and only when every member that does not answer is
// known to have lost its data; when every member lost its data, the newest
// complete backup. why says why there is none (yet).
func (r *Reconciler) recoverySource(ctx context.Context, s *scope) (source, string, error) {
	c := s.cluster
	if want, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]; ok {
		if want == etcdv1.RecoverFromLatestBackup {
			b, err := r.latestBackup(ctx, s)
			if b == nil && err == nil {
				return source{}, fmt.Sprintf("The %s annotation asks for %s, but cluster %s has no Complete EtcdBackup to restore; name a member to recover from instead", etcdv1.RecoverQuorumAnnotation, want, c.Name), nil
			}
			return source{backup: b}, "", err
		}
		if s.memberNamed(want) == nil {
			return source{}, fmt.Sprintf("The %s annotation names %q, which is not a member of this cluster; name one of its EtcdMembers, or %s", etcdv1.RecoverQuorumAnnotation, want, etcdv1.RecoverFromLatestBackup), nil
		}
		if why := manualSourceRefused(s, want); why != "" {
			return source{}, why, nil
		}
		return source{member: want}, "", nil
	}
	if c.Spec.Recovery.QuorumLoss != etcdv1.QuorumLossAutomatic {
		return source{}, fmt.Sprintf("etcd has no quorum. To recover, annotate the cluster with %s=<member> (the member to restart alone from its own data; see status: the reachable members and their raft index) or %s=%s (restore the newest complete backup; later writes are lost), or set spec.recovery.quorumLoss Automatic", etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverFromLatestBackup), nil
	}
	after := defaultQuorumLossAfter
	if d, err := time.ParseDuration(c.Spec.Recovery.QuorumLossAfter); err == nil && c.Spec.Recovery.QuorumLossAfter != "" {
		after = d
	}
	a := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionAvailable)
	if a == nil || a.Reason != etcdv1.ReasonQuorumLost {
		return source{}, "", nil // just lost: the status says so this pass
	}
	if lost := time.Since(a.LastTransitionTime.Time); lost < after {
		return source{}, fmt.Sprintf("etcd has no quorum since %s; an Automatic recovery starts after %s if the members gone stay gone", a.LastTransitionTime.UTC().Format(time.RFC3339), after), nil
	}
	if len(s.reachable)*2 > len(s.members) {
		// A quorum of members answers on its own: etcd is electing, not
		// lost. Members being removed count: etcd lists them until then.
		return source{}, "", nil
	}
	best, mayHold := automaticMember(s)
	if len(mayHold) > 0 {
		// Forcing any member now could give up writes that only the members
		// gone hold: a paused or cut-off voter may have acknowledged them
		// with another that is gone too.
		return source{}, fmt.Sprintf("etcd has no quorum; members %s do not answer but may still hold acknowledged writes (only a member whose data is known lost is given up by itself), so nothing is recovered automatically. Bring them back, or decide: annotate the cluster with %s=<member> to restart from one member's data, or %s=%s to restore the newest complete backup (later writes are lost)", strings.Join(mayHold, ", "), etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverFromLatestBackup), nil
	}
	if best == "" {
		return r.automaticRestore(ctx, s)
	}
	return source{member: best, automatic: true}, "", nil
}

// automaticMember is the member an Automatic recovery may force: the
// reachable voter with the highest raft index (a learner never: it may
// lack writes the voters committed). Only active members are asked
// (reportQuorumLoss), so one being removed counts as not answering.
// mayHold names the members that do not answer and are not known to have
// lost their data (Ready reason DataLost for their current generation):
// while any is left, no member may be forced automatically.
func automaticMember(s *scope) (best string, mayHold []string) {
	var index uint64
	for _, m := range s.members {
		st, ok := s.reachable[m.Name]
		if !ok {
			if !dataLost(m) {
				mayHold = append(mayHold, m.Name)
			}
			continue
		}
		if st.IsLearner {
			continue
		}
		if best == "" || st.RaftIndex > index {
			best, index = m.Name, st.RaftIndex
		}
	}
	return best, mayHold
}

// dataLost says whether the member controller reported, for the member's
// current spec, that its volume is gone, empty or damaged.
func dataLost(m *etcdv1.EtcdMember) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady)
	return c != nil && c.Reason == etcdv1.ReasonDataLost && c.ObservedGeneration == m.Generation
}

// manualSourceRefused says why the member a person named is not forced: it
// is a learner, or another reachable member holds a higher raft index
// (forcing it would give up what only the other holds), unless the
// RecoverQuorumAcceptLossAnnotation names the same member.
func manualSourceRefused(s *scope, want string) string {
	st, ok := s.reachable[want]
	if !ok {
		return "" // forceFrom asks it and says it does not answer
	}
	if s.cluster.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation] == want {
		return ""
	}
	if st.IsLearner {
		return fmt.Sprintf("Member %s is a learner: it may lack writes the voters committed, so it is not forced. Name a voter, or confirm with %s=%s", want, etcdv1.RecoverQuorumAcceptLossAnnotation, want)
	}
	for _, m := range s.members {
		o, ok := s.reachable[m.Name]
		if !ok || m.Name == want || o.IsLearner || o.RaftIndex <= st.RaftIndex {
			continue
		}
		return fmt.Sprintf("Member %s (raft index %d) is behind member %s (raft index %d): recovering from it would give up the writes only %s holds. Name %s, or confirm with %s=%s", want, st.RaftIndex, m.Name, o.RaftIndex, m.Name, m.Name, etcdv1.RecoverQuorumAcceptLossAnnotation, want)
	}
	return ""
}

// automaticRestore picks the newest complete backup when no member
// answers, but only when every member lost its data (Ready reason
// DataLost): a member whose Pod is merely down, or lost with its node
// (PodLost: its volume may outlive the node), keeps writes that no backup
// has.
func (r *Reconciler) automaticRestore(ctx context.Context, s *scope) (source, string, error) {
	var kept []string
	for _, m := range s.members {
		if !dataLost(m) {
			kept = append(kept, m.Name)
		}
	}
	if len(kept) > 0 {
		return source{}, fmt.Sprintf("etcd has no quorum and no member answers; members %s may still hold data, so nothing is recovered automatically: annotate the cluster with %s=<member> once one of them runs, or %s=%s to restore the newest complete backup (later writes are lost)", strings.Join(kept, ", "), etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverQuorumAnnotation, etcdv1.RecoverFromLatestBackup), nil
	}
	b, err := r.latestBackup(ctx, s)
	if b == nil && err == nil {
		return source{}, "Every member lost its data and the cluster has no Complete EtcdBackup: nothing can be recovered", nil
	}
	return source{backup: b, automatic: true}, "", err
}

// latestBackup is the newest Complete EtcdBackup of the cluster (by the
// time its snapshot began), nil when there is none. Time, not revision,
// decides: after a recovery from a member that lagged, an older backup
// may hold a higher revision of a history that was given up.
func (r *Reconciler) latestBackup(ctx context.Context, s *scope) (*etcdv1.EtcdBackup, error) {
	c := s.cluster
	list := &etcdv1.EtcdBackupList{}
	if err := r.List(ctx, list, kube.OfCluster(c.Namespace, c.Name)...); err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	var best *etcdv1.EtcdBackup
	var bestSnap *etcdv1.EtcdBackupStatus
	for i := range list.Items {
		b := &list.Items[i]
		snap, ok := b.Snapshot()
		if !ok || !resources.Restorable(c, b) {
			continue
		}
		if best == nil || snap.StartTime.After(bestSnap.StartTime.Time) ||
			(snap.StartTime.Equal(bestSnap.StartTime) && snap.Revision > bestSnap.Revision) {
			best, bestSnap = b, snap
		}
	}
	return best, nil
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
	switch {
	case rs.Phase == etcdv1.RecoveryRestoring:
		return r.restoring(ctx, s)
	case rs.Backup != "":
		return ctrl.Result{}, nil // regrowing from a backup: scaleUp goes on
	}
	m := s.memberNamed(rs.Member)
	if m == nil {
		if err := r.unfence(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
		rs.Message = fmt.Sprintf("Member %s is gone; the recovery stopped", rs.Member)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
	}
	switch rs.Phase {
	case etcdv1.RecoveryForcing:
		return r.forcing(ctx, s, m)
	case etcdv1.RecoveryRegrowing:
		if m.Spec.ForceNewCluster {
			if err := r.setForce(ctx, s, m, false); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

// forcing goes on with the phase Forcing of a recovery from member m: its
// intent stored (1), every other member fenced and a snapshot of m kept, m
// forced with --force-new-cluster once (2), until etcd answers as m alone
// (3); or it ends when the quorum came back before anything was forced.
func (r *Reconciler) forcing(ctx context.Context, s *scope, m *etcdv1.EtcdMember) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
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
		if err := r.unfence(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
		rs.Message = "etcd regained its quorum by itself before anything was forced; nothing was changed"
		r.Recorder.Eventf(c, m, corev1.EventTypeNormal, "QuorumRecoveryCancelled", "Recover", "%s", rs.Message)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
	}
	if !m.Spec.ForceNewCluster {
		// 2. fence every other member, keep a snapshot of it, then
		// force it, once: the flag is the stored intent.
		if res, err := r.fenceOthers(ctx, s, m); err != nil || !res.IsZero() {
			return res, err
		}
		if res, err := r.snapshotBeforeForcing(ctx, s, m); err != nil || !res.IsZero() {
			return res, err
		}
		if err := r.setForce(ctx, s, m, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Recovering the quorum: member %s restarts alone with --force-new-cluster", m.Name)
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// fenceOthers fences every member but m, those being removed included
// (spec.fenced: the member controller stops their Pods and starts none),
// and waits until each says its Pod is gone (Ready reason Fenced for its
// generation). Forced, m is a one-member cluster; the members left behind
// still believe in the old membership, and those of them that hold a
// quorum of it (paused, cut off, or a person's mistake about which member
// is ahead) would otherwise go on acknowledging writes m never sees. A Pod
// that cannot be confirmed stopped (its node unreachable and not gone)
// holds the recovery here, and the condition names it.
func (r *Reconciler) fenceOthers(ctx context.Context, s *scope, m *etcdv1.EtcdMember) (ctrl.Result, error) {
	var fenced, stopping []string
	for _, o := range s.members {
		if o.Name == m.Name {
			continue
		}
		if !o.Spec.Fenced {
			patch := client.MergeFrom(o.DeepCopy())
			o.Spec.Fenced = true
			if err := r.Patch(ctx, o, patch); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("fence member %s: %w", o.Name, err))
			}
			s.wrote(o)
			fenced = append(fenced, o.Name)
		}
		if ready := meta.FindStatusCondition(o.Status.Conditions, etcdv1.ConditionReady); ready == nil || ready.Reason != etcdv1.ReasonFenced || ready.ObservedGeneration != o.Generation {
			stopping = append(stopping, o.Name)
		}
	}
	if len(fenced) > 0 {
		ctrl.LoggerFrom(ctx).Info("Fenced the members left behind", "members", fenced, "forcing", m.Name)
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, "MembersFenced", "Recover", "Fenced members %s: their Pods stop and stay stopped, volumes kept, so that they cannot form a quorum of their own once member %s is forced", strings.Join(fenced, ", "), m.Name)
	}
	if len(stopping) == 0 {
		return ctrl.Result{}, nil
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Recovering the quorum from member %s: waiting for the Pods of members %s to stop (fenced) before it is forced, so that they cannot form a quorum of their own. A Pod on a node that no longer answers stops only once the node is gone or the Pod is deleted with --force; do that only once you know its etcd no longer runs", m.Name, strings.Join(stopping, ", "))
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// unfence clears spec.fenced on every member: a recovery that stops before
// anything was forced gives the members their Pods back.
func (r *Reconciler) unfence(ctx context.Context, s *scope) error {
	for _, o := range s.members {
		if !o.Spec.Fenced {
			continue
		}
		patch := client.MergeFrom(o.DeepCopy())
		o.Spec.Fenced = false
		if err := r.Patch(ctx, o, patch); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("unfence member %s: %w", o.Name, err))
		}
		s.wrote(o)
		ctrl.LoggerFrom(ctx).Info("Unfenced member", "member", o.Name)
	}
	return nil
}

// setForce sets or clears a member's forceNewCluster.
func (r *Reconciler) setForce(ctx context.Context, s *scope, m *etcdv1.EtcdMember, on bool) error {
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.ForceNewCluster = on
	if err := r.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("set forceNewCluster=%v on member %s: %w", on, m.Name, err)
	}
	s.wrote(m)
	ctrl.LoggerFrom(ctx).Info("Set forceNewCluster", "member", m.Name, "on", on)
	return nil
}

// continueRecovery goes on with a recovery while etcd answers: nothing
// else runs until the member forced runs alone without the flag.
func (r *Reconciler) continueRecovery(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.recovering() {
		return ctrl.Result{}, r.dropStaleAnnotation(ctx, s)
	}
	phase := s.cluster.Status.Recovery.Phase
	res, err := r.forceFrom(ctx, s)
	if err != nil || phase == etcdv1.RecoveryForcing || phase == etcdv1.RecoveryRestoring {
		return res, err
	}
	return ctrl.Result{}, nil
}

// dropStaleAnnotation removes a recover-quorum annotation set while etcd
// has its quorum: left in place, it would start a recovery at the next
// loss, however short, with nobody deciding.
func (r *Reconciler) dropStaleAnnotation(ctx context.Context, s *scope) error {
	c := s.cluster
	want, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]
	_, confirmed := c.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation]
	if all, healthy := s.voters(); (!ok && !confirmed) || !s.formed || healthy <= all/2 {
		return nil
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "RecoverQuorumIgnored", "Recover", "The %s=%s annotation was removed: etcd has its quorum and nothing is to be recovered; set it only while Available is False with reason QuorumLost", etcdv1.RecoverQuorumAnnotation, want)
	return r.dropRecoverAnnotation(ctx, s)
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
		s.progress, s.progressMsg = etcdv1.ReasonReplacingMember, fmt.Sprintf("Recovered from %s; growing back to %d members (%d healthy voters)", recoveredFrom(rs), s.desired, healthy)
		return ctrl.Result{}, nil
	}
	if err := r.dropRecoverAnnotation(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
	rs.Message = fmt.Sprintf("Recovered from %s at revision %d; the volumes of the members left behind are kept, labelled %s=%s", recoveredFrom(rs), rs.Revision, etcdv1.RetainedFromLabel, c.Name)
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "QuorumRecovered", "Recover", "%s", rs.Message)
	return ctrl.Result{}, nil
}

// recoveredFrom names what a recovery started from.
func recoveredFrom(rs *etcdv1.RecoveryStatus) string {
	if rs.Backup != "" {
		return "backup " + rs.Backup
	}
	return "member " + rs.Member
}

// dropRecoverAnnotation removes the annotation that asked for a recovery
// once the recovery ended, however it ended: left in place, it would start
// a forced recovery at the next loss with nobody deciding. A copy is
// patched: the answer carries the stored status, which must not overwrite
// what this pass decided.
func (r *Reconciler) dropRecoverAnnotation(ctx context.Context, s *scope) error {
	c := s.cluster
	_, ok := c.Annotations[etcdv1.RecoverQuorumAnnotation]
	_, confirmed := c.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation]
	if !ok && !confirmed {
		return nil
	}
	cp := c.DeepCopy()
	patch := client.MergeFrom(cp.DeepCopy())
	delete(cp.Annotations, etcdv1.RecoverQuorumAnnotation)
	delete(cp.Annotations, etcdv1.RecoverQuorumAcceptLossAnnotation)
	if err := r.Patch(ctx, cp, patch); err != nil {
		return fmt.Errorf("remove the %s annotation: %w", etcdv1.RecoverQuorumAnnotation, err)
	}
	c.Annotations, c.ResourceVersion = cp.Annotations, cp.ResourceVersion
	s.wrote(c)
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
		s.wrote(m)
		return false, nil
	}
	return kube.IsTrue(m.Status.Conditions, etcdv1.ConditionVolumeRetained, m.Generation), nil
}

// recoverySnapshotWait bounds the wait for the snapshot of the member a
// recovery forces; its volume keeps the data whatever happens to it.
const recoverySnapshotWait = 10 * time.Minute

// snapshotBeforeForcing takes a snapshot of the member about to be forced
// into the cluster's backup destination, when status.recovery names one:
// an EtcdBackup of that member, which the backup controller takes without
// a quorum. A zero result means the member may be forced now.
func (r *Reconciler) snapshotBeforeForcing(ctx context.Context, s *scope, m *etcdv1.EtcdMember) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	if rs.Snapshot == "" {
		return ctrl.Result{}, nil
	}
	if time.Since(rs.StartedAt.Time) > recoverySnapshotWait {
		r.Recorder.Eventf(c, m, corev1.EventTypeWarning, "RecoverySnapshotFailed", "Recover", "The snapshot of member %s (EtcdBackup %s) did not end within %s; forcing it all the same: its volume keeps its data", m.Name, rs.Snapshot, recoverySnapshotWait)
		return ctrl.Result{}, nil
	}
	b := &etcdv1.EtcdBackup{}
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: rs.Snapshot}, b)
	switch {
	case apierrors.IsNotFound(err) && c.Spec.Backup == nil:
		return ctrl.Result{}, nil // the destination went from the spec meanwhile
	case apierrors.IsNotFound(err):
		b = &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: rs.Snapshot, Namespace: c.Namespace, Labels: map[string]string{etcdv1.ClusterLabel: c.Name}},
			Spec:       etcdv1.EtcdBackupSpec{ClusterName: c.Name, Member: m.Name, Destination: c.Spec.Backup.Destination},
		}
		// Not owned by the cluster: the snapshot outlives it.
		if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("create backup %s of member %s: %w", b.Name, m.Name, err)
		}
		r.Recorder.Eventf(c, b, corev1.EventTypeNormal, "RecoverySnapshotStarted", "Recover", "Taking a snapshot of member %s (EtcdBackup %s) before it is forced", m.Name, b.Name)
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Taking a snapshot of member %s (EtcdBackup %s) before it is forced", m.Name, b.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get backup %s: %w", rs.Snapshot, err)
	}
	if snap, ok := b.Snapshot(); ok {
		r.Recorder.Eventf(c, b, corev1.EventTypeNormal, "RecoverySnapshotTaken", "Recover", "Snapshot of member %s at revision %d stored as %s; forcing it now", m.Name, snap.Revision, snap.URI)
		return ctrl.Result{}, nil
	}
	switch {
	case kube.IsTrue(b.Status.Conditions, etcdv1.ConditionFailed, b.Generation):
		r.Recorder.Eventf(c, b, corev1.EventTypeWarning, "RecoverySnapshotFailed", "Recover", "The snapshot of member %s failed (see EtcdBackup %s); forcing it all the same: its volume keeps its data", m.Name, b.Name)
		return ctrl.Result{}, nil
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Taking a snapshot of member %s (EtcdBackup %s) before it is forced", m.Name, b.Name)
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// Recovery from a backup, when no member's data is left to recover from
// (or a person asks for it): the whole etcd cluster is given up and a new
// one is made from the snapshot, in the same EtcdCluster. Each step is
// recorded before it is taken:
//  1. status.recovery is written with phase Restoring and the EtcdBackup;
//  2. while etcd still has no quorum, the backup is checked to be there,
//     and status.recovery.replacedClusterID records the point of no
//     return; until it is stored, nothing is changed, and a quorum that
//     comes back cancels the restore;
//  3. every member, even one already being removed, is asked to keep its
//     volume (VolumeRetained); the EtcdMembers are deleted and released
//     without MemberRemove (there is no quorum to ask, and the old cluster
//     is given up);
//  4. with no member and no Pod of theirs left, status.clusterID is
//     cleared, and bootstrap makes one member from the snapshot, under
//     names new to this cluster (its old members' PVCs keep theirs);
//  5. once it answers, the phase is Regrowing and scaleUp adds learners;
//     finishRecovery ends it as for a recovery from a member.

// startRestore stores the intent of a restore from a backup; nothing is
// released before it is stored.
func (r *Reconciler) startRestore(s *scope, src source) (ctrl.Result, error) {
	c, b := s.cluster, src.backup
	snap, ok := b.Snapshot()
	if !ok {
		// latestBackup picks only Complete backups: this one changed since.
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	taken := snap.StartTime.UTC().Format(time.RFC3339)
	c.Status.Recovery = &etcdv1.RecoveryStatus{
		Phase: etcdv1.RecoveryRestoring, Backup: b.Name, Revision: snap.Revision, Automatic: src.automatic,
		StartedAt: metav1.Now(),
		Message:   fmt.Sprintf("Restoring backup %s (revision %d, taken %s): the members go with their volumes kept, and a new etcd cluster starts from the snapshot; writes made after it are not in it", b.Name, snap.Revision, taken),
	}
	s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, c.Status.Recovery.Message
	r.Recorder.Eventf(c, b, corev1.EventTypeWarning, "QuorumRecoveryStarted", "Recover", "Recovering the lost quorum from backup %s (revision %d, taken %s): every member goes with its volume kept, and a new etcd cluster starts from the snapshot", b.Name, snap.Revision, taken)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// restoring goes on with a restore from a backup whose intent is stored,
// whether etcd answers or not.
func (r *Reconciler) restoring(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	s.progress, s.progressMsg = etcdv1.ReasonRestoringBackup, rs.Message
	base := s.base.Status.Recovery
	switch {
	case base == nil || base.Phase != etcdv1.RecoveryRestoring || base.Backup != rs.Backup:
		// 1. not stored yet: the status write of this pass stores it.
		s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, rs.Message
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	case s.base.Status.ClusterID == "":
		return r.restored(s)
	case base.ReplacedClusterID == "" && s.formed:
		// etcd answered before any member went: the quorum came back by
		// itself, and its writes are worth more than the backup.
		rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
		rs.Message = fmt.Sprintf("etcd regained its quorum by itself before any member was released; backup %s was not restored and nothing was changed", rs.Backup)
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "QuorumRecoveryCancelled", "Recover", "%s", rs.Message)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
	}
	return r.releaseForRestore(ctx, s)
}

// restoreBackup is the EtcdBackup a restore is made from, with its
// snapshot; nil when it is gone or not Complete.
func (r *Reconciler) restoreBackup(ctx context.Context, s *scope) (*etcdv1.EtcdBackup, *etcdv1.EtcdBackupStatus, error) {
	b := &etcdv1.EtcdBackup{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: s.cluster.Status.Recovery.Backup}, b)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("get backup %s: %w", s.cluster.Status.Recovery.Backup, err)
	}
	snap, ok := b.Snapshot()
	if !ok || !resources.Restorable(s.cluster, b) {
		return nil, nil, nil
	}
	return b, snap, nil
}

// restoredSnapshot is the snapshot bootstrap makes the first member of the
// new cluster from, once a restore from a backup released the old members
// and cleared the cluster ID; nil with a requeue while there is none.
func (r *Reconciler) restoredSnapshot(ctx context.Context, s *scope) (*etcdv1.MemberRestore, ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	s.progress, s.progressMsg = etcdv1.ReasonRestoringBackup, rs.Message
	b, snap, err := r.restoreBackup(ctx, s)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if b == nil {
		// Deleting an EtcdBackup deletes its snapshot: there is nothing
		// left to make the new cluster from.
		s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, fmt.Sprintf("EtcdBackup %s is gone or no longer Complete since the members were released; nothing is left to restore here: restore another backup into a new EtcdCluster (spec.bootstrap.restore). The old members' volumes are kept, labelled %s=%s", rs.Backup, etcdv1.RetainedFromLabel, c.Name)
		return nil, ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
	return &etcdv1.MemberRestore{Destination: b.Spec.Destination, Key: snap.Key, SHA256: snap.SHA256, AgentImage: r.Options.AgentImage}, ctrl.Result{}, nil
}

// pointOfNoReturn records which etcd cluster a restore gives up, once the
// backup is still there. Nothing is changed before this is stored: a
// quorum that comes back meanwhile cancels the restore (restoring).
func (r *Reconciler) pointOfNoReturn(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	b, _, err := r.restoreBackup(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if b == nil {
		rs.Phase, rs.FinishedAt = etcdv1.RecoveryDone, &metav1.Time{Time: time.Now()}
		rs.Message = fmt.Sprintf("EtcdBackup %s is gone or no longer Complete; nothing was changed and the recovery stopped", rs.Backup)
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "QuorumRecoveryCancelled", "Recover", "%s", rs.Message)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, r.dropRecoverAnnotation(ctx, s)
	}
	rs.ReplacedClusterID = s.base.Status.ClusterID
	rs.Message = fmt.Sprintf("Giving up etcd cluster %s: its members keep their volumes and go, then a new cluster starts from backup %s", rs.ReplacedClusterID, rs.Backup)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// releaseForRestore checks the backup and records the point of no return;
// then it makes every member keep its volume (those already being removed
// too), deletes the EtcdMembers, releases them without MemberRemove, and
// once none is left and their Pods are gone clears the cluster ID, so that
// a new cluster is bootstrapped.
func (r *Reconciler) releaseForRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	if s.base.Status.Recovery.ReplacedClusterID == "" {
		return r.pointOfNoReturn(ctx, s)
	}
	waiting, err := r.retainVolumes(ctx, c, s.members)
	for _, m := range s.members {
		s.wrote(m)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting > 0 {
		// The members' VolumeRetained conditions wake this controller.
		s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, fmt.Sprintf("Keeping the volumes of the %d members before they go; then a new cluster starts from backup %s", len(s.members), rs.Backup)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if active := s.active(); len(active) > 0 {
		names := make([]string, 0, len(active))
		for _, m := range active {
			if err := r.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("delete member %s: %w", m.Name, err)
			}
			names = append(names, m.Name)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "MembersReleased", "Recover", "Members %s leave for the restore from backup %s; their PVCs are kept, labelled %s=%s", strings.Join(names, ", "), rs.Backup, etcdv1.RetainedFromLabel, c.Name)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	for _, m := range s.members {
		patch := client.MergeFrom(m.DeepCopy())
		if controllerutil.RemoveFinalizer(m, etcdv1.MemberFinalizer) {
			if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("release member %s: %w", m.Name, err)
			}
		}
		delete(s.memberBases, m.Name)
	}
	if len(s.members) > 0 {
		s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, fmt.Sprintf("Waiting for the %d old members to go; then a new cluster starts from backup %s", len(s.members), rs.Backup)
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return r.oldPodsGone(ctx, s)
}

// oldPodsGone clears the cluster ID once no Pod of the old members is
// left: the garbage collector deletes them, and none may serve the old
// data beside the new cluster.
func (r *Reconciler) oldPodsGone(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(resources.ClusterLabels(c.Name))); err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods: %w", err)
	}
	if n := len(pods.Items); n > 0 {
		s.waiting, s.waitingMsg = etcdv1.ReasonRestoringBackup, fmt.Sprintf("Waiting for the %d Pods of the old members to end; then a new cluster starts from backup %s", n, rs.Backup)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	c.Status.ClusterID = ""
	r.Etcd.Forget(client.ObjectKeyFromObject(c).String())
	rs.Message = fmt.Sprintf("The members of etcd cluster %s are gone, their volumes kept; a new cluster starts from backup %s (revision %d)", rs.ReplacedClusterID, rs.Backup, rs.Revision)
	ctrl.LoggerFrom(ctx).Info("Old etcd cluster released for the restore", "clusterID", rs.ReplacedClusterID, "backup", rs.Backup)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// restored moves a restore on once the new cluster answers.
func (r *Reconciler) restored(s *scope) (ctrl.Result, error) {
	c := s.cluster
	rs := c.Status.Recovery
	if !s.formed || c.Status.ClusterID == "" {
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	rs.Phase = etcdv1.RecoveryRegrowing
	rs.Message = fmt.Sprintf("etcd cluster %s runs with one member made from backup %s (revision %d); new members join as learners", c.Status.ClusterID, rs.Backup, rs.Revision)
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "QuorumRestored", "Recover", "A new etcd cluster %s runs from backup %s (revision %d); growing back to %d members", c.Status.ClusterID, rs.Backup, rs.Revision, s.desired)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}
