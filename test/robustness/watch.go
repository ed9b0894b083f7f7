package robustness

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType is a watch event's kind.
type EventType string

const (
	EventPut    EventType = "put"
	EventDelete EventType = "delete"
)

// WatchEvent is one event as the watch delivered it.
type WatchEvent struct {
	Type        EventType `json:"type"`
	Key         string    `json:"key"`
	Value       string    `json:"value,omitempty"`
	ModRevision int64     `json:"modRevision"`
	// Response numbers the watch response that carried the event; events of
	// one transaction share a revision and arrive in one response.
	Response int `json:"response"`
}

// WatchHistory is what one watch on the prefix saw.
type WatchHistory struct {
	Prefix       string       `json:"prefix"`
	FromRevision int64        `json:"fromRevision"`
	Events       []WatchEvent `json:"events"`
	// Progress is the revision up to which the watch is known to have
	// delivered every event: the highest progress notification or event.
	Progress int64 `json:"progress"`
	// Err is why the watch ended early (compaction, cancellation by the server).
	Err string `json:"err,omitempty"`
}

// Watcher records one watch on a prefix until Stop.
type Watcher struct {
	client *clientv3.Client
	cancel context.CancelFunc
	done   chan struct{}
	// notify gets a token after every response so Stop can wait for progress
	// without polling on a timer.
	notify chan struct{}

	mu      sync.Mutex
	history WatchHistory
}

// Watch starts watching prefix from revision fromRevision, or when it is 0
// from the revision after the current one: started before Run, that covers
// exactly the traffic's writes. The watch uses the given client; give it one of
// its own so that the traffic's faults on other connections do not end it. It
// runs until Stop or until ctx ends. The error is for a failed read of the
// current revision.
func Watch(ctx context.Context, client *clientv3.Client, prefix string, fromRevision int64) (*Watcher, error) {
	if fromRevision <= 0 {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := client.Get(rctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("watch %s: current revision: %w", prefix, err)
		}
		fromRevision = resp.Header.Revision + 1
	}
	// No WithRequireLeader: a member cut off from its peers should stall the
	// watch, not end it, so the watch still covers the run once the fault heals.
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		client: client,
		cancel: cancel,
		done:   make(chan struct{}),
		notify: make(chan struct{}, 1),
		history: WatchHistory{
			Prefix: prefix, FromRevision: fromRevision, Progress: fromRevision - 1,
		},
	}
	ch := client.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRevision), clientv3.WithProgressNotify())
	go w.record(ch)
	return w, nil
}

func (w *Watcher) record(ch clientv3.WatchChan) {
	defer close(w.done)
	n := 0
	for resp := range ch {
		w.mu.Lock()
		if err := resp.Err(); err != nil {
			w.history.Err = err.Error()
			w.mu.Unlock()
			w.wake()
			return
		}
		for _, ev := range resp.Events {
			e := WatchEvent{Key: string(ev.Kv.Key), ModRevision: ev.Kv.ModRevision, Response: n}
			if ev.Type == clientv3.EventTypeDelete {
				e.Type = EventDelete
			} else {
				e.Type = EventPut
				e.Value = string(ev.Kv.Value)
			}
			w.history.Events = append(w.history.Events, e)
			w.history.Progress = max(w.history.Progress, e.ModRevision)
		}
		// Only a progress notification promises that everything up to its
		// header revision was delivered; an event response's header may be ahead
		// of events still to come while the watch catches up.
		if resp.IsProgressNotify() {
			w.history.Progress = max(w.history.Progress, resp.Header.Revision)
		}
		n++
		w.mu.Unlock()
		w.wake()
	}
}

func (w *Watcher) wake() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *Watcher) progress() (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.history.Progress, w.history.Err != ""
}

// Stop waits, at most timeout, until the watch has delivered everything up to
// revision until (typically the final read's revision), then ends the watch
// and returns what it saw. A watch that did not get that far is returned as it
// is: the checker only holds it to what its Progress covers.
func (w *Watcher) Stop(until int64, timeout time.Duration) *WatchHistory {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// Asking again every so often matters only if a request is lost with a
	// broken connection; the answer itself arrives through notify.
	ask := time.NewTicker(500 * time.Millisecond)
	defer ask.Stop()
	request := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.client.RequestProgress(ctx)
	}
	request()
wait:
	for {
		if p, ended := w.progress(); p >= until || ended {
			break
		}
		select {
		case <-w.notify:
		case <-ask.C:
			request()
		case <-deadline.C:
			break wait
		case <-w.done:
			break wait
		}
	}
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history
	h.Events = append([]WatchEvent(nil), w.history.Events...)
	return &h
}

