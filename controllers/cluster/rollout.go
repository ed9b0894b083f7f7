package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/resources"
)

// A rollout is the one way a running member takes a new spec: a new
// version or image, resources, Pod template, etcd options, trusted CAs, or
// (for a Memory member) a new tmpfs size. The cluster controller writes the
// new spec into one EtcdMember at a time; the member controller sees that
// its Pod was built from another spec (resources.PodSpecHash) and recreates
// it, on the same PVC, with the same member ID and data.
//
// Order and gates:
//   - Scaling goes first. A rollout starts, and goes on, only while the
//     cluster has spec.replicas members, all voters, none being added or
//     removed: a member added meanwhile already gets the new spec, one
//     removed needs no restart, the gates below need a stable set of
//     voters, and replacing a failed member must never wait for a rollout.
//   - A member restarts only while every other member is settled: Ready
//     for its generation (its Pod runs its current spec and passes etcd's
//     readiness check), a healthy voter, and caught up.
//   - Followers first; the leader last, after MoveLeader hands leadership
//     to the most caught-up member that already runs the new spec.
//   - The next member waits until the restarted one is settled again. One
//     not settled within Options.RolloutTimeout, or whose container cannot
//     run (an image that cannot be pulled, a flag etcd refuses), stops the
//     rollout: Degraded, reason RolloutStuck. A new spec resumes it, the
//     stuck member first (it is down already, so restarting it again costs
//     nothing more).
//
// "Caught up": etcd answers a status request from the member and from the
// leader in the same round, and the member's applied index is at most
// caughtUpLag entries behind the leader's committed index. The lag allows
// for writes committed between the two answers; a member replaying its log
// after a restart is far further behind than that.
const caughtUpLag = 1000

// rollingSpec is the spec every member should run: the fields a rollout
// changes, taken from the cluster.
func (r *Reconciler) rollingSpec(s *scope) etcdv1.EtcdMemberSpec {
	return r.memberSpec(s, "", etcdv1.InitialClusterStateExisting, "")
}

// applyRolling copies the fields a rollout changes from want into dst.
// A PVC's size is not among them: the volume grows online (syncStorage).
func applyRolling(dst *etcdv1.EtcdMemberSpec, want etcdv1.EtcdMemberSpec) {
	dst.Version, dst.Image = want.Version, want.Image
	dst.Resources = *want.Resources.DeepCopy()
	dst.PodTemplate = *want.PodTemplate.DeepCopy()
	dst.Options = *want.Options.DeepCopy()
	dst.TLS = want.TLS.DeepCopy()
	dst.MaxLearners = want.MaxLearners
	// Not part of the Pod's hash: a new operator image reaches each
	// member's next Pod without restarting any.
	dst.AgentImage = want.AgentImage
	if dst.Storage.Medium == etcdv1.StorageMediumMemory {
		dst.Storage.Size = nil
		if want.Storage.Size != nil {
			q := want.Storage.Size.DeepCopy()
			dst.Storage.Size = &q
		}
	}
}

// rolledOut says whether the member's spec already has want's fields.
func rolledOut(m *etcdv1.EtcdMember, want etcdv1.EtcdMemberSpec) bool {
	cp := m.Spec.DeepCopy()
	applyRolling(cp, want)
	return equality.Semantic.DeepEqual(*cp, m.Spec)
}

func ensureRollout(ro *etcdv1.RolloutStatus) *etcdv1.RolloutStatus {
	if ro == nil {
		return &etcdv1.RolloutStatus{}
	}
	return ro
}

// rollout gives one member at a time the spec the cluster asks for.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if !s.formed || s.suspending {
		return ctrl.Result{}, nil
	}
	want := r.rollingSpec(s)
	if want.TLS == nil && !c.Spec.TLS.Disabled {
		return ctrl.Result{}, nil // waitForTLS holds this pass back already
	}
	active := s.active()
	var stale []*etcdv1.EtcdMember
	for _, m := range active {
		if !rolledOut(m, want) {
			stale = append(stale, m)
		}
	}
	total, updated := len(active), len(active)-len(stale)
	ro := ensureRollout(c.Status.Rollout.DeepCopy())
	ro.Total, ro.Updated = int32(total), int32(updated)
	defer func() {
		if ro.Member == "" && ro.DowngradeTarget == "" && len(stale) == 0 {
			c.Status.Rollout = nil
			return
		}
		c.Status.Rollout = ro
	}()

	cur, since, err := r.currentUpdate(ctx, s, active, want, ro, updated, total)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(stale) == 0 && cur == nil {
		return ctrl.Result{}, nil
	}

	s.progress = etcdv1.ReasonRollingUpdate
	if res, wait := r.rolloutWaits(s, active, updated, total); wait {
		return res, nil
	}

	var unsettled []*etcdv1.EtcdMember
	for _, m := range active {
		if !s.settled(m) {
			unsettled = append(unsettled, m)
		}
	}
	if cur != nil && slices.Contains(unsettled, cur) && !slices.Contains(stale, cur) {
		if res, stuck := r.checkStuck(s, cur, since, updated, total); stuck {
			return res, nil
		}
	}
	next, res, wait := s.nextToUpdate(stale, unsettled, updated, total, r.Options.WaitInterval)
	if wait {
		return res, nil
	}
	if s.isLeader(next) && total > 1 {
		return r.moveLeaderFrom(ctx, s, next, want, updated, total)
	}
	return r.updateMember(ctx, s, next, want, ro, updated, total)
}

