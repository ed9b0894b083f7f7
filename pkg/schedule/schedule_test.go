package schedule

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// at parses an RFC 3339 time, failing the test on error.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	return v
}

func mustParse(t *testing.T, expr string) cron.Schedule {
	t.Helper()
	s, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return s
}

func TestParseValid(t *testing.T) {
	from := "2024-01-01T12:00:30Z" // a Monday
	tests := []struct {
		expr string
		next string // first firing after from
	}{
		{"* * * * *", "2024-01-01T12:01:00Z"},
		{"*/1 * * * *", "2024-01-01T12:01:00Z"},
		{"*/15 * * * *", "2024-01-01T12:15:00Z"},
		{"0 3 * * *", "2024-01-02T03:00:00Z"},
		{"30 9 * * 1-5", "2024-01-02T09:30:00Z"},
		{"15,45 */2 1-15 1,6 MON-FRI", "2024-01-01T12:15:00Z"},
		{"0 0 1 * *", "2024-02-01T00:00:00Z"},
		{"@hourly", "2024-01-01T13:00:00Z"},
		{"@daily", "2024-01-02T00:00:00Z"},
		{"@midnight", "2024-01-02T00:00:00Z"},
		{"@weekly", "2024-01-07T00:00:00Z"},
		{"@monthly", "2024-02-01T00:00:00Z"},
		{"@yearly", "2025-01-01T00:00:00Z"},
		{"@annually", "2025-01-01T00:00:00Z"},
		{"@every 5m", "2024-01-01T12:05:30Z"},
		{"@every 1h30m", "2024-01-01T13:30:30Z"},
		{"  @daily\n", "2024-01-02T00:00:00Z"},
		{" 0 3 * * * ", "2024-01-02T03:00:00Z"},
		{"CRON_TZ=UTC 0 3 * * *", "2024-01-02T03:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			s, err := Parse(tc.expr)
			if err != nil {
				t.Fatalf("Parse(%q): unexpected error %v", tc.expr, err)
			}
			if got, want := s.Next(at(t, from)), at(t, tc.next); !got.Equal(want) {
				t.Errorf("Next(%s) = %s, want %s", from, got, want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []string{
		"",
		"   ",
		"* * * *",
		"* * * * * *",
		"0 0 0 * * * *",
		"61 * * * *",
		"* 24 * * *",
		"* * 32 * *",
		"* * * 13 *",
		"* * * * 8",
		"*/0 * * * *",
		"a b c d e",
		"@fortnightly",
		"@every",
		"@every soon",
		"CRON_TZ=Nowhere/Atlantis 0 3 * * *",
	}
	for _, expr := range tests {
		t.Run(fmt.Sprintf("%q", expr), func(t *testing.T) {
			s, err := Parse(expr)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error", expr, s)
			}
			if s != nil {
				t.Errorf("Parse(%q) returned a schedule along with error %v", expr, err)
			}
			if quoted := fmt.Sprintf("%q", expr); !strings.Contains(err.Error(), quoted) {
				t.Errorf("error %q does not name the expression %s", err, quoted)
			}
		})
	}
}

// listSchedule fires at a fixed list of sorted times. It is not a robfig type,
// so Decide must treat it generically.
type listSchedule []time.Time

func (l listSchedule) Next(t time.Time) time.Time {
	for _, v := range l {
		if v.After(t) {
			return v
		}
	}
	return time.Time{}
}

func TestDecide(t *testing.T) {
	const none = ""
	tests := []struct {
		name     string
		expr     string        // parsed unless sched is set
		sched    cron.Schedule // overrides expr
		created  string        // required
		last     string        // none: no backup yet
		now      string        // required
		deadline time.Duration // startingDeadline
		due      bool          // want
		schedAt  string        // want; none: zero
		next     string        // want; none: zero
	}{
		{
			name: "first run after creation", expr: "0 * * * *",
			created: "2024-01-01T11:30:00Z", now: "2024-01-01T12:00:05Z",
			due: true, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "not due before the first time", expr: "0 * * * *",
			created: "2024-01-01T11:30:00Z", now: "2024-01-01T11:59:59.999Z",
			due: false, schedAt: none, next: "2024-01-01T12:00:00Z",
		},
		{
			name: "not due right at creation", expr: "0 * * * *",
			created: "2024-01-01T12:00:00Z", now: "2024-01-01T12:00:00Z",
			due: false, schedAt: none, next: "2024-01-01T13:00:00Z",
		},
		{
			name: "creation exactly at a scheduled time does not count", expr: "0 * * * *",
			created: "2024-01-01T12:00:00Z", now: "2024-01-01T12:59:00Z",
			due: false, schedAt: none, next: "2024-01-01T13:00:00Z",
		},
		{
			name: "due exactly at the scheduled time", expr: "0 * * * *",
			created: "2024-01-01T11:30:00Z", now: "2024-01-01T12:00:00Z",
			due: true, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "missed runs collapse to the latest one", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T08:00:02Z", now: "2024-01-01T12:30:00Z",
			due: true, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "last wins over created", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T12:00:01Z", now: "2024-01-01T12:30:00Z",
			due: false, schedAt: none, next: "2024-01-01T13:00:00Z",
		},
		{
			name: "already ran for this scheduled time", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T12:00:00Z", now: "2024-01-01T12:00:00Z",
			due: false, schedAt: none, next: "2024-01-01T13:00:00Z",
		},
		{
			name: "starting deadline skips an old missed run", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T08:00:02Z", now: "2024-01-01T12:30:00Z",
			deadline: 10 * time.Minute,
			due:      false, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "starting deadline lets a recent missed run through", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T08:00:02Z", now: "2024-01-01T12:05:00Z",
			deadline: 10 * time.Minute,
			due:      true, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "starting deadline is inclusive", expr: "0 * * * *",
			created: "2024-01-01T11:00:00Z", now: "2024-01-01T12:10:00Z",
			deadline: 10 * time.Minute,
			due:      true, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "starting deadline just exceeded", expr: "0 * * * *",
			created: "2024-01-01T11:00:00Z", now: "2024-01-01T12:10:00.001Z",
			deadline: 10 * time.Minute,
			due:      false, schedAt: "2024-01-01T12:00:00Z", next: "2024-01-01T13:00:00Z",
		},
		{
			name: "every minute, first", expr: "*/1 * * * *",
			created: "2024-01-01T12:00:30Z", now: "2024-01-01T12:01:00Z",
			due: true, schedAt: "2024-01-01T12:01:00Z", next: "2024-01-01T12:02:00Z",
		},
		{
			name: "every minute, after a run", expr: "*/1 * * * *",
			created: "2024-01-01T12:00:30Z", last: "2024-01-01T12:01:02Z", now: "2024-01-01T12:01:59Z",
			due: false, schedAt: none, next: "2024-01-01T12:02:00Z",
		},
		{
			name: "every minute, missed two", expr: "*/1 * * * *",
			created: "2024-01-01T12:00:30Z", last: "2024-01-01T12:01:02Z", now: "2024-01-01T12:03:10Z",
			due: true, schedAt: "2024-01-01T12:03:00Z", next: "2024-01-01T12:04:00Z",
		},
		{
			name: "@every before the first interval", expr: "@every 5m",
			created: "2024-01-01T12:00:00Z", now: "2024-01-01T12:04:59Z",
			due: false, schedAt: none, next: "2024-01-01T12:05:00Z",
		},
		{
			name: "@every first interval", expr: "@every 5m",
			created: "2024-01-01T12:00:00Z", now: "2024-01-01T12:05:00Z",
			due: true, schedAt: "2024-01-01T12:05:00Z", next: "2024-01-01T12:10:00Z",
		},
		{
			name: "@every anchored at the last run", expr: "@every 5m",
			created: "2024-01-01T12:00:00Z", last: "2024-01-01T12:05:03.5Z", now: "2024-01-01T12:10:02Z",
			due: false, schedAt: none, next: "2024-01-01T12:10:03Z",
		},
		{
			name: "@every missed intervals collapse", expr: "@every 5m",
			created: "2024-01-01T12:00:00Z", last: "2024-01-01T12:05:03.5Z", now: "2024-01-01T12:20:00Z",
			due: true, schedAt: "2024-01-01T12:15:03Z", next: "2024-01-01T12:20:03Z",
		},
		{
			name: "@every with starting deadline", expr: "@every 1h",
			created: "2024-01-01T00:00:00Z", now: "2024-01-01T05:59:00Z",
			deadline: 30 * time.Minute,
			due:      false, schedAt: "2024-01-01T05:00:00Z", next: "2024-01-01T06:00:00Z",
		},
		{
			name: "@daily", expr: "@daily",
			created: "2024-01-01T10:00:00Z", now: "2024-01-03T01:00:00Z",
			due: true, schedAt: "2024-01-03T00:00:00Z", next: "2024-01-04T00:00:00Z",
		},
		{
			name: "weekdays over a weekend", expr: "30 9 * * 1-5",
			created: "2024-01-01T00:00:00Z", last: "2024-01-05T09:30:01Z", now: "2024-01-08T09:00:00Z",
			due: false, schedAt: none, next: "2024-01-08T09:30:00Z",
		},
		{
			name: "weekdays on monday", expr: "30 9 * * 1-5",
			created: "2024-01-01T00:00:00Z", last: "2024-01-05T09:30:01Z", now: "2024-01-08T10:00:00Z",
			due: true, schedAt: "2024-01-08T09:30:00Z", next: "2024-01-09T09:30:00Z",
		},
		{
			name: "very old reference, every minute", expr: "* * * * *",
			created: "2001-01-01T00:00:00Z", now: "2024-06-15T12:34:56Z",
			due: true, schedAt: "2024-06-15T12:34:00Z", next: "2024-06-15T12:35:00Z",
		},
		{
			name: "very old reference, sparse", expr: "0 0 29 2 *",
			created: "2001-01-01T00:00:00Z", now: "2024-06-15T12:34:56Z",
			due: true, schedAt: "2024-02-29T00:00:00Z", next: "2028-02-29T00:00:00Z",
		},
		{
			name: "zero created, every minute", expr: "* * * * *",
			created: "0001-01-01T00:00:00Z", now: "2024-06-15T12:34:56Z",
			due: true, schedAt: "2024-06-15T12:34:00Z", next: "2024-06-15T12:35:00Z",
		},
		{
			name: "last in the future", expr: "0 * * * *",
			created: "2024-01-01T00:00:00Z", last: "2024-01-01T14:00:05Z", now: "2024-01-01T12:30:00Z",
			due: false, schedAt: none, next: "2024-01-01T15:00:00Z",
		},
		{
			name: "schedule that never fires", expr: "0 0 30 2 *",
			created: "2024-01-01T00:00:00Z", now: "2024-06-01T00:00:00Z",
			due: false, schedAt: none, next: none,
		},
		{
			name: "custom schedule type, missed runs collapse",
			sched: listSchedule{
				time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC),
				time.Date(2024, 1, 1, 12, 10, 0, 0, time.UTC),
				time.Date(2024, 1, 1, 12, 20, 0, 0, time.UTC),
				time.Date(2024, 1, 1, 12, 30, 0, 0, time.UTC),
			},
			created: "2024-01-01T11:00:00Z", now: "2024-01-01T12:25:00Z",
			due: true, schedAt: "2024-01-01T12:20:00Z", next: "2024-01-01T12:30:00Z",
		},
		{
			name: "custom schedule type, exhausted",
			sched: listSchedule{
				time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC),
			},
			created: "2024-01-01T11:00:00Z", last: "2024-01-01T12:00:01Z", now: "2024-01-01T12:25:00Z",
			due: false, schedAt: none, next: none,
		},
	}
	opt := func(t *testing.T, s string) time.Time {
		if s == none {
			return time.Time{}
		}
		return at(t, s)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sched
			if s == nil {
				s = mustParse(t, tc.expr)
			}
			due, schedAt, next := Decide(s, at(t, tc.created), opt(t, tc.last), at(t, tc.now), tc.deadline)
			if due != tc.due {
				t.Errorf("due = %v, want %v", due, tc.due)
			}
			if want := opt(t, tc.schedAt); !schedAt.Equal(want) {
				t.Errorf("scheduledAt = %s, want %s", schedAt, want)
			}
			if want := opt(t, tc.next); !next.Equal(want) {
				t.Errorf("next = %s, want %s", next, want)
			}
		})
	}
}

