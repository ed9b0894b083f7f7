package robustness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Histories below start from a fresh etcd: revision 1, no keys.

func put(client int, call, ret int64, key, value string, rev int64) Operation {
	return Operation{Client: client, Call: call, Return: ret,
		Request:  Request{Kind: OpPut, Key: key, Value: value},
		Response: Response{Revision: rev}}
}

func unknownPut(client int, call, ret int64, key, value string) Operation {
	return Operation{Client: client, Call: call, Return: ret,
		Request: Request{Kind: OpPut, Key: key, Value: value}, Indeterminate: true, Error: "context deadline exceeded"}
}

// get with value "" reads a missing key.
func get(client int, call, ret int64, key, value string, modRev, rev int64) Operation {
	op := Operation{Client: client, Call: call, Return: ret,
		Request: Request{Kind: OpGet, Key: key}, Response: Response{Revision: rev}}
	if value != "" {
		op.Response.Found, op.Response.KV = true, KV{Value: value, ModRevision: modRev}
	}
	return op
}

func del(client int, call, ret int64, key string, deleted, rev int64) Operation {
	return Operation{Client: client, Call: call, Return: ret,
		Request: Request{Kind: OpDelete, Key: key}, Response: Response{Revision: rev, Deleted: deleted}}
}

// casMod compares key's mod revision with expected and puts value when equal;
// a failed one answers the key as it found it (value "" for missing).
func casMod(client int, call, ret int64, key string, expected int64, value string, ok bool, found KV, rev int64) Operation {
	return Operation{Client: client, Call: call, Return: ret,
		Request:  Request{Kind: OpTxn, Key: key, Value: value, Compare: CompareModRevision, ExpectedModRevision: expected},
		Response: Response{Revision: rev, Succeeded: ok, Found: !ok && found.Value != "", KV: found}}
}

func casValue(client int, call, ret int64, key, expected, value string, ok bool, found KV, rev int64) Operation {
	op := casMod(client, call, ret, key, 0, value, ok, found, rev)
	op.Request.Compare, op.Request.ExpectedValue = CompareValue, expected
	return op
}

func history(ops ...Operation) *History {
	return &History{Prefix: "/p/", StartRevision: 1, Clients: 4, Operations: ops}
}

