package robustness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// DefaultCheckTimeout bounds porcupine's search. Linearizability checking is
// NP-hard; a history with many indeterminate writes can take longer than a
// test should, and is then reported as Unknown rather than hanging the test.
const DefaultCheckTimeout = 30 * time.Second

// Linearizability is porcupine's verdict.
type Linearizability string

const (
	// Linearizable: porcupine found an order of all operations that the model accepts.
	Linearizable Linearizability = "Ok"
	// NotLinearizable: no such order exists; the visualization shows the longest partial ones.
	NotLinearizable Linearizability = "Illegal"
	// CheckTimedOut: the search ran out of time; nothing was proven either way.
	CheckTimedOut Linearizability = "Unknown"
)

// CheckConfig tunes Check.
type CheckConfig struct {
	// Timeout bounds porcupine's search; DefaultCheckTimeout when zero.
	Timeout time.Duration
	// Watch, when set, is checked against the history and used to resolve
	// indeterminate writes before porcupine runs: a write whose unique value
	// the watch saw took effect at that event's revision, and one it did not
	// see, although the watch got as far as the final read, never did.
	Watch *WatchHistory
}

// LostWrite is an acknowledged write that the final read contradicts.
type LostWrite struct {
	Operation Operation `json:"operation"`
	Reason    string    `json:"reason"`
}

// Counts summarises a history.
type Counts struct {
	// Operations is every recorded operation (failed reads are not recorded).
	Operations int `json:"operations"`
	Reads      int `json:"reads"`
	Writes     int `json:"writes"`
	// Acked writes changed the store by etcd's own answer.
	Acked int `json:"acked"`
	// Indeterminate writes may or may not have taken effect.
	Indeterminate int `json:"indeterminate"`
	// ResolvedByWatch and DroppedByWatch are indeterminate writes that the
	// watch showed did, or did not, take effect.
	ResolvedByWatch int `json:"resolvedByWatch"`
	DroppedByWatch  int `json:"droppedByWatch"`
	// Failed is failed reads plus writes that were definitely refused.
	Failed int `json:"failed"`
}

// Result is the verdict on one history.
type Result struct {
	Linearizable Linearizability `json:"linearizable"`
	// CheckTimeout is the bound the search ran under and CheckDuration how
	// long it took.
	CheckTimeout  time.Duration `json:"checkTimeout"`
	CheckDuration time.Duration `json:"checkDuration"`
	// FinalChecked is false when Check had no final read, so no write could be
	// found lost and the watch could not resolve indeterminate writes as not
	// applied.
	FinalChecked    bool        `json:"finalChecked"`
	LostWrites      []LostWrite `json:"lostWrites,omitempty"`
	WatchChecked    bool        `json:"watchChecked"`
	WatchViolations []string    `json:"watchViolations,omitempty"`
	Counts          Counts      `json:"counts"`

	history *History
	final   *FinalState
	watch   *WatchHistory
	model   porcupine.Model
	info    porcupine.LinearizationInfo
	checked bool
}

// OK reports whether the history was proven linearizable and nothing else was
// found. A timed-out check is not OK: it proves nothing.
func (r *Result) OK() bool {
	return r.Linearizable == Linearizable && len(r.LostWrites) == 0 && len(r.WatchViolations) == 0
}

// String is a one-paragraph summary for a test log.
func (r *Result) String() string {
	var b strings.Builder
	c := r.Counts
	fmt.Fprintf(&b, "linearizable=%s (checked in %s, bound %s); %d ops: %d reads, %d writes (%d acked, %d indeterminate: %d resolved and %d dropped by the watch), %d failed",
		r.Linearizable, r.CheckDuration.Round(time.Millisecond), r.CheckTimeout, c.Operations, c.Reads, c.Writes, c.Acked,
		c.Indeterminate, c.ResolvedByWatch, c.DroppedByWatch, c.Failed)
	if !r.FinalChecked {
		b.WriteString("; no final read, lost writes not checked")
	}
	for _, l := range r.LostWrites {
		fmt.Fprintf(&b, "\nlost write: %s: %s", l.Operation, l.Reason)
	}
	if !r.WatchChecked {
		b.WriteString("; no watch")
	}
	for _, v := range r.WatchViolations {
		fmt.Fprintf(&b, "\nwatch: %s", v)
	}
	return b.String()
}

// Check decides whether h is linearizable, whether the final read lost an
// acknowledged write, and whether the watch kept etcd's guarantees. final may
// be nil when no final read could be made; the result says so.
func Check(h *History, final *FinalState, cfg CheckConfig) *Result {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultCheckTimeout
	}
	r := &Result{
		CheckTimeout: cfg.Timeout,
		FinalChecked: final != nil,
		WatchChecked: cfg.Watch != nil,
		Counts:       countOperations(h),
		history:      h,
		final:        final,
		watch:        cfg.Watch,
		model:        kvModel(h.StartRevision, h.Initial),
	}
	if final != nil {
		r.LostWrites = findLostWrites(h, final)
	}
	if cfg.Watch != nil {
		r.WatchViolations = checkWatch(h, cfg.Watch)
	}
	ops := porcupineOperations(h, final, cfg.Watch, &r.Counts)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(r.model, ops, cfg.Timeout)
	r.CheckDuration = time.Since(start)
	r.Linearizable = Linearizability(res)
	r.info = info
	r.checked = true
	return r
}

func countOperations(h *History) Counts {
	c := Counts{Operations: len(h.Operations), Failed: h.FailedReads + h.RejectedWrites}
	for _, op := range h.Operations {
		switch {
		case !op.IsWrite():
			c.Reads++
		case op.Indeterminate:
			c.Writes++
			c.Indeterminate++
		default:
			c.Writes++
			if op.Acked() {
				c.Acked++
			}
		}
	}
	return c
}