// TestDecideMatchesNaiveWalk checks the look-back search for calendar
// schedules against simply walking every firing since the reference.
func TestDecideMatchesNaiveWalk(t *testing.T) {
	tests := []struct {
		expr string
		span time.Duration // longest ref..now gap tried
	}{
		{"* * * * *", 2 * 24 * time.Hour},
		{"*/7 * * * *", 7 * 24 * time.Hour},
		{"0 * * * *", 30 * 24 * time.Hour},
		{"0-5 3 * * *", 30 * 24 * time.Hour},
		{"15 4 * * 0", 60 * 24 * time.Hour},
		{"0 0 1 */3 *", 400 * 24 * time.Hour},
		{"0 0 29 2 *", 3 * 365 * 24 * time.Hour},
	}
	base := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			s := mustParse(t, tc.expr)
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < 50; i++ {
				ref := base.Add(time.Duration(rng.Int63n(int64(90 * 24 * time.Hour))))
				now := ref.Add(time.Duration(rng.Int63n(int64(tc.span))))
				var want time.Time
				for n := s.Next(ref); !n.IsZero() && !n.After(now); n = s.Next(n) {
					want = n
				}
				due, got, _ := Decide(s, ref, time.Time{}, now, 0)
				if !got.Equal(want) || due != !want.IsZero() {
					t.Fatalf("ref %s now %s: due %v scheduledAt %s, want scheduledAt %s", ref, now, due, got, want)
				}
			}
		})
	}
}

