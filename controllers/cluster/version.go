package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// versionChange is how the members get from the versions they run to the
// spec's version.
type versionChange int

const (
	// versionFree: the same minor (patch releases up or down), or nothing.
	versionFree versionChange = iota
	// versionUpgrade: one minor up; members restart on the new release,
	// which raises the cluster version once all run it.
	versionUpgrade
	// versionDowngrade: one minor down, through etcd's downgrade API.
	versionDowngrade
	// versionBlocked: not allowed now; the message says the path.
	versionBlocked
)

// versionPlan is what planVersion decided.
type versionPlan struct {
	change versionChange
	// target is the spec's version; lowest and highest the versions the
	// members run now.
	target, lowest, highest string
	msg                     string
}

// minorOf is "3.6" of "3.6.16".
func minorOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// minorNum is 6 of "3.6.16", -1 when v is not a version.
func minorNum(v string) int {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return -1
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return -1
	}
	return n
}

// patchNum is 16 of "3.6.16", -1 when v has none.
func patchNum(v string) int {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 {
		return -1
	}
	n, err := strconv.Atoi(strings.SplitN(parts[2], "-", 2)[0])
	if err != nil {
		return -1
	}
	return n
}

// planVersion decides how the members, which run the versions in running
// (one per member, as etcd reports them), get to target. etcd's rules:
//   - within a minor, any patch release up or down;
//   - up one minor at a time, and to 3.6 only from 3.5.32 or later, to
//     3.7 only from 3.6.11 or later (each upgrade guide's minimum);
//   - down one minor at a time, through the downgrade API.
//
// Admission refuses a spec that skips a minor from the spec before; this
// check covers what admission cannot see: the versions really running (a
// second edit before the first rollout ended).
func planVersion(running []string, target string) versionPlan {
	p := versionPlan{target: target}
	for _, v := range running {
		if v == "" {
			continue
		}
		if p.lowest == "" || compareVersions(v, p.lowest) < 0 {
			p.lowest = v
		}
		if p.highest == "" || compareVersions(v, p.highest) > 0 {
			p.highest = v
		}
	}
	if p.lowest == "" {
		return p
	}
	tm, lo, hi := minorNum(target), minorNum(p.lowest), minorNum(p.highest)
	switch {
	case tm > lo+1:
		p.change = versionBlocked
		p.msg = fmt.Sprintf("Members run %s; etcd upgrades one minor version at a time: set spec.version to 3.%d.x first, let the rollout finish, then %s", p.lowest, lo+1, target)
	case tm < hi-1:
		p.change = versionBlocked
		p.msg = fmt.Sprintf("Members run %s; etcd downgrades one minor version at a time: set spec.version to 3.%d.x first, let the rollout finish, then %s", p.highest, hi-1, target)
	case tm == lo+1:
		min, ok := etcdv1.MinUpgradePatch[minorOf(p.lowest)]
		var old []string
		for _, v := range running {
			if minorNum(v) == lo && ok && patchNum(v) < min {
				old = append(old, v)
			}
		}
		if len(old) > 0 {
			p.change = versionBlocked
			p.msg = fmt.Sprintf("Members run %s; etcd's upgrade guide requires %s.%d or later before %s: set spec.version to %s.%d (or later %s) first, then %s",
				p.lowest, minorOf(p.lowest), min, minorOf(target), minorOf(p.lowest), min, minorOf(p.lowest), target)
			return p
		}
		p.change = versionUpgrade
	case tm < hi && lo == hi:
		// Every member runs the higher minor, so the cluster version may
		// be it: etcd must lower it (and the data format) before any member
		// may start the older minor. Once one does, the members run mixed
		// minors under the lower cluster version, and the rest of the way
		// is plain restarts, as is going back from an upgrade that has not
		// reached every member yet.
		p.change = versionDowngrade
	}
	return p
}

// downgradeTarget is the version etcd's downgrade API takes for a minor:
// "3.5.0" for 3.5.
func downgradeTarget(version string) string {
	return minorOf(version) + ".0"
}

