package cluster

import (
	"fmt"
	"strconv"
	"strings"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
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
