package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
	"github.com/raftsman/raftsman/pkg/schedule"
)

// Defragmentation gives a member's free database pages back to the file
// system. etcd serves no request on that member meanwhile, so each member
// is first taken out of the client Service (EtcdMember spec.drained; the
// member controller turns its Pod's serving label off and says so with
// its Serving condition) and put back after. New client connections then
// go to the other members; a connection already open to the member waits
// for the defragmentation, as it would without the drain. A one-member
// cluster is not drained: there is nowhere else to go.
//
// Members go one at a time, followers first; the leader last, after
// leadership moved to a healthy follower. A run starts only while every
// member is a healthy voter and no rollout, scaling or recovery runs; the
// members it will defragment are stored in status.maintenance.defrag first,
// and each phase of the current member before it is acted on, so a
// restarted operator carries on where it was. Defragmenting twice is
// harmless.
//
// A NOSPACE alarm starts a run whatever spec.maintenance.defrag says:
// compact (keeping resources.NoSpaceKeepRevisions revisions, or the
// revision-mode retention when it is larger), defragment every member,
// then disarm the alarm.
//
// A new value of the etcd.raftsman.io/defrag annotation starts a run of
// every member too, whatever the policy says (kubectl raftsman defrag);
// status.maintenance.lastRequest keeps the value, stored with the plan.