// TestSimulateEveryMinute drives Decide and Expired the way a controller
// would: ten minutes of "* * * * *" observed every 7 s, keeping the last 3.
func TestSimulateEveryMinute(t *testing.T) {
	s := mustParse(t, "* * * * *")
	policy := Retention{KeepLast: 3}
	created := time.Date(2024, 1, 1, 11, 59, 30, 0, time.UTC)
	start := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Minute)

	var (
		live     []Backup
		last     time.Time
		perMin   = map[time.Time]int{}
		nCreated int
	)
	for now := start; now.Before(end); now = now.Add(7 * time.Second) {
		due, schedAt, next := Decide(s, created, last, now, 0)
		if !next.After(now) {
			t.Fatalf("at %s: next %s is not after now", now, next)
		}
		if due {
			if lag := now.Sub(schedAt); lag < 0 || lag >= 7*time.Second {
				t.Fatalf("at %s: started %s after the scheduled time %s", now, lag, schedAt)
			}
			live = append(live, Backup{Name: "b-" + now.Format("150405"), Time: now, Complete: true})
			last = now
			perMin[now.Truncate(time.Minute)]++
			nCreated++
		}
		del := map[string]bool{}
		for _, name := range policy.Expired(live, now) {
			del[name] = true
		}
		kept := live[:0]
		for _, b := range live {
			if !del[b.Name] {
				kept = append(kept, b)
			}
		}
		live = kept
		if len(live) > policy.KeepLast {
			t.Fatalf("at %s: %d backups kept, want at most %d", now, len(live), policy.KeepLast)
		}
	}

	if nCreated != 10 {
		t.Errorf("created %d backups, want 10", nCreated)
	}
	for m := start; m.Before(end); m = m.Add(time.Minute) {
		if perMin[m] != 1 {
			t.Errorf("minute %s: %d backups, want 1", m.Format("15:04"), perMin[m])
		}
	}
	if len(live) != 3 {
		t.Fatalf("%d backups remain, want 3: %v", len(live), live)
	}
	for i, want := range []string{"12:07", "12:08", "12:09"} {
		if got := live[i].Time.Format("15:04"); got != want {
			t.Errorf("remaining backup %d from %s, want %s", i, got, want)
		}
	}
}

