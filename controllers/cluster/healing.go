package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// replaceCorruptMembers replaces the member a CORRUPT alarm names: its data
// differs from the others', so it must not vote or serve. Its EtcdMember is
// deleted (finishRemovals then removes it from etcd, scaleUp adds a fresh
// learner), one at a time and only while the rest keep a quorum. An alarm
// about a member etcd no longer lists is cleared: etcd takes no writes
// while a CORRUPT alarm stands.
func (r *Reconciler) replaceCorruptMembers(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.alarmsKnown {
		return ctrl.Result{}, nil
	}
	for _, a := range s.alarms {
		if a.Type != etcd.AlarmCorrupt {
			continue
		}
		if !slices.ContainsFunc(s.etcdList, func(em etcd.Member) bool { return em.ID == a.MemberID }) {
			tctx, cancel := r.etcdCtx(ctx)
			err := s.client.DisarmAlarm(tctx, a)
			cancel()
			observe("alarm_disarm", err)
			if err != nil {
				return r.notYet(s, err, etcdv1.ReasonReplacingMember, fmt.Sprintf("clear the CORRUPT alarm of removed member %s", etcd.FormatID(a.MemberID)))
			}
			r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "AlarmCleared", "AlarmDisarm", "Cleared the CORRUPT alarm of member %s: it has been removed", etcd.FormatID(a.MemberID))
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
		}
		m := s.memberByID(a.MemberID)
		if m == nil {
			continue
		}
		s.progress, s.progressMsg = etcdv1.ReasonReplacingMember, fmt.Sprintf("etcd raised a CORRUPT alarm for member %s: it is removed and replaced by a new member", m.Name)
		if em, ok := s.inEtcd(m); ok && !s.removalKeepsQuorum(em) {
			s.waiting, s.waitingMsg = etcdv1.ReasonQuorumAtRisk, fmt.Sprintf("Member %s is corrupt, but removing it now would leave fewer healthy voters than a quorum; waiting for the others to be healthy", m.Name)
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
		}
		ctrl.LoggerFrom(ctx).Info("Replacing a corrupt member", "member", m.Name)
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, "MemberCorrupt", "Replace", "etcd raised a CORRUPT alarm for member %s (%s); it is removed and replaced", m.Name, etcd.FormatID(a.MemberID))
		if err := r.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete corrupt member %s: %w", m.Name, err)
		}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return ctrl.Result{}, nil
}

// learnerStuck says whether a learner has been waiting to start or catch up
// for longer than Options.LearnerTimeout since it was added.
func (r *Reconciler) learnerStuck(m *etcdv1.EtcdMember) (time.Duration, bool) {
	c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered)
	if c == nil || c.Status != "True" || r.Options.LearnerTimeout <= 0 {
		return 0, false
	}
	waited := time.Since(c.LastTransitionTime.Time)
	return waited, waited > r.Options.LearnerTimeout
}

// replaceStuckLearner removes a learner that never started or caught up:
// its EtcdMember is deleted (finishRemovals removes it from etcd, which
// costs no quorum) and scaleUp adds a new one. Without this, one learner
// that cannot start (no node fits it, a volume that never binds) would
// block every later membership change.
func (r *Reconciler) replaceStuckLearner(ctx context.Context, s *scope, m *etcdv1.EtcdMember, waited time.Duration, why string) (ctrl.Result, error) {
	s.progress, s.progressMsg = etcdv1.ReasonLearnerStuck, fmt.Sprintf("Learner %s %s after %s; it is removed and added again", m.Name, why, waited.Round(time.Second))
	ctrl.LoggerFrom(ctx).Info("Replacing a stuck learner", "member", m.Name, "waited", waited.String(), "why", why)
	r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, "LearnerStuck", "Replace", "Learner %s %s after %s; it is removed and a new one added with etcd's member list of now", m.Name, why, waited.Round(time.Second))
	if err := r.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("delete stuck learner %s: %w", m.Name, err)
	}
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// replaceLostMembers deletes the EtcdMember of a lost member; finishRemovals
// then removes it from etcd and scaleUp adds a fresh member in its place.
func (r *Reconciler) replaceLostMembers(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, m := range s.active() {
		if !s.lost(m) {
			continue
		}
		s.progress, s.progressMsg = etcdv1.ReasonReplacingMember, fmt.Sprintf("Member %s lost its data or its place in etcd and is replaced by a new member", m.Name)
		if ok, err := r.keepVolumeOfLost(ctx, s, m); err != nil || !ok {
			// A recovery runs: the member's volume is released first.
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, err
		}
		ctrl.LoggerFrom(ctx).Info("Replacing lost member", "member", m.Name)
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, "MemberLost", "Replace", "Member %s lost its data or its place in etcd; it is removed and replaced", m.Name)
		if err := r.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete lost member %s: %w", m.Name, err)
		}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	return ctrl.Result{}, nil
}