// currentUpdate is the member whose update is in flight, and since when:
// the member restarted last carries the time its update started (see
// updateMember). It is done, and nil is returned, once it is settled on its
// new spec. ro records it.
func (r *Reconciler) currentUpdate(ctx context.Context, s *scope, active []*etcdv1.EtcdMember, want etcdv1.EtcdMemberSpec, ro *etcdv1.RolloutStatus, updated, total int) (*etcdv1.EtcdMember, time.Time, error) {
	var cur *etcdv1.EtcdMember
	var since time.Time
	for _, m := range active {
		if t, ok := updateStarted(m); ok {
			cur, since = m, t
			break
		}
	}
	ro.Member, ro.Since = "", nil
	if cur != nil && rolledOut(cur, want) && s.settled(cur) {
		if err := r.finishUpdate(ctx, s, cur); err != nil {
			return nil, since, err
		}
		r.Recorder.Eventf(s.cluster, cur, corev1.EventTypeNormal, eventMemberUpdated, "RollingUpdate", "Member %s runs the new spec (version %s) and is healthy and caught up (%d of %d)", cur.Name, cur.Spec.Version, updated, total)
		countEvent(s.cluster, eventMemberUpdated)
		return nil, since, nil
	}
	if cur != nil {
		ro.Member, ro.Since = cur.Name, &metav1.Time{Time: since}
	}
	return cur, since, nil
}

// rolloutWaits says whether no member may restart now, and why: a version
// change etcd does not allow, a scale under way, or a data format not yet
// where the version change needs it.
func (r *Reconciler) rolloutWaits(s *scope, active []*etcdv1.EtcdMember, updated, total int) (ctrl.Result, bool) {
	switch {
	case s.plan.change == versionBlocked:
		s.waiting, s.waitingMsg = etcdv1.ReasonUpgradeBlocked, s.plan.msg+". No member restarts until then"
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, true
	case len(active) != len(s.members) || len(active) != s.desired:
		s.progressMsg = fmt.Sprintf("The rolling update waits for scaling to %d members to finish (%d of %d members updated)", s.desired, updated, total)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, true
	}
	if s.plan.change == versionUpgrade {
		// No data format below the lowest version running, as there is for
		// a few seconds after a downgrade was cancelled.
		lowest := minorNum(s.plan.lowest)
		if behind := s.formatsNot(func(f int) bool { return f >= lowest }, false); len(behind) > 0 {
			s.progressMsg = fmt.Sprintf("Upgrading to %s: waiting for the data format of %s to be %s again", minorOf(s.plan.target), strings.Join(behind, ", "), minorOf(s.plan.lowest))
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, true
		}
	}
	if s.plan.change == versionDowngrade {
		// Every member that answers has moved its data format to the
		// target; then a member may start the older minor.
		_, to := s.downgradeEnabled()
		target := minorNum(to)
		if waiting := s.formatsNot(func(f int) bool { return f == target }, true); len(waiting) > 0 || to == "" {
			s.progressMsg = fmt.Sprintf("Downgrading to %s: waiting for etcd to move the data format of %s to %s before the first member restarts", minorOf(s.plan.target), strings.Join(waiting, ", "), minorOf(s.plan.target))
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, true
		}
	}
	return ctrl.Result{}, false
}

// nextToUpdate is the member the rollout restarts next: a stale one that is
// down already, else (once every member is settled) the stale ones with the
// leader last. While others are unsettled it waits.
func (s *scope) nextToUpdate(stale, unsettled []*etcdv1.EtcdMember, updated, total int, wait time.Duration) (*etcdv1.EtcdMember, ctrl.Result, bool) {
	switch {
	case len(unsettled) == 1 && slices.Contains(stale, unsettled[0]):
		// Down already (a stuck member whose spec changed again, or one
		// that failed): restarting it costs no more than it has.
		return unsettled[0], ctrl.Result{}, false
	case len(unsettled) > 0:
		names := make([]string, 0, len(unsettled))
		for _, m := range unsettled {
			names = append(names, fmt.Sprintf("%s (%s)", m.Name, s.unsettledWhy(m)))
		}
		s.progressMsg = fmt.Sprintf("Rolling update, %d of %d members updated: waiting for %s", updated, total, strings.Join(names, ", "))
		return nil, ctrl.Result{RequeueAfter: wait}, true
	default:
		slices.SortStableFunc(stale, func(a, b *etcdv1.EtcdMember) int {
			return boolInt(s.isLeader(a)) - boolInt(s.isLeader(b))
		})
		return stale[0], ctrl.Result{}, false
	}
}