// porcupineOperations turns the history into porcupine's form. Each
// indeterminate write gets a lane of its own (so the client's next operations
// do not look concurrent with it in the picture) and returns after everything
// else, which is how porcupine models a call that may take effect at any time
// after it was made. The final read goes after every completed operation.
func porcupineOperations(h *History, final *FinalState, w *WatchHistory, counts *Counts) []porcupine.Operation {
	seen, watchComplete := watchedPuts(h, final, w)
	var end int64
	for _, op := range h.Operations {
		end = max(end, op.Return)
	}
	lanes := max(h.Clients, 1)
	for _, op := range h.Operations {
		lanes = max(lanes, op.Client+1)
	}
	ops := make([]porcupine.Operation, 0, len(h.Operations)+1)
	var pending []porcupine.Operation
	for _, op := range h.Operations {
		if !op.Indeterminate {
			ops = append(ops, porcupine.Operation{
				ClientId: op.Client, Input: op.Request, Call: op.Call, Return: op.Return,
				Output: modelOutput{Response: op.Response},
			})
			continue
		}
		out := modelOutput{Unknown: true}
		meta := op.Error
		if w != nil && op.writesValue() {
			if rev, ok := seen[op.Request.Key+"\x00"+op.Request.Value]; ok {
				out = modelOutput{Response: Response{Revision: rev, Succeeded: true}}
				meta = fmt.Sprintf("%s; seen by the watch at revision %d", op.Error, rev)
				counts.ResolvedByWatch++
			} else if watchComplete {
				counts.DroppedByWatch++
				continue
			}
		}
		pending = append(pending, porcupine.Operation{
			ClientId: lanes + len(pending), Input: op.Request, Call: op.Call, Output: out, Metadata: meta,
		})
	}
	finalLane := lanes + len(pending)
	horizon := end + 3
	if final != nil {
		ops = append(ops, porcupine.Operation{
			ClientId: finalLane, Input: Request{Kind: OpRange, Key: h.Prefix},
			Call: end + 1, Return: end + 2,
			Output:   modelOutput{Response: Response{Revision: final.Revision, KVs: final.KVs}},
			Metadata: "final read",
		})
	}
	for i := range pending {
		pending[i].Return = horizon
	}
	return append(ops, pending...)
}

// watchedPuts are the revisions the watch saw each put (key and value) at,
// and whether the watch covered every revision from the traffic's first one
// to the final read: only then does a put's absence prove something.
func watchedPuts(h *History, final *FinalState, w *WatchHistory) (map[string]int64, bool) {
	seen := map[string]int64{}
	if w == nil {
		return seen, false
	}
	for _, e := range w.Events {
		if e.Type == EventPut {
			seen[e.Key+"\x00"+e.Value] = e.ModRevision
		}
	}
	return seen, final != nil && w.FromRevision <= h.StartRevision+1 && w.Progress >= final.Revision
}

// findLostWrites checks, without porcupine, that the final read agrees with
// every acknowledged write: its key holds its value, or one written by a later
// write (acknowledged at a higher revision, or indeterminate), or was deleted
// by a later delete.
func findLostWrites(h *History, final *FinalState) []LostWrite {
	byValue := map[string]Operation{}
	var deletes []Operation
	for _, op := range h.Operations {
		switch {
		case op.writesValue():
			byValue[op.Request.Key+"\x00"+op.Request.Value] = op
		case op.Request.Kind == OpDelete:
			deletes = append(deletes, op)
		}
	}
	laterDelete := func(key string, rev int64) bool {
		return slices.ContainsFunc(deletes, func(d Operation) bool {
			return d.Request.Key == key && (d.Indeterminate || (d.Acked() && d.Response.Revision > rev))
		})
	}

	var lost []LostWrite
	for _, op := range h.Operations {
		if !op.Acked() {
			continue
		}
		key, rev := op.Request.Key, op.Response.Revision
		kv, found := final.KVs[key]
		if op.Request.Kind == OpDelete {
			if found && kv.ModRevision <= rev {
				lost = append(lost, LostWrite{op, fmt.Sprintf("the key is back with %s at mod revision %d, not after the delete", kv.Value, kv.ModRevision)})
			}
			continue
		}
		if !found {
			if !laterDelete(key, rev) {
				lost = append(lost, LostWrite{op, "the key is missing and no later delete explains it"})
			}
			continue
		}
		if kv.Value == op.Request.Value {
			if kv.ModRevision != rev {
				lost = append(lost, LostWrite{op, fmt.Sprintf("the value is there at mod revision %d, acknowledged at %d", kv.ModRevision, rev)})
			}
			continue
		}
		if kv.ModRevision <= rev {
			lost = append(lost, LostWrite{op, fmt.Sprintf("the key holds %s from mod revision %d, not after this write", kv.Value, kv.ModRevision)})
			continue
		}
		other, ok := byValue[key+"\x00"+kv.Value]
		switch {
		case !ok:
			lost = append(lost, LostWrite{op, fmt.Sprintf("the key holds %s, which no operation wrote", kv.Value)})
		case other.Indeterminate:
			// It may have taken effect after this write.
		case !other.Acked():
			lost = append(lost, LostWrite{op, fmt.Sprintf("the key holds %s, written by a txn that answered it failed", kv.Value)})
		case other.Response.Revision <= rev:
			lost = append(lost, LostWrite{op, fmt.Sprintf("the key holds %s, acknowledged at revision %d, before this write", kv.Value, other.Response.Revision)})
		}
	}
	return lost
}