func final(rev int64, kvs map[string]KV) *FinalState {
	if kvs == nil {
		kvs = map[string]KV{}
	}
	return &FinalState{Revision: rev, KVs: kvs}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		history     *History
		final       *FinalState
		watch       *WatchHistory
		want        Linearizability
		wantLost    int
		wantWatch   int
		wantDropped int
	}{
		{
			name: "clean sequential history",
			history: history(
				put(0, 0, 10, "a", "v1", 2),
				get(1, 11, 20, "a", "v1", 2, 2),
				put(2, 21, 30, "b", "v2", 3),
				del(3, 31, 40, "a", 1, 4),
				get(0, 41, 50, "a", "", 0, 4),
				casMod(1, 51, 60, "b", 3, "v3", true, KV{}, 5),
				casValue(2, 61, 70, "b", "v2", "v4", false, KV{"v3", 5}, 5),
				del(3, 71, 80, "a", 0, 5),
				casMod(0, 81, 90, "c", 0, "v5", true, KV{}, 6),
				casValue(1, 91, 100, "d", "", "v6", false, KV{}, 6),
			),
			final: final(6, map[string]KV{"b": {"v3", 5}, "c": {"v5", 6}}),
			want:  Linearizable,
		},
		{
			name: "concurrent writes and reads in a legal order",
			history: history(
				put(0, 0, 100, "a", "x", 2),
				put(1, 10, 90, "a", "y", 3),
				get(2, 20, 30, "a", "x", 2, 2),
				get(3, 50, 120, "a", "y", 3, 3),
				get(2, 40, 60, "b", "", 0, 3),
			),
			final: final(3, map[string]KV{"a": {"y", 3}}),
			want:  Linearizable,
		},
		{
			name: "stale read after an acknowledged write returned",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "a", "y", 3),
				get(2, 40, 50, "a", "x", 2, 2),
			),
			final: final(3, map[string]KV{"a": {"y", 3}}),
			want:  NotLinearizable,
		},
		{
			name: "stale value under the current revision",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "a", "y", 3),
				get(2, 40, 50, "a", "x", 2, 3),
			),
			final: final(3, map[string]KV{"a": {"y", 3}}),
			want:  NotLinearizable,
		},
		{
			name: "acknowledged write missing from the final read",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "b", "y", 3),
			),
			final:    final(3, map[string]KV{"b": {"y", 3}}),
			want:     NotLinearizable,
			wantLost: 1,
		},
		{
			name: "acknowledged write overwritten by an earlier one in the final read",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "a", "y", 3),
			),
			final:    final(3, map[string]KV{"a": {"x", 2}}),
			want:     NotLinearizable,
			wantLost: 1,
		},
		{
			name: "acknowledged delete undone in the final read",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				del(1, 20, 30, "a", 1, 3),
			),
			final:    final(3, map[string]KV{"a": {"x", 2}}),
			want:     NotLinearizable,
			wantLost: 1,
		},
		{
			name: "indeterminate write that took effect",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				unknownPut(1, 20, 30, "a", "y"),
				get(2, 40, 50, "a", "y", 3, 3),
				put(3, 60, 70, "b", "z", 4),
			),
			final: final(4, map[string]KV{"a": {"y", 3}, "b": {"z", 4}}),
			want:  Linearizable,
		},
		{
			name: "indeterminate write that did not take effect",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				unknownPut(1, 20, 30, "a", "y"),
				get(2, 40, 50, "a", "x", 2, 2),
				put(3, 60, 70, "b", "z", 3),
			),
			final: final(3, map[string]KV{"a": {"x", 2}, "b": {"z", 3}}),
			want:  Linearizable,
		},
		{
			name: "indeterminate write that took effect after the client gave up",
			history: history(
				unknownPut(1, 0, 10, "a", "y"),
				get(2, 20, 30, "a", "", 0, 1),
				get(2, 40, 50, "a", "y", 2, 2),
			),
			final: final(2, map[string]KV{"a": {"y", 2}}),
			want:  Linearizable,
		},
		{
			name: "indeterminate write read before it was called",
			history: history(
				get(2, 0, 10, "a", "y", 2, 2),
				unknownPut(1, 20, 30, "a", "y"),
			),
			final: final(2, map[string]KV{"a": {"y", 2}}),
			want:  NotLinearizable,
		},
		{
			name: "indeterminate writes settled by the watch",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				unknownPut(1, 20, 30, "a", "y"),
				unknownPut(2, 20, 30, "b", "z"),
				get(3, 40, 50, "a", "y", 3, 3),
			),
			final: final(3, map[string]KV{"a": {"y", 3}}),
			watch: &WatchHistory{FromRevision: 2, Progress: 3, Events: []WatchEvent{
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 2, Response: 0},
				{Type: EventPut, Key: "a", Value: "y", ModRevision: 3, Response: 1},
			}},
			want:        Linearizable,
			wantDropped: 1,
		},
		{
			name: "watch started late settles nothing it could not see",
			history: history(
				unknownPut(1, 0, 10, "b", "z"),
				put(0, 20, 30, "a", "x", 3),
				get(2, 40, 50, "b", "z", 2, 3),
			),
			final: final(3, map[string]KV{"a": {"x", 3}, "b": {"z", 2}}),
			watch: &WatchHistory{FromRevision: 3, Progress: 3, Events: []WatchEvent{
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 3, Response: 0},
			}},
			want: Linearizable,
		},
		{
			name: "compare-and-set on mod revision succeeded when it should have failed",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "a", "y", 3),
				casMod(2, 40, 50, "a", 2, "z", true, KV{}, 4),
			),
			final: final(4, map[string]KV{"a": {"z", 4}}),
			want:  NotLinearizable,
		},
		{
			name: "compare-and-set on value succeeded when it should have failed",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "a", "y", 3),
				casValue(2, 40, 50, "a", "x", "z", true, KV{}, 4),
			),
			final: final(4, map[string]KV{"a": {"z", 4}}),
			want:  NotLinearizable,
		},
		{
			name: "delete of a missing key that advanced the revision",
			history: history(
				del(0, 0, 10, "a", 0, 2),
			),
			final: final(1, nil),
			want:  NotLinearizable,
		},
		{
			name: "watch consistent with the history",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "b", "y", 3),
				del(2, 40, 50, "a", 1, 4),
			),
			final: final(4, map[string]KV{"b": {"y", 3}}),
			watch: &WatchHistory{FromRevision: 2, Progress: 4, Events: []WatchEvent{
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 2, Response: 0},
				{Type: EventPut, Key: "b", Value: "y", ModRevision: 3, Response: 1},
				{Type: EventDelete, Key: "a", ModRevision: 4, Response: 2},
			}},
			want: Linearizable,
		},
		{
			name: "watch revision going back",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "b", "y", 3),
			),
			final: final(3, map[string]KV{"a": {"x", 2}, "b": {"y", 3}}),
			watch: &WatchHistory{FromRevision: 2, Progress: 3, Events: []WatchEvent{
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 2, Response: 0},
				{Type: EventPut, Key: "b", Value: "y", ModRevision: 3, Response: 1},
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 2, Response: 2},
			}},
			want:      Linearizable,
			wantWatch: 1,
		},
		{
			name: "watch gap",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "b", "y", 3),
				put(2, 40, 50, "c", "z", 4),
			),
			final: final(4, map[string]KV{"a": {"x", 2}, "b": {"y", 3}, "c": {"z", 4}}),
			watch: &WatchHistory{FromRevision: 2, Progress: 4, Events: []WatchEvent{
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 2, Response: 0},
				{Type: EventPut, Key: "c", Value: "z", ModRevision: 4, Response: 1},
			}},
			want: Linearizable,
			// The skipped revision, and the acknowledged put it held.
			wantWatch: 2,
		},
		{
			name: "watch event at another revision than acknowledged",
			history: history(
				put(0, 0, 10, "a", "x", 2),
				put(1, 20, 30, "b", "y", 3),
			),
			final: final(3, map[string]KV{"a": {"x", 2}, "b": {"y", 3}}),
			watch: &WatchHistory{FromRevision: 2, Progress: 3, Events: []WatchEvent{
				{Type: EventPut, Key: "b", Value: "y", ModRevision: 2, Response: 0},
				{Type: EventPut, Key: "a", Value: "x", ModRevision: 3, Response: 1},
			}},
			want:      Linearizable,
			wantWatch: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Check(tt.history, tt.final, CheckConfig{Timeout: 10 * time.Second, Watch: tt.watch})
			if r.Linearizable != tt.want {
				t.Errorf("linearizable = %s, want %s", r.Linearizable, tt.want)
			}
			if len(r.LostWrites) != tt.wantLost {
				t.Errorf("lost writes = %v, want %d", r.LostWrites, tt.wantLost)
			}
			if len(r.WatchViolations) != tt.wantWatch {
				t.Errorf("watch violations = %q, want %d", r.WatchViolations, tt.wantWatch)
			}
			if r.Counts.DroppedByWatch != tt.wantDropped {
				t.Errorf("dropped by watch = %d, want %d", r.Counts.DroppedByWatch, tt.wantDropped)
			}
			wantOK := tt.want == Linearizable && tt.wantLost == 0 && tt.wantWatch == 0
			if r.OK() != wantOK {
				t.Errorf("OK() = %t, want %t", r.OK(), wantOK)
			}
			if t.Failed() {
				t.Log(r)
			}
		})
	}
}