// TestSpread: a cron schedule is shifted by an offset of its own per key,
// below a tenth of its interval and MaxSpread, the same every time; an
// "@every" schedule is not; a fleet sharing a schedule is spread out.
func TestSpread(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		expr   string
		window time.Duration // 0: not shifted
	}{
		{expr: "0 3 * * *", window: MaxSpread},
		{expr: "@hourly", window: 6 * time.Minute},
		{expr: "*/5 * * * *", window: 30 * time.Second},
		{expr: "* * * * *", window: 6 * time.Second},
		{expr: "@every 1h"},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			seconds := map[time.Duration]bool{}
			for i := range 1000 {
				key := fmt.Sprintf("tenant-%d/etcd", i)
				got := Spread(s, key)
				sh, ok := got.(Shifted)
				if tt.window == 0 {
					if ok {
						t.Fatalf("%s shifted by %v, want not shifted", tt.expr, sh.Offset)
					}
					return
				}
				if !ok || sh.Offset < 0 || sh.Offset >= tt.window || sh.Offset%time.Second != 0 {
					t.Fatalf("%s for %s: %#v, want a whole-second offset below %v", tt.expr, key, got, tt.window)
				}
				if again := Spread(s, key).(Shifted); again.Offset != sh.Offset {
					t.Fatalf("%s for %s: %v then %v", tt.expr, key, sh.Offset, again.Offset)
				}
				seconds[sh.Offset] = true
			}
			// 1000 keys over the window's seconds: most seconds are used.
			if slots := min(int(tt.window/time.Second), 1000); len(seconds) < slots/2 {
				t.Errorf("%s: 1000 keys on %d of %d seconds", tt.expr, len(seconds), slots)
			}
		})
	}
}