// prepareVersion decides how the members get to spec.version and does what
// etcd needs before any of them may restart on it: a minor downgrade is
// enabled with etcd's downgrade API (validate, then enable), and a
// downgrade the spec no longer asks for is cancelled. It runs before the
// scaling steps so that a member added meanwhile gets a version the
// running members accept (newMemberVersion).
func (r *Reconciler) prepareVersion(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.formed {
		return ctrl.Result{}, nil
	}
	s.plan = planVersion(s.runningVersions(), s.cluster.Spec.Version)
	enabled, to := s.downgradeEnabled()
	if s.needsSnapshotsFor37() {
		return r.snapshotBefore37(ctx, s, enabled, to)
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case enabled && minorOf(to) != minorOf(s.plan.target):
		log.Info("Cancelling a downgrade the spec no longer asks for", "downgradeTo", to, "version", s.plan.target)
		tctx, cancel := r.etcdCtx(ctx)
		defer cancel()
		if _, err := s.client.Downgrade(tctx, etcd.DowngradeCancel, to); err != nil {
			observe("downgrade_cancel", err)
			return r.notYet(s, err, etcdv1.ReasonRollingUpdate, fmt.Sprintf("cancel the downgrade to %s", minorOf(to)))
		}
		observe("downgrade_cancel", nil)
		s.progress, s.progressMsg = etcdv1.ReasonRollingUpdate, fmt.Sprintf("Cancelled the downgrade to %s: spec.version is %s again", minorOf(to), s.plan.target)
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "DowngradeCancelled", "Downgrade", "Cancelled etcd's downgrade to %s: spec.version is %s again", minorOf(to), s.plan.target)
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	case s.plan.change == versionDowngrade && !enabled:
		if !s.allSettled() {
			s.waiting, s.waitingMsg = etcdv1.ReasonRollingUpdate, fmt.Sprintf("The downgrade to %s waits for every member to be healthy", minorOf(s.plan.target))
			return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
		}
		target := downgradeTarget(s.plan.target)
		log.Info("Enabling etcd's downgrade", "to", target)
		if res, ok := r.enableDowngrade(ctx, s, target, fmt.Sprintf("etcd does not accept a downgrade to %s yet", minorOf(target))); !ok {
			return res, nil
		}
		s.progress, s.progressMsg = etcdv1.ReasonRollingUpdate, fmt.Sprintf("Downgrading to %s: enabled etcd's downgrade; members restart once their data format is %s", minorOf(target), minorOf(target))
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "DowngradeEnabled", "Downgrade", "Enabled etcd's downgrade from %s to %s; members restart on %s once their data format is %s", s.plan.highest, minorOf(target), s.plan.target, minorOf(target))
		return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
	}
	if enabled {
		s.cluster.Status.Rollout = ensureRollout(s.cluster.Status.Rollout)
		s.cluster.Status.Rollout.DowngradeTarget = minorOf(to)
	} else if ro := s.cluster.Status.Rollout; ro != nil {
		ro.DowngradeTarget = ""
	}
	return ctrl.Result{}, nil
}

// needsSnapshotsFor37 says whether the members must snapshot before any of
// them starts 3.7. etcd 3.5 wrote some raft entries as v2 requests (member
// attributes at every start, cluster versions); 3.6 still applies them when
// it replays its log, but 3.7 cannot parse them and panics at start. A 3.6
// member snapshots only every --snapshot-count entries, so a cluster born on
// 3.5 with little traffic since still replays them. Nothing tells from
// outside whether a member's log holds any, so every 3.6 -> 3.7 upgrade
// first makes each member snapshot (snapshotBefore37), once.
func (s *scope) needsSnapshotsFor37() bool {
	ro := s.cluster.Status.Rollout
	return s.plan.change == versionUpgrade && minorOf(s.plan.target) == "3.7" && minorOf(s.plan.highest) == "3.6" &&
		(ro == nil || ro.SnapshottedFor != "3.7")
}

