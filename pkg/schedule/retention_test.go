package schedule

import (
	"reflect"
	"testing"
	"time"
)

func TestExpired(t *testing.T) {
	now := time.Date(2024, 1, 10, 12, 0, 0, 0, time.UTC)
	ago := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	ok := func(name string, h int) Backup { return Backup{Name: name, Time: ago(h), Complete: true} }
	bad := func(name string, h int) Backup { return Backup{Name: name, Time: ago(h), Failed: true} }
	run := func(name string, h int) Backup { return Backup{Name: name, Time: ago(h)} }

	tests := []struct {
		name    string
		policy  Retention
		backups []Backup
		want    []string
	}{
		{
			name:   "empty input",
			policy: Retention{KeepLast: 3, MaxAge: time.Hour},
		},
		{
			name:    "no limits keeps every complete backup",
			backups: []Backup{ok("a", 50), ok("b", 40), ok("c", 30)},
		},
		{
			name:    "keep last N",
			policy:  Retention{KeepLast: 3},
			backups: []Backup{ok("a", 50), ok("b", 40), ok("c", 30), ok("d", 20), ok("e", 10)},
			want:    []string{"a", "b"},
		},
		{
			name:    "keep last N with fewer backups",
			policy:  Retention{KeepLast: 3},
			backups: []Backup{ok("a", 50), ok("b", 40)},
		},
		{
			name:    "keep last 1",
			policy:  Retention{KeepLast: 1},
			backups: []Backup{ok("a", 50), ok("b", 40), ok("c", 30)},
			want:    []string{"a", "b"},
		},
		{
			name:    "negative KeepLast means no count limit",
			policy:  Retention{KeepLast: -1},
			backups: []Backup{ok("a", 50), ok("b", 40), ok("c", 30)},
		},
		{
			name:    "max age",
			policy:  Retention{MaxAge: 24 * time.Hour},
			backups: []Backup{ok("a", 72), ok("b", 48), ok("c", 25), ok("d", 24), ok("e", 1)},
			want:    []string{"a", "b", "c"},
		},
		{
			name:    "both limits, count is stricter",
			policy:  Retention{KeepLast: 2, MaxAge: 48 * time.Hour},
			backups: []Backup{ok("a", 100), ok("b", 47), ok("c", 30), ok("d", 20)},
			want:    []string{"a", "b"},
		},
		{
			name:    "both limits, age is stricter",
			policy:  Retention{KeepLast: 5, MaxAge: 24 * time.Hour},
			backups: []Backup{ok("a", 100), ok("b", 50), ok("c", 30), ok("d", 20), ok("e", 1)},
			want:    []string{"a", "b", "c"},
		},
		{
			name:    "never the newest complete even if too old",
			policy:  Retention{MaxAge: time.Hour},
			backups: []Backup{ok("a", 72), ok("b", 48)},
			want:    []string{"a"},
		},
		{
			name:    "single complete backup too old is kept",
			policy:  Retention{KeepLast: 1, MaxAge: time.Hour},
			backups: []Backup{ok("a", 1000)},
		},
		{
			name:    "failed older than the newest complete are deleted",
			backups: []Backup{bad("f1", 50), ok("a", 40), bad("f2", 30), ok("b", 20), bad("f3", 10)},
			want:    []string{"f1", "f2"},
		},
		{
			name:    "failed at the same time as the newest complete are kept",
			backups: []Backup{ok("a", 20), bad("f", 20)},
		},
		{
			name:    "at most 3 failed are kept",
			backups: []Backup{bad("f1", 50), bad("f2", 40), bad("f3", 30), bad("f4", 20), bad("f5", 10)},
			want:    []string{"f1", "f2"},
		},
		{
			name:    "3 failed and nothing complete are kept",
			backups: []Backup{bad("f1", 30), bad("f2", 20), bad("f3", 10)},
		},
		{
			name:   "failed after the newest complete, capped at 3",
			policy: Retention{KeepLast: 1},
			backups: []Backup{
				bad("f0", 90), ok("a", 80), bad("f1", 50), bad("f2", 40), bad("f3", 30), bad("f4", 20),
			},
			want: []string{"f0", "f1"},
		},
		{
			name:    "failed backups ignore MaxAge and KeepLast",
			policy:  Retention{KeepLast: 1, MaxAge: time.Hour},
			backups: []Backup{ok("a", 100), bad("f1", 90), bad("f2", 80)},
		},
		{
			name:    "complete and failed both set counts as failed",
			policy:  Retention{KeepLast: 1},
			backups: []Backup{ok("a", 50), {Name: "x", Time: ago(10), Complete: true, Failed: true}},
		},
		{
			name:    "complete and failed both set is not a restore point",
			policy:  Retention{KeepLast: 1},
			backups: []Backup{{Name: "x", Time: ago(60), Complete: true, Failed: true}, ok("a", 50), ok("b", 40)},
			want:    []string{"x", "a"},
		},
		{
			name:   "running backups are untouched",
			policy: Retention{KeepLast: 1, MaxAge: time.Hour},
			backups: []Backup{
				run("r1", 100), ok("a", 90), run("r2", 80), ok("b", 70), run("r3", 1),
			},
			want: []string{"a"},
		},
		{
			name:    "only running backups",
			policy:  Retention{KeepLast: 1, MaxAge: time.Hour},
			backups: []Backup{run("r1", 100), run("r2", 80), run("r3", 70), run("r4", 60), run("r5", 50)},
		},
		{
			name:   "output is oldest first whatever the input order",
			policy: Retention{KeepLast: 2},
			backups: []Backup{
				ok("e", 10), bad("f1", 60), ok("a", 50), ok("d", 20), bad("f2", 15), ok("b", 40), ok("c", 30),
			},
			want: []string{"f1", "a", "b", "c", "f2"},
		},
		{
			name:   "ties on time are ordered by name",
			policy: Retention{KeepLast: 1},
			backups: []Backup{
				ok("c", 10), ok("a", 10), ok("b", 10),
			},
			want: []string{"a", "b"},
		},
		{
			name:   "ties on time, failed ordered by name",
			policy: Retention{},
			backups: []Backup{
				bad("f5", 10), bad("f3", 10), bad("f1", 10), bad("f4", 10), bad("f2", 10),
			},
			want: []string{"f1", "f2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]Backup(nil), tc.backups...)
			got := tc.policy.Expired(in, now)
			if len(got) != 0 || len(tc.want) != 0 {
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Expired() = %q, want %q", got, tc.want)
				}
			}
			if !reflect.DeepEqual(in, tc.backups) {
				t.Errorf("Expired() modified its input: %v, was %v", in, tc.backups)
			}
		})
	}
}