// TestDecideShifted: a shifted schedule is due at its shifted times, and
// its last run (stored at its shifted time) counts as such.
func TestDecideShifted(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	const off = 7*time.Minute + 13*time.Second
	sh := Shifted{Schedule: s, Offset: off}
	day := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	at := day.Add(3*time.Hour + off)
	created := day.Add(2 * time.Hour)
	for _, tt := range []struct {
		name         string
		last, now    time.Time
		due          bool
		wantAt, next time.Time
	}{
		{name: "before the shifted time", now: at.Add(-time.Second), next: at},
		{name: "at the shifted time", now: at, due: true, wantAt: at, next: at.Add(24 * time.Hour)},
		{name: "after it, run already", last: at, now: at.Add(time.Hour), next: at.Add(24 * time.Hour)},
		{name: "missed past the deadline", now: at.Add(2 * time.Hour), wantAt: at, next: at.Add(24 * time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			due, gotAt, next := Decide(sh, created, tt.last, tt.now, time.Hour)
			if due != tt.due || !gotAt.Equal(tt.wantAt) || !next.Equal(tt.next) {
				t.Errorf("Decide = %t %v %v, want %t %v %v", due, gotAt, next, tt.due, tt.wantAt, tt.next)
			}
			if n := sh.Next(tt.now); !n.Equal(tt.next) && tt.last.IsZero() && !tt.due && gotAt.IsZero() {
				t.Errorf("Next(%v) = %v, want %v", tt.now, n, tt.next)
			}
		})
	}
}