// checkStuck stops the rollout when the member it restarted cannot run or
// is not settled in time.
func (r *Reconciler) checkStuck(s *scope, m *etcdv1.EtcdMember, since time.Time, updated, total int) (ctrl.Result, bool) {
	ready := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady)
	failing := ready != nil && ready.ObservedGeneration == m.Generation && ready.Reason == etcdv1.ReasonPodFailing
	late := time.Since(since) > r.Options.RolloutTimeout
	if !failing && !late {
		s.progressMsg = fmt.Sprintf("Updating member %s (%d of %d): waiting for it to be healthy and caught up: %s", m.Name, updated, total, s.unsettledWhy(m))
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, true
	}
	why := s.unsettledWhy(m)
	if late && !failing {
		why = fmt.Sprintf("not healthy and caught up %s after its restart: %s", r.Options.RolloutTimeout, why)
	}
	s.stuck = fmt.Sprintf("The rolling update stopped at member %s (%d of %d updated): %s. No other member is touched; change the spec (for example set the previous version or image back) to go on", m.Name, updated, total, why)
	if prev := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionDegraded); prev == nil || prev.Reason != etcdv1.ReasonRolloutStuck {
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, eventRolloutStuck, "RollingUpdate", "%s", s.stuck)
		countEvent(s.cluster, eventRolloutStuck)
	}
	s.progressMsg = s.stuck
	// A change of the spec wakes the cluster; the requeue notices a member
	// that recovers by itself.
	return ctrl.Result{RequeueAfter: r.Options.StuckInterval}, true
}

// moveLeaderFrom hands leadership from the leader, the last member left to
// update, to the most caught-up member that runs the new spec.
func (r *Reconciler) moveLeaderFrom(ctx context.Context, s *scope, m *etcdv1.EtcdMember, want etcdv1.EtcdMemberSpec, updated, total int) (ctrl.Result, error) {
	em, _ := s.inEtcd(m)
	to, ok := s.successor(em.ID, func(o etcd.Member) bool {
		om := s.memberByID(o.ID)
		return om != nil && rolledOut(om, want) && s.settled(om)
	})
	if !ok {
		s.progressMsg = fmt.Sprintf("Rolling update, %d of %d members updated: the leader %s goes last, once a member on the new spec can take over", updated, total, m.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	s.progressMsg = fmt.Sprintf("Updating member %s (%d of %d): moving leadership away from it first", m.Name, updated+1, total)
	return r.moveLeader(ctx, s, m, to, etcdv1.ReasonRollingUpdate, "updating")
}

// updateMember writes the new spec into one member; the member controller
// restarts its Pod. The same write stamps the member with the time its
// update started (UpdateStartedAnnotation), so the update in flight, and
// how long it runs, survive any crash or lost status write; finishUpdate
// removes the stamp once the member is settled again.
func (r *Reconciler) updateMember(ctx context.Context, s *scope, m *etcdv1.EtcdMember, want etcdv1.EtcdMemberSpec, ro *etcdv1.RolloutStatus, updated, total int) (ctrl.Result, error) {
	from := m.Spec.Version
	// The cluster controller alone writes a member's spec: a patch
	// without a lock cannot undo another's write.
	patch := client.MergeFrom(m.DeepCopy())
	applyRolling(&m.Spec, want)
	now := time.Now()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdv1.UpdateStartedAnnotation] = now.UTC().Format(time.RFC3339)
	ctrl.LoggerFrom(ctx).Info("Updating member", "member", m.Name, "from", from, "to", m.Spec.Version, "hash", resources.PodSpecHash(m))
	if err := r.Patch(ctx, m, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("update member %s: %w", m.Name, err)
	}
	s.wrote(m)
	ro.Member, ro.Since = m.Name, &metav1.Time{Time: now}
	s.progressMsg = fmt.Sprintf("Updating member %s (%d of %d)", m.Name, updated+1, total)
	if from != m.Spec.Version {
		s.progressMsg += fmt.Sprintf(": version %s to %s", from, m.Spec.Version)
	}
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// finishUpdate removes the stamp of an update that is done.
func (r *Reconciler) finishUpdate(ctx context.Context, s *scope, m *etcdv1.EtcdMember) error {
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, etcdv1.UpdateStartedAnnotation)
	if err := r.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("finish the update of member %s: %w", m.Name, err)
	}
	s.wrote(m)
	return nil
}

// updateStarted is when the rollout gave m its spec, if an update of m is
// in flight.
func updateStarted(m *etcdv1.EtcdMember) (time.Time, bool) {
	v, ok := m.Annotations[etcdv1.UpdateStartedAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		// Not the operator's writing; counts as started now.
		return time.Now(), true
	}
	return t, true
}
