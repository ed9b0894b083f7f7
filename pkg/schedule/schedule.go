// Package schedule holds the pure decisions behind scheduled etcd backups:
// parsing a cron expression, deciding whether a backup is due now, and
// choosing which existing backups a retention policy expires.
//
// Nothing in this package talks to Kubernetes; callers pass in the times and
// backups they observed and act on the answers.
package schedule

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Parse parses a standard 5-field cron expression (minute hour day-of-month
// month day-of-week) or a descriptor such as "@hourly", "@daily" or
// "@every 5m", using robfig/cron/v3's standard parser. A "CRON_TZ=Zone "
// prefix is accepted as well. Surrounding white space is ignored.
//
// The returned error names the offending expression.
func Parse(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(strings.TrimSpace(expr))
	if err != nil {
		return nil, fmt.Errorf("invalid backup schedule %q: %w", expr, err)
	}
	return s, nil
}

// Decide says what a backup schedule must do at time now.
//
// last is when the newest scheduled backup was started (zero if there has
// been none yet); created is when the schedule was set up (the creation of
// the cluster, or the last change of the schedule) and is the reference when
// last is zero. With ref being that reference time:
//
//   - scheduledAt is the latest scheduled time in (ref, now], or zero if
//     there is none. Missed runs are collapsed: however many scheduled times
//     passed since ref, only the latest one counts, so at most one backup is
//     due.
//   - due is true when scheduledAt is set and the backup should be started
//     now.
//   - next is the first scheduled time after now (after ref, should ref lie
//     in the future), suitable for a requeue delay; it is zero if the
//     schedule never fires again.
//
// Starting deadline: when startingDeadline > 0 and scheduledAt is more than
// startingDeadline before now, the run is considered missed and is skipped
// rather than started late: due is false while scheduledAt still reports the
// skipped time. The schedule resumes at next. A startingDeadline <= 0 means
// late runs are always started.
//
// "@every d" schedules are anchored at ref: they fire at ref+d, ref+2d, ...
// (ref truncated to the second), so each backup restarts the interval.
func Decide(s cron.Schedule, created, last, now time.Time, startingDeadline time.Duration) (due bool, scheduledAt time.Time, next time.Time) {
	if sh, ok := s.(Shifted); ok {
		// Decided on the schedule's own times, with every time moved back
		// by the offset, then moved forward again.
		d := sh.Offset
		due, scheduledAt, next = Decide(sh.Schedule, created.Add(-d), shift(last, -d), now.Add(-d), startingDeadline)
		return due, shift(scheduledAt, d), shift(next, d)
	}
	ref := created
	if !last.IsZero() {
		ref = last
	}

	scheduledAt, next = latest(s, ref, now)
	if scheduledAt.IsZero() {
		return false, time.Time{}, next
	}
	if startingDeadline > 0 && now.Sub(scheduledAt) > startingDeadline {
		return false, scheduledAt, next
	}
	return true, scheduledAt, next
}

// latest returns the latest time s fires in (ref, now] (zero if none) and the
// first time s fires after that one, or after ref if there was none.
func latest(s cron.Schedule, ref, now time.Time) (at, next time.Time) {
	if now.After(ref) {
		switch sched := s.(type) {
		case cron.ConstantDelaySchedule:
			at = latestConstant(sched, ref, now)
		case *cron.SpecSchedule:
			at = latestSpec(sched, ref, now)
		default:
			at = walk(s, s.Next(ref), now)
		}
	}
	if at.IsZero() {
		return time.Time{}, s.Next(ref)
	}
	return at, s.Next(at)
}

// latestConstant computes the latest firing of an "@every" schedule anchored
// at ref in (ref, now] without iterating.
func latestConstant(s cron.ConstantDelaySchedule, ref, now time.Time) time.Time {
	if s.Delay <= 0 {
		return time.Time{}
	}
	first := s.Next(ref)
	if first.After(now) {
		return time.Time{}
	}
	k := now.Sub(first) / s.Delay
	return first.Add(k * s.Delay)
}

// latestSpec finds the latest firing of a calendar schedule in (ref, now].
// Calendar schedules do not depend on where iteration starts, so instead of
// walking every firing since ref (which may be years of minutes) it looks
// back from now through a doubling window and walks only inside the first
// window that contains a firing.
func latestSpec(s *cron.SpecSchedule, ref, now time.Time) time.Time {
	span := now.Sub(ref) // > 0; saturates for very old references
	w := time.Minute
	for {
		clamped := w >= span
		start := now.Add(-w)
		if clamped {
			start = ref
		}
		if at := walk(s, s.Next(start), now); !at.IsZero() {
			return at
		}
		if clamped {
			return time.Time{}
		}
		if w > span/2 {
			w = span
		} else {
			w *= 2
		}
	}
}

// walk follows s from the firing t and returns the last firing not after
// now, or zero if t itself is zero or after now.
func walk(s cron.Schedule, t, now time.Time) time.Time {
	if t.IsZero() || t.After(now) {
		return time.Time{}
	}
	for {
		n := s.Next(t)
		if n.IsZero() || n.After(now) || !n.After(t) {
			return t
		}
		t = n
	}
}

// MaxSpread bounds how late Spread shifts a schedule.
const MaxSpread = 10 * time.Minute

// Shifted is a schedule whose every time comes Offset later than its
// Schedule's. Decide takes it like any other.
type Shifted struct {
	cron.Schedule
	Offset time.Duration
}

// Next implements cron.Schedule.
func (s Shifted) Next(t time.Time) time.Time {
	return shift(s.Schedule.Next(t.Add(-s.Offset)), s.Offset)
}

// Spread shifts a cron schedule by an offset of its own for key (a
// cluster's namespace and name), so that the clusters of a fleet that share
// a schedule ("0 3 * * *") do not all start at the same second: the offset
// is a hash of key in whole seconds below a tenth of the time between two
// runs, and below MaxSpread. It is the same for a key every time, so a
// cluster's runs stay that far apart. An "@every" schedule is anchored at
// its cluster's own times already and is not shifted.
func Spread(s cron.Schedule, key string) cron.Schedule {
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return s
	}
	from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	first := spec.Next(from)
	if first.IsZero() {
		return s
	}
	window := min(spec.Next(first).Sub(first)/10, MaxSpread)
	if window < time.Second {
		return s
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return Shifted{Schedule: s, Offset: time.Duration(h.Sum64()%uint64(window/time.Second)) * time.Second}
}

// shift moves t by d; the zero time ("never") stays zero.
func shift(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d)
}
