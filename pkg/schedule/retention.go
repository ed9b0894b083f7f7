package schedule

import (
	"sort"
	"time"
)

// maxFailed is how many of the newest failed backups are kept at most.
const maxFailed = 3

// Backup is what retention needs to know of one backup.
type Backup struct {
	// Name identifies the backup; it breaks ties between equal times.
	Name string
	// Time is when the backup was started.
	Time time.Time
	// Complete is set once the backup finished successfully.
	Complete bool
	// Failed is set once the backup finished unsuccessfully. A backup with
	// neither Complete nor Failed set is still running. Failed wins over
	// Complete should both be set.
	Failed bool
}

func (b Backup) complete() bool { return b.Complete && !b.Failed }

func (b Backup) running() bool { return !b.Complete && !b.Failed }

// Retention is a backup retention policy.
type Retention struct {
	// KeepLast keeps the newest KeepLast complete backups; 0 (or less)
	// means no limit on the count.
	KeepLast int
	// MaxAge deletes complete backups started more than MaxAge before now;
	// 0 (or less) means no limit on the age.
	MaxAge time.Duration
}

// Expired returns the names of the backups to delete, oldest first (backups
// started at the same time are ordered by name). It selects:
//
//   - complete backups beyond the newest KeepLast complete ones, and complete
//     backups started more than MaxAge before now,
//   - but never the newest complete backup, whatever its age, so that a
//     restore always has something to start from;
//   - failed backups started before the newest complete one, and failed
//     backups beyond the newest 3 failed ones.
//
// Running backups are never selected. The input slice is not modified.
func (r Retention) Expired(backups []Backup, now time.Time) []string {
	sorted := make([]Backup, len(backups))
	copy(sorted, backups)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Time.Equal(sorted[j].Time) {
			return sorted[i].Time.Before(sorted[j].Time)
		}
		return sorted[i].Name < sorted[j].Name
	})

	var nComplete, nFailed int
	newestComplete := -1
	for i, b := range sorted {
		switch {
		case b.complete():
			nComplete++
			newestComplete = i
		case b.Failed:
			nFailed++
		}
	}

	var expired []string
	// rank counts, from the oldest, the backups of a kind seen so far; the
	// newest of a kind has rank n-1.
	var completeRank, failedRank int
	for _, b := range sorted {
		switch {
		case b.running():
			continue
		case b.complete():
			newer := nComplete - 1 - completeRank // complete backups newer than b
			completeRank++
			if newer == 0 {
				continue // the newest complete backup is always kept
			}
			tooMany := r.KeepLast > 0 && newer >= r.KeepLast
			tooOld := r.MaxAge > 0 && now.Sub(b.Time) > r.MaxAge
			if tooMany || tooOld {
				expired = append(expired, b.Name)
			}
		default: // failed
			newer := nFailed - 1 - failedRank
			failedRank++
			superseded := newestComplete >= 0 && b.Time.Before(sorted[newestComplete].Time)
			if superseded || newer >= maxFailed {
				expired = append(expired, b.Name)
			}
		}
	}
	return expired
}