// snapshotBefore37 makes every member write a snapshot with etcd's own API:
// a downgrade to 3.5 enabled and, once every member's data format is 3.5,
// cancelled at once. Applying the lower cluster version forces a snapshot
// on each member (etcd does so before it changes its data format), and the
// cancel brings the cluster version back to 3.6 within seconds. Clients
// are served throughout; only features new in 3.6 pause meanwhile.
// status.rollout.snapshottedFor records it done; doing it twice (a lost
// status write) costs seconds and nothing else.
func (r *Reconciler) snapshotBefore37(ctx context.Context, s *scope, enabled bool, to string) (ctrl.Result, error) {
	s.progress = etcdv1.ReasonRollingUpdate
	formats := map[string]int{}
	for _, st := range s.health {
		formats[minorOf(st.StorageVersion)]++
	}
	switch {
	case !s.allSettled():
		s.progressMsg = "Before 3.7, every member must snapshot: waiting for every member to be healthy"
	case !enabled && formats["3.6"] == len(s.health):
		if res, ok := r.enableDowngrade(ctx, s, "3.5.0", "Before 3.7, every member must snapshot; etcd refused the downgrade to 3.5 that makes it"); !ok {
			return res, nil
		}
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "SnapshottingForUpgrade", "Downgrade", "Before 3.7: enabled a downgrade to 3.5, to be cancelled once every member has snapshotted (3.7 cannot replay log entries etcd 3.5 wrote)")
		s.progressMsg = "Before 3.7, every member must snapshot: enabled a downgrade to 3.5 for that; it is cancelled once done"
	case enabled && minorOf(to) == "3.5" && formats["3.5"] == len(s.health):
		tctx, cancel := r.etcdCtx(ctx)
		defer cancel()
		if _, err := s.client.Downgrade(tctx, etcd.DowngradeCancel, to); err != nil {
			observe("downgrade_cancel", err)
			return r.notYet(s, err, etcdv1.ReasonRollingUpdate, "cancel the downgrade that made every member snapshot")
		}
		observe("downgrade_cancel", nil)
		s.cluster.Status.Rollout = ensureRollout(s.cluster.Status.Rollout)
		s.cluster.Status.Rollout.SnapshottedFor = "3.7"
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "SnapshottedForUpgrade", "Downgrade", "Every member has snapshotted; cancelled the downgrade to 3.5, the upgrade to %s goes on once the cluster version is 3.6 again", s.plan.target)
		s.progressMsg = "Every member has snapshotted; waiting for the cluster version to be 3.6 again"
	default:
		s.progressMsg = fmt.Sprintf("Before 3.7, every member must snapshot: waiting for every member's data format to be 3.5 (now %v)", formats)
	}
	return ctrl.Result{RequeueAfter: r.Options.WaitInterval}, nil
}

// enableDowngrade validates, then enables, etcd's downgrade to target. A
// refusal is a wait, not an error: right after the last member of an
// upgrade restarted, etcd may not have raised the cluster version yet; it
// does within seconds, and the downgrade is tried again.
func (r *Reconciler) enableDowngrade(ctx context.Context, s *scope, target, refused string) (ctrl.Result, bool) {
	tctx, cancel := r.etcdCtx(ctx)
	defer cancel()
	for _, a := range []etcd.DowngradeAction{etcd.DowngradeValidate, etcd.DowngradeEnable} {
		if _, err := s.client.Downgrade(tctx, a, target); err != nil {
			observe("downgrade_"+a.String(), err)
			s.waiting, s.waitingMsg = etcdv1.ReasonRollingUpdate, fmt.Sprintf("%s: %v", refused, err)
			return ctrl.Result{RequeueAfter: r.Options.UnhealthyInterval}, false
		}
	}
	observe("downgrade_enable", nil)
	return ctrl.Result{}, true
}

// newMemberVersion is the version a member added now runs: the spec's,
// unless the running members would not accept it yet. While a version
// change is blocked that is the lowest running version; while a minor
// downgrade runs, the higher minor (a new member of the older minor cannot
// join before every member moved its data format back; the rollout then
// restarts it like the others).
func (s *scope) newMemberVersion() string {
	switch s.plan.change {
	case versionBlocked:
		return s.plan.lowest
	case versionDowngrade:
		return s.plan.highest
	}
	if enabled, _ := s.downgradeEnabled(); enabled && s.plan.highest != "" {
		return s.plan.highest
	}
	return s.cluster.Spec.Version
}