// maintain starts or carries on a defragmentation.
func (r *Reconciler) maintain(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.formed || s.suspending {
		return ctrl.Result{}, nil
	}
	st := s.maintenance()
	now := time.Now()
	// The records of members that left go with them.
	st.Members = slices.DeleteFunc(st.Members, func(x etcdv1.MemberDefragStatus) bool { return s.memberNamed(x.Name) == nil })
	if st.Defrag == nil {
		return r.startDefrag(ctx, s, st, now)
	}
	run := st.Defrag
	s.progress, s.progressMsg = etcdv1.ReasonDefragmenting, defragProgress(run)
	if run.Reason == etcdv1.DefragForNoSpace && run.CompactedRevision == 0 {
		return r.compactForNoSpace(ctx, s, run)
	}
	if run.Member == "" {
		if len(run.Pending) == 0 {
			return r.finishDefrag(ctx, s, st)
		}
		run.Member, run.Phase, run.Pending = run.Pending[0], etcdv1.DefragDraining, run.Pending[1:]
		run.Since = &metav1.Time{Time: now}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	m := s.memberNamed(run.Member)
	if m == nil {
		// Removed meanwhile: nothing to defragment.
		run.Member, run.Phase = "", ""
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	if !s.canDefragNow() {
		s.waiting, s.waitingMsg = etcdv1.ReasonWaitingForHealth, fmt.Sprintf("Defragmentation of %s waits for every member to be a healthy voter, with no rollout, scaling or recovery under way", m.Name)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	switch run.Phase {
	case etcdv1.DefragDraining:
		return r.drain(ctx, s, run, m, true)
	case etcdv1.DefragDefragmenting:
		return r.defragment(ctx, s, run, m)
	default: // Restoring
		return r.drain(ctx, s, run, m, false)
	}
}

// startDefrag plans a defragmentation run when the policy or a NOSPACE
// alarm asks for one and every member is a healthy voter with no rollout
// or recovery under way; else it comes back when the next is due.
func (r *Reconciler) startDefrag(ctx context.Context, s *scope, st *etcdv1.MaintenanceStatus, now time.Time) (ctrl.Result, error) {
	if !s.allHealthyVoters() || s.cluster.Status.Rollout != nil || recovering(s.cluster) {
		return ctrl.Result{}, nil
	}
	run, scheduledAt, next := planDefrag(s, now)
	if run == nil {
		if s.nearQuota() {
			// etcd has no watch for its alarms: a database close to its
			// quota is looked at more often, so that a NOSPACE alarm is
			// repaired soon after it is raised.
			next = minTime(next, now.Add(nearQuotaInterval))
		}
		return untilNext(next, now, r.pollInterval(s)), nil
	}
	if !scheduledAt.IsZero() {
		st.LastScheduleTime = &metav1.Time{Time: scheduledAt}
	}
	if run.Reason == etcdv1.DefragForRequest {
		st.LastRequest = s.cluster.Annotations[etcdv1.DefragAnnotation]
	}
	run.StartedAt, run.Since = &metav1.Time{Time: now}, &metav1.Time{Time: now}
	st.Defrag = run
	ctrl.LoggerFrom(ctx).Info("Defragmenting members", "reason", run.Reason, "members", run.Pending)
	r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, eventDefragStarted, "Defragment", "Defragmenting %s one at a time (%s)", strings.Join(run.Pending, ", "), defragWhy(run.Reason))
	countEvent(s.cluster, eventDefragStarted)
	// The plan is stored (deferred status write) before any member is touched.
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// undrain puts back into the client Service every drained member that the
// run under way is not about to defragment now: one left drained by a run
// that cannot go on (a rollout, scaling, a replacement or a recovery came
// first, a member is unhealthy, the cluster is being suspended), or by a
// run that is gone. It runs before the steps that may hold the rest of
// the pass back, so that nothing keeps a member out of the Service while
// the run waits. The run's member drains again when the run resumes.
func (r *Reconciler) undrain(ctx context.Context, s *scope) (ctrl.Result, error) {
	var run *etcdv1.DefragRun
	if s.cluster.Status.Maintenance != nil {
		run = s.cluster.Status.Maintenance.Defrag
	}
	keep := ""
	if run != nil && (run.Phase == etcdv1.DefragDraining || run.Phase == etcdv1.DefragDefragmenting) && s.canDefragNow() {
		keep = run.Member
	}
	for _, m := range s.active() {
		if !m.Spec.Drained || m.Name == keep {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Putting a drained member back into the client Service: its defragmentation cannot go on now", "member", m.Name)
		if err := r.setDrained(ctx, s, m, false); err != nil {
			return ctrl.Result{}, err
		}
		if run != nil && run.Member == m.Name && run.Phase != etcdv1.DefragRestoring {
			run.Phase, run.Since = etcdv1.DefragDraining, &metav1.Time{Time: time.Now()}
		}
	}
	return ctrl.Result{}, nil
}

// setDrained writes the member's spec.drained.
func (r *Reconciler) setDrained(ctx context.Context, s *scope, m *etcdv1.EtcdMember, drained bool) error {
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Drained = drained
	if err := r.Patch(ctx, m, patch); err != nil {
		return fmt.Errorf("set spec.drained of %s to %t: %w", m.Name, drained, err)
	}
	s.wrote(m)
	return nil
}

// planDefrag is the run the policy (or a NOSPACE alarm, or the defrag
// annotation) asks for now, if any, with the scheduled time it fulfils and
// the next scheduled time.
func planDefrag(s *scope, now time.Time) (run *etcdv1.DefragRun, scheduledAt, next time.Time) {
	if s.hasAlarm(etcd.AlarmNoSpace) {
		if last := s.lastNoSpaceRepair(); !last.IsZero() && now.Sub(last) < noSpaceBackoff {
			// The alarm came back right after a repair: the data itself
			// does not fit. Degraded (NoSpace) says what to raise; the
			// repair is tried again later, not in a loop.
			return nil, time.Time{}, last.Add(noSpaceBackoff)
		}
		return &etcdv1.DefragRun{Reason: etcdv1.DefragForNoSpace, Pending: s.defragOrder(nil)}, time.Time{}, time.Time{}
	}
	if req := s.cluster.Annotations[etcdv1.DefragAnnotation]; req != "" && req != s.maintenance().LastRequest {
		return &etcdv1.DefragRun{Reason: etcdv1.DefragForRequest, Pending: s.defragOrder(nil)}, time.Time{}, time.Time{}
	}
	p := s.cluster.Spec.Maintenance.Defrag
	if p.Disabled {
		return nil, time.Time{}, time.Time{}
	}
	if p.Schedule != "" {
		// Refused at admission when it does not parse; a cluster stored
		// before the rule is skipped here rather than stopping the rest.
		if sched, err := schedule.Parse(string(p.Schedule)); err == nil {
			// Clusters that share a schedule defragment apart.
			sched = schedule.Spread(sched, s.cluster.Namespace+"/"+s.cluster.Name)
			var last time.Time
			if t := s.maintenance().LastScheduleTime; t != nil {
				last = t.Time
			}
			// A run missed by more than scheduleDeadline (the cluster was
			// busy or unhealthy, or the schedule was just set) waits for
			// the next time rather than starting at an odd hour.
			due, at, n := schedule.Decide(sched, s.cluster.CreationTimestamp.Time, last, now, scheduleDeadline)
			next = n
			if due {
				return &etcdv1.DefragRun{Reason: etcdv1.DefragForSchedule, Pending: s.defragOrder(nil)}, at, next
			}
		}
	}
	if pending := s.defragOrder(func(st etcd.Status) bool { return overThresholds(p, st) }); len(pending) > 0 {
		return &etcdv1.DefragRun{Reason: etcdv1.DefragForThreshold, Pending: pending}, time.Time{}, next
	}
	return nil, time.Time{}, next
}

// scheduleDeadline is how late a scheduled defragmentation may start.
const scheduleDeadline = time.Hour

// defragAttempts is how many times one member's defragmentation may fail
// before the run gives up on that member and goes on.
const defragAttempts = 3

// noSpaceBackoff is how long after a NOSPACE repair the next one may
// start, when the alarm comes straight back.
const noSpaceBackoff = 5 * time.Minute

// nearQuota is the share of its quota (in percent) from which a member's
// database is checked every nearQuotaInterval rather than at each health
// pass.
const (
	nearQuota         = 90
	nearQuotaInterval = 10 * time.Second
)

// stillFull names the members whose database came out of this NOSPACE
// run's defragmentation at or above their quota, or "".
func (s *scope) stillFull(run *etcdv1.DefragRun) string {
	var full []string
	for _, rec := range s.maintenance().Members {
		m := s.memberNamed(rec.Name)
		if m == nil || rec.Reason != etcdv1.DefragForNoSpace || run.StartedAt == nil || rec.Time.Before(run.StartedAt) {
			continue
		}
		if q := resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes); rec.SizeAfter >= q {
			full = append(full, fmt.Sprintf("member %s's database is %s, its quota %s", m.Name, etcd.FormatBytes(rec.SizeAfter), etcd.FormatBytes(q)))
		}
	}
	return strings.Join(full, "; ")
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// lastNoSpaceRepair is when the last NOSPACE repair defragmented a member.
func (s *scope) lastNoSpaceRepair() time.Time {
	var last time.Time
	for _, m := range s.maintenance().Members {
		if m.Reason == etcdv1.DefragForNoSpace && m.Time.After(last) {
			last = m.Time.Time
		}
	}
	return last
}

// overThresholds says whether a member's free pages reach both of the
// policy's thresholds.
func overThresholds(p etcdv1.DefragPolicy, st etcd.Status) bool {
	free := st.DBSize - st.DBSizeInUse
	if st.DBSize <= 0 || st.DBSizeInUse <= 0 || free <= 0 {
		return false
	}
	pct := int64(50)
	if p.MinFreePercent != nil {
		pct = int64(*p.MinFreePercent)
	}
	minBytes := int64(64 << 20)
	if p.MinFreeBytes != nil {
		minBytes = p.MinFreeBytes.Value()
	}
	return free*100 >= pct*st.DBSize && free >= minBytes
}

// compactForNoSpace compacts the history, keeping the newest revisions, so
// that the defragmentations after it have pages to give back.
func (r *Reconciler) compactForNoSpace(ctx context.Context, s *scope, run *etcdv1.DefragRun) (ctrl.Result, error) {
	var rev int64
	for _, st := range s.health {
		rev = max(rev, st.Revision)
	}
	keep := resources.NoSpaceKeepRevisions
	o := resources.MemberOptions(s.cluster, s.legacyOptions())
	if o.AutoCompactionMode == "revision" {
		var n int64
		if _, err := fmt.Sscan(o.AutoCompactionRetention, &n); err == nil {
			keep = max(keep, n)
		}
	}
	if rev == 0 {
		s.waiting, s.waitingMsg = etcdv1.ReasonDefragmenting, "The NOSPACE repair waits for a member to report etcd's revision"
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	to := rev - keep
	if to > 0 {
		ctrl.LoggerFrom(ctx).Info("Compacting for a NOSPACE alarm", "revision", to)
		tctx, cancel := r.etcdCtx(ctx)
		err := s.client.Compact(tctx, to)
		cancel()
		observe("compact", err)
		if err != nil {
			return r.notYet(s, err, etcdv1.ReasonDefragmenting, fmt.Sprintf("compact to revision %d", to))
		}
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "Compacted", "Compact", "Compacted etcd's history to revision %d (keeping %d revisions) to repair the NOSPACE alarm", to, keep)
	}
	run.CompactedRevision = max(to, 1)
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// drain takes the member out of the client Service (out) or puts it back,
// through its spec.drained, and waits for its Serving condition; a drained
// member is then given DrainDelay for the endpoints and the Service's
// proxies to drop it.
func (r *Reconciler) drain(ctx context.Context, s *scope, run *etcdv1.DefragRun, m *etcdv1.EtcdMember, out bool) (ctrl.Result, error) {
	if out && (len(s.active()) == 1 || !s.servingOnly) {
		// Nowhere else to send clients, or a client Service that does not
		// select on the serving label yet (Pods made before it existed):
		// draining would change nothing, so the member is defragmented in
		// place.
		run.Phase, run.Since = etcdv1.DefragDefragmenting, &metav1.Time{Time: time.Now()}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	if m.Spec.Drained != out {
		if err := r.setDrained(ctx, s, m, out); err != nil {
			return ctrl.Result{}, err
		}
		// The member's Serving condition brings the next pass.
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
	c := kube.Find(m.Status.Conditions, etcdv1.ConditionServing, m.Generation)
	if c == nil || (c.Status == metav1.ConditionTrue) == out {
		s.waiting, s.waitingMsg = etcdv1.ReasonDefragmenting, fmt.Sprintf("Waiting for the member controller to take %s %s the client Service (its Serving condition)", m.Name, map[bool]string{true: "out of", false: "back into"}[out])
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
	if !out {
		run.Member, run.Phase = "", ""
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	if wait := c.LastTransitionTime.Add(r.Options.DrainDelay).Sub(time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	run.Phase, run.Since = etcdv1.DefragDefragmenting, &metav1.Time{Time: time.Now()}
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// defragment moves leadership away from the member if it leads, then
// defragments it and records what that gave back.
func (r *Reconciler) defragment(ctx context.Context, s *scope, run *etcdv1.DefragRun, m *etcdv1.EtcdMember) (ctrl.Result, error) {
	em, _ := s.inEtcd(m)
	if em.ID == s.leader && len(s.active()) > 1 {
		if to, ok := s.successor(em.ID, nil); ok {
			return r.moveLeader(ctx, s, m, to, etcdv1.ReasonDefragmenting, "defragmenting")
		}
	}
	log := ctrl.LoggerFrom(ctx)
	// A defragmentation takes as long as the database is large: it runs
	// beside the workers, and its end wakes this cluster. The sizes before
	// are those of the pass that started it.
	before, cl, name, url, reason := s.health[em.ID], s.client, m.Name, m.Spec.ClientURL, run.Reason
	key := defragKey(run)
	if !r.Long.busy(s.cluster, key) {
		// A call starts, and its result is recorded, only on the run as
		// stored: the cache may still hold the status from before the
		// last pass recorded this member's defragmentation (which would
		// defragment it again, or record it twice).
		if stored, err := r.storedRun(ctx, s.cluster); err != nil {
			return ctrl.Result{}, err
		} else if stored == nil || defragKey(stored) != key || stored.Phase != etcdv1.DefragDefragmenting {
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
		}
	}
	res, ended := r.Long.call(s.cluster, key, r.Options.DefragTimeout, func(ctx context.Context) (any, error) {
		log.Info("Defragmenting member", "member", name, "reason", reason, "dbSize", before.DBSize, "dbSizeInUse", before.DBSizeInUse)
		return before, cl.Defragment(ctx, url)
	})
	if !ended {
		return ctrl.Result{RequeueAfter: r.Options.HealthInterval}, nil
	}
	err, took := res.err, res.took
	before, _ = res.value.(etcd.Status)
	observe("defragment", err)
	if err != nil {
		run.Attempts++
		if run.Attempts < defragAttempts {
			return r.notYet(s, err, etcdv1.ReasonDefragmenting, fmt.Sprintf("defragment %s (attempt %d of %d)", m.Name, run.Attempts, defragAttempts))
		}
		// Given up on for this run: the member goes back into the client
		// Service and the run goes on with the next.
		log.Info("Giving up defragmenting member", "member", m.Name, "error", err.Error())
		r.Recorder.Eventf(s.cluster, m, corev1.EventTypeWarning, eventDefragFailed, "Defragment", "Defragmenting %s failed %d times (%v); it is skipped in this run", m.Name, run.Attempts, err)
		countEvent(s.cluster, eventDefragFailed)
		run.Attempts, run.Phase, run.Since = 0, etcdv1.DefragRestoring, &metav1.Time{Time: time.Now()}
		return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
	}
	run.Attempts = 0
	r.recordDefrag(ctx, s, run, m, before, took)
	run.Phase, run.Since = etcdv1.DefragRestoring, &metav1.Time{Time: time.Now()}
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// recordDefrag records a member's defragmentation in the status, with the
// database size before and after, and reports it once the status is
// written.
func (r *Reconciler) recordDefrag(ctx context.Context, s *scope, run *etcdv1.DefragRun, m *etcdv1.EtcdMember, before etcd.Status, took time.Duration) {
	sctx, cancel := context.WithTimeout(ctx, r.Options.StatusTimeout)
	after, err := s.client.Status(sctx, m.Spec.ClientURL)
	cancel()
	if err != nil {
		after = etcd.Status{DBSize: before.DBSize}
	}
	rec := etcdv1.MemberDefragStatus{Name: m.Name, Time: metav1.Now(), Reason: run.Reason, SizeBefore: before.DBSize, SizeAfter: after.DBSize,
		ReclaimedBytes: max(before.DBSize-after.DBSize, 0), DurationMillis: took.Milliseconds()}
	st := s.maintenance()
	st.Members = slices.DeleteFunc(st.Members, func(x etcdv1.MemberDefragStatus) bool { return x.Name == m.Name })
	st.Members = append(st.Members, rec)
	slices.SortFunc(st.Members, func(a, b etcdv1.MemberDefragStatus) int { return strings.Compare(a.Name, b.Name) })
	cluster := s.cluster
	s.afterWrite = append(s.afterWrite, func() {
		r.Recorder.Eventf(cluster, m, corev1.EventTypeNormal, eventMemberDefragmented, "Defragment", "Defragmented %s (%s) in %s: database %s -> %s",
			m.Name, defragWhy(rec.Reason), took.Round(time.Millisecond), etcd.FormatBytes(rec.SizeBefore), etcd.FormatBytes(rec.SizeAfter))
		countEvent(cluster, eventMemberDefragmented)
	})
}

// defragKey names one attempt at the run's member's defragmentation: its
// long call and result.
func defragKey(run *etcdv1.DefragRun) string {
	var started int64
	if run.StartedAt != nil {
		started = run.StartedAt.UnixNano()
	}
	return fmt.Sprintf("defragment/%s/%d/%d", run.Member, started, run.Attempts)
}

// storedRun is the defragmentation run as the API server has it, past the
// cache (as the cache has it without an APIReader: unit tests).
func (r *Reconciler) storedRun(ctx context.Context, c *etcdv1.EtcdCluster) (*etcdv1.DefragRun, error) {
	live := c
	if r.APIReader != nil {
		live = &etcdv1.EtcdCluster{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil {
			return nil, fmt.Errorf("read the defragmentation run: %w", err)
		}
	}
	if live.Status.Maintenance == nil {
		return nil, nil
	}
	return live.Status.Maintenance.Defrag, nil
}

// finishDefrag ends the run; a NOSPACE run disarms the alarm when every
// member's database came out of its defragmentation below its quota.
func (r *Reconciler) finishDefrag(ctx context.Context, s *scope, st *etcdv1.MaintenanceStatus) (ctrl.Result, error) {
	run := st.Defrag
	if run.Reason == etcdv1.DefragForNoSpace {
		if !s.alarmsKnown {
			// Only etcd's own list says which alarms to clear.
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
		}
		if full := s.stillFull(run); full != "" {
			// Disarming would let the next write raise the alarm again:
			// the data does not fit its quota. The alarm stays, Degraded
			// (NoSpace) says what to raise, and the repair is tried again
			// after noSpaceBackoff.
			ctrl.LoggerFrom(ctx).Info("The database is still at its quota after the repair", "members", full)
			r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, "NoSpaceRemains", "Defragment", "After compacting to revision %d and defragmenting every member, %s: raise spec.storage.size (the default quota follows it) or spec.options.quotaBackendBytes; the NOSPACE alarm stays", run.CompactedRevision, full)
			st.Defrag = nil
			return ctrl.Result{RequeueAfter: noSpaceBackoff}, nil
		}
		for _, a := range s.alarms {
			if a.Type != etcd.AlarmNoSpace {
				continue
			}
			tctx, cancel := r.etcdCtx(ctx)
			err := s.client.DisarmAlarm(tctx, a)
			cancel()
			observe("alarm_disarm", err)
			if err != nil {
				return r.notYet(s, err, etcdv1.ReasonDefragmenting, "clear the NOSPACE alarm")
			}
			r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "AlarmCleared", "AlarmDisarm", "Cleared the NOSPACE alarm of member %s after compacting to revision %d and defragmenting every member", etcd.FormatID(a.MemberID), run.CompactedRevision)
		}
		s.alarms = slices.DeleteFunc(s.alarms, func(a etcd.Alarm) bool { return a.Type == etcd.AlarmNoSpace })
	}
	ctrl.LoggerFrom(ctx).Info("Defragmentation done", "reason", run.Reason)
	st.Defrag = nil
	return ctrl.Result{RequeueAfter: r.Options.RetryInterval}, nil
}

// maintenance is status.maintenance, made when missing.
func (s *scope) maintenance() *etcdv1.MaintenanceStatus {
	if s.cluster.Status.Maintenance == nil {
		s.cluster.Status.Maintenance = &etcdv1.MaintenanceStatus{}
	}
	return s.cluster.Status.Maintenance
}

// recovering: a quorum recovery has not finished.
func recovering(c *etcdv1.EtcdCluster) bool {
	return c.Status.Recovery != nil && c.Status.Recovery.Phase != etcdv1.RecoveryDone
}

// untilNext comes back at the next scheduled time when it is sooner than
// the health check would.
func untilNext(next, now time.Time, health time.Duration) ctrl.Result {
	if next.IsZero() || next.Sub(now) >= health {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}
}

func defragWhy(reason string) string {
	switch reason {
	case etcdv1.DefragForNoSpace:
		return "repairing a NOSPACE alarm"
	case etcdv1.DefragForSchedule:
		return "on spec.maintenance.defrag.schedule"
	case etcdv1.DefragForRequest:
		return "asked for with the " + etcdv1.DefragAnnotation + " annotation"
	default:
		return "free space over spec.maintenance.defrag's thresholds"
	}
}

func defragProgress(run *etcdv1.DefragRun) string {
	msg := "Defragmenting members one at a time (" + defragWhy(run.Reason) + ")"
	if run.Member != "" {
		msg += fmt.Sprintf(": %s %s", strings.ToLower(run.Phase), run.Member)
	}
	if len(run.Pending) > 0 {
		msg += "; next " + strings.Join(run.Pending, ", ")
	}
	return msg
}