// checkWatch holds the watch to etcd's guarantees and to the history. It
// relies on the traffic being the only writer (see the package doc), so every
// revision after h.StartRevision is one of the history's writes.
func checkWatch(h *History, w *WatchHistory) []string {
	v := checkWatchOrder(h, w)
	v = append(v, checkWatchSources(h, w)...)
	return append(v, checkWatchDelivery(h, w)...)
}

// checkWatchOrder: revisions only go forward, and none of ours is skipped.
func checkWatchOrder(h *History, w *WatchHistory) []string {
	var v []string
	report := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	expected := max(w.FromRevision, h.StartRevision+1)
	for i, e := range w.Events {
		if i > 0 {
			prev := w.Events[i-1]
			switch {
			case e.ModRevision < prev.ModRevision:
				report("revision went back from %d to %d (event %d, %s)", prev.ModRevision, e.ModRevision, i, e.Key)
			case e.ModRevision == prev.ModRevision && e.Response != prev.Response:
				report("revision %d delivered twice (event %d, %s)", e.ModRevision, i, e.Key)
			}
		}
		if e.ModRevision < w.FromRevision {
			report("event at revision %d before the watch's start revision %d", e.ModRevision, w.FromRevision)
		}
		if e.ModRevision > expected {
			report("gap: revisions %d to %d missing before event %d (%s at %d)", expected, e.ModRevision-1, i, e.Key, e.ModRevision)
		}
		expected = max(expected, e.ModRevision+1)
	}
	if w.Progress >= expected {
		report("gap: progress reached revision %d but revisions %d to %d were never delivered", w.Progress, expected, w.Progress)
	}
	return v
}

// checkWatchSources: every event after the history's start comes from a
// write of the history, at the revision etcd acknowledged.
func checkWatchSources(h *History, w *WatchHistory) []string {
	var v []string
	report := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	byValue := map[string]Operation{}
	for _, op := range h.Operations {
		if op.writesValue() {
			byValue[op.Request.Key+"\x00"+op.Request.Value] = op
		}
	}
	for _, e := range w.Events {
		if e.ModRevision <= h.StartRevision {
			continue
		}
		switch e.Type {
		case EventPut:
			op, ok := byValue[e.Key+"\x00"+e.Value]
			switch {
			case !ok:
				report("put %s=%s at revision %d was written by no operation", e.Key, e.Value, e.ModRevision)
			case op.Indeterminate:
			case !op.Acked():
				report("put %s=%s at revision %d comes from a txn that answered it failed", e.Key, e.Value, e.ModRevision)
			case op.Response.Revision != e.ModRevision:
				report("put %s=%s at revision %d was acknowledged at revision %d", e.Key, e.Value, e.ModRevision, op.Response.Revision)
			}
		case EventDelete:
			if !deleteExplained(h, e) {
				report("delete of %s at revision %d matches no delete operation", e.Key, e.ModRevision)
			}
		}
	}
	return v
}

// deleteExplained says whether a delete operation of the history may have
// made the delete event e.
func deleteExplained(h *History, e WatchEvent) bool {
	for _, op := range h.Operations {
		if op.Request.Kind == OpDelete && op.Request.Key == e.Key &&
			(op.Indeterminate || (op.Acked() && op.Response.Revision == e.ModRevision)) {
			return true
		}
	}
	return false
}

// checkWatchDelivery: every acknowledged write the watch got as far as is
// among its events, as written.
func checkWatchDelivery(h *History, w *WatchHistory) []string {
	var v []string
	report := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	type kr struct {
		key string
		rev int64
	}
	events := map[kr]WatchEvent{}
	for _, e := range w.Events {
		events[kr{e.Key, e.ModRevision}] = e
	}
	for _, op := range h.Operations {
		rev := op.Response.Revision
		if !op.Acked() || rev < w.FromRevision || rev > w.Progress {
			continue
		}
		e, ok := events[kr{op.Request.Key, rev}]
		switch {
		case !ok:
			report("acknowledged %s not delivered although the watch reached revision %d", op, w.Progress)
		case op.Request.Kind == OpDelete && e.Type != EventDelete:
			report("acknowledged %s delivered as a put of %s", op, e.Value)
		case op.Request.Kind != OpDelete && (e.Type != EventPut || e.Value != op.Request.Value):
			report("acknowledged %s delivered as %s %s", op, e.Type, e.Value)
		}
	}
	return v
}