func TestCheckWithoutFinalRead(t *testing.T) {
	t.Parallel()
	r := Check(history(put(0, 0, 10, "a", "x", 2), get(1, 20, 30, "a", "x", 2, 2)), nil, CheckConfig{})
	if r.Linearizable != Linearizable || r.FinalChecked || !r.OK() {
		t.Errorf("got %s", r)
	}
	if !strings.Contains(r.String(), "no final read") {
		t.Errorf("summary does not say the final read is missing: %s", r)
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	h := history(
		put(0, 0, 10, "a", "x", 2),
		get(1, 11, 20, "a", "x", 2, 2),
		unknownPut(2, 21, 30, "b", "y"),
		casMod(3, 31, 40, "a", 7, "z", false, KV{"x", 2}, 2),
	)
	h.FailedReads, h.RejectedWrites = 2, 1
	got := Check(h, nil, CheckConfig{}).Counts
	want := Counts{Operations: 4, Reads: 1, Writes: 3, Acked: 1, Indeterminate: 1, Failed: 3}
	if got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
}

func TestResultWrite(t *testing.T) {
	t.Parallel()
	h := history(
		put(0, 0, 10, "a", "x", 2),
		put(1, 20, 30, "a", "y", 3),
		get(2, 40, 50, "a", "x", 2, 2),
		unknownPut(3, 5, 15, "b", "z"),
	)
	fin := final(3, map[string]KV{"a": {"y", 3}})
	watch := &WatchHistory{FromRevision: 2, Progress: 3, Events: []WatchEvent{
		{Type: EventPut, Key: "a", Value: "x", ModRevision: 2},
		{Type: EventPut, Key: "a", Value: "y", ModRevision: 3, Response: 1},
	}}
	r := Check(h, fin, CheckConfig{Watch: watch})
	if r.OK() {
		t.Fatalf("stale read passed: %s", r)
	}
	dir := filepath.Join(t.TempDir(), "stale-read")
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{VisualizationFile, HistoryFile, ResultFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", f)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, VisualizationFile))
	if !strings.Contains(string(html), "final read") {
		t.Errorf("visualization does not show the final read")
	}

	h2, fin2, watch2, err := ReadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	again := Check(h2, fin2, CheckConfig{Watch: watch2})
	if again.Linearizable != r.Linearizable || len(again.WatchViolations) != len(r.WatchViolations) || again.Counts != r.Counts {
		t.Errorf("history read back checks differently: %s\nwas: %s", again, r)
	}
}

// TestCheckTimeout gives porcupine a history whose search space is every
// subset of 20 concurrent indeterminate writes (the final read matches none of
// them) and a bound far too short to go through it.
func TestCheckTimeout(t *testing.T) {
	t.Parallel()
	var ops []Operation
	for i := range 20 {
		ops = append(ops, unknownPut(i, 0, 10, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i)))
	}
	r := Check(history(ops...), final(2, map[string]KV{"k00": {"other", 2}}), CheckConfig{Timeout: 50 * time.Millisecond})
	if r.Linearizable != CheckTimedOut {
		t.Fatalf("linearizable = %s, want %s", r.Linearizable, CheckTimedOut)
	}
	if r.OK() {
		t.Error("a check that timed out counts as passed")
	}
	if r.CheckDuration > 5*time.Second {
		t.Errorf("check ran %s past its 50ms bound", r.CheckDuration)
	}
}
