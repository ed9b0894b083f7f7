// Package robustness records client traffic against an etcd cluster and checks
// it: the evidence behind "no acknowledged write is lost through a membership
// change, rollout or repair". Fault scenarios (test/e2e) drive it; nothing here
// needs a cluster except the test that runs traffic against a local etcd.
//
// # What is recorded
//
// Run starts several workers, each with its own client, that put, delete,
// read one key linearizably, and compare-and-set one key on its mod revision
// or value, over a small key space under a fresh prefix. Every value written
// is unique (worker and sequence number), so a value read or watched names the
// write that made it. Each operation is kept with the worker's call and return
// times, taken from one monotonic start instant, and etcd's answer including
// the header revision. Watch follows the prefix from the run's first revision
// and keeps every event. ReadFinal reads the whole prefix at the end.
//
// # Indeterminate writes
//
// A write that ended in an error that does not prove it was refused (timeout,
// Unavailable, a broken connection) is kept as indeterminate: it may have
// taken effect, at any moment after its call, even after the run ended. The
// checker gives it porcupine's treatment for such calls: it returns after
// every other operation and the model accepts any answer from it, so porcupine
// may place it anywhere from its call onwards, where it applies, or at the
// very end, where it is as if it never happened. Before that, the watch
// settles what it can: a write whose value the watch saw took effect at that
// event's revision; one it did not see, although the watch got as far as the
// final read, never did. Failed reads are dropped: they changed nothing.
//
// # What the checker proves
//
// The model is etcd's KV with its global revision: writes advance it by one
// (a delete that removes nothing and a compare-and-set whose compare fails do
// not), every answer's header revision must match, and reads must return the
// value and mod revision of the state at that revision. Check reports:
//
//   - whether some order of the operations, consistent with real time, explains
//     every answer (porcupine; Ok, Illegal, or Unknown when the search hit its
//     time bound, which proves nothing);
//   - acknowledged writes that the final read contradicts, found directly
//     without porcupine: the key must hold the write's value or that of a later
//     write, or have been deleted by a later delete;
//   - watch violations: a revision that goes back or comes twice, a revision
//     of the run skipped, an event no write explains, an acknowledged write
//     missing from the part of the history the watch is known to have covered.
//
// It does not prove anything about keys outside the prefix, about serializable
// reads, leases or compaction, or about faults the scenario did not inject. It
// assumes the traffic is the only writer to the etcd cluster while it runs:
// the revision is global, so another writer's revisions would look like lost
// or phantom writes. A check that timed out is not a pass.
//
// Result.Write saves porcupine's HTML visualization, the raw history and the
// verdict for a person to look at.
//
// # Use
//
// A scenario prepares a clientv3.Config (endpoints of the client Service, TLS
// with a client certificate), then:
//
//	newClient := robustness.NewClientFactory(cfg)
//	wc, _ := newClient()                    // the watch's and final read's own client
//	w, err := robustness.Watch(ctx, wc, prefix, 0)
//	// start the faults
//	h, err := robustness.Run(ctx, robustness.TrafficConfig{NewClient: newClient, Prefix: prefix, Duration: time.Minute})
//	// heal the faults
//	final, err := robustness.ReadFinal(ctx, wc, prefix, time.Minute)
//	watch := w.Stop(final.Revision, 30*time.Second)
//	r := robustness.Check(h, final, robustness.CheckConfig{Watch: watch})
//	if !r.OK() {
//		_ = r.Write("_output/robustness/<scenario>-<time>")
//		t.Fatal(r)
//	}
package robustness
