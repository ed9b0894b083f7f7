//go:build e2e

package e2e

// Maintenance on the local cluster, with a client writing: a database over
// its quota (etcd's NOSPACE alarm) compacted, defragmented and its alarm
// cleared; defragmentation started by spec.maintenance.defrag's thresholds
// and by its schedule, one member at a time, each taken out of the client
// Service first. While a follower is defragmented, how long clients of the
// Service wait is logged beside the same with no defragmentation: clients
// that keep one connection (as etcd's client does) and one that dials a new
// connection for each request.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// defragBound is how long one defragmentation run may take to start and
// end: a threshold or a NOSPACE alarm is seen at the next health pass (1m
// by default), then each member is drained, defragmented and put back.
const defragBound = 4 * time.Minute

func TestMaintenance(t *testing.T) {
	testEach(t, noSpaceFeature(), defragPolicyFeature())
}

// noSpaceFeature fills an 8 MiB quota with the history of a few large keys
// and waits for the operator to repair the NOSPACE alarm.
func noSpaceFeature() features.Feature {
	return features.New("NOSPACE").
		Assess("a database over its quota is compacted, every member defragmented, the alarm cleared; writes work again and lose nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			const quota = int64(8 << 20)
			c := newCluster(namespaceOf(ctx), "nospace", 3)
			c.Spec.Options.QuotaBackendBytes = ptr.To(quota)
			key, cli := createRunning(ctx, t, k, c)
			w := startWriter(ctx, cli, "nospace/w/")

			big := &bigKeys{ok: map[string][]int{}, size: 256 << 10}
			padded, failedAt := big.fillToQuota(ctx, t, cli)

			sawAlarm, sawDegraded := false, false
			run := followRun(ctx, t, k, key, etcdv1.DefragForNoSpace, func(c *etcdv1.EtcdCluster) {
				for _, a := range c.Status.Alarms {
					if a.Type == "NOSPACE" && a.Member != "" {
						sawAlarm = true
					}
				}
				d := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionDegraded)
				if d != nil && d.Status == metav1.ConditionTrue && d.Reason == etcdv1.ReasonNoSpace {
					sawDegraded = true
				}
			})
			waitFor(ctx, t, time.Minute, "a put after the repair", func() (bool, error) {
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err := cli.Put(c, "nospace/after", "nospace/after")
				return err == nil, err
			})
			t.Logf("writes refused for %.1fs, from the first put over the quota to the first put after the repair; the repair was planned %.1fs after that first refusal",
				time.Since(failedAt).Seconds(), run.started.Sub(failedAt).Seconds())
			if !sawAlarm || !sawDegraded {
				t.Errorf("while etcd refused writes: NOSPACE in status.alarms %v, Degraded True with reason NoSpace %v; want both", sawAlarm, sawDegraded)
			}
			checkRun(ctx, t, k, key, run, "NOSPACE")
			if run.compactedRevision <= 0 {
				t.Errorf("status.maintenance.defrag.compactedRevision never set")
			}
			waitEventFor(ctx, t, k, key.Namespace, "Compacted", key.Name)
			waitEventFor(ctx, t, k, key.Namespace, "AlarmCleared", key.Name)

			alarms, err := cli.AlarmList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(alarms.Alarms) != 0 {
				t.Errorf("etcd still lists alarms %v", alarms.Alarms)
			}
			got := &etcdv1.EtcdCluster{}
			waitFor(ctx, t, time.Minute, "no alarm in the status and Degraded False", func() (bool, error) {
				if err := k.c.Get(ctx, key, got); err != nil {
					return false, err
				}
				d := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionDegraded)
				return len(got.Status.Alarms) == 0 && d != nil && d.Status == metav1.ConditionFalse, fmt.Errorf("alarms %v degraded %+v", got.Status.Alarms, d)
			})
			checkDefragRecords(t, got, etcdv1.DefragForNoSpace, run.order)
			for _, m := range got.Status.Members {
				if m.Quota != quota {
					t.Errorf("member %s: status quota %d, want %d", m.Name, m.Quota, quota)
				}
			}
			waitConverged(ctx, t, k, key, 3, time.Minute)
			k.inService(ctx, t, key)

			big.check(ctx, t, cli)
			acked, failed := w.stop()
			t.Logf("writer: %d acknowledged, %d refused or failed", len(acked), failed)
			checkKeys(ctx, t, cli, "nospace/", append(acked, padded...))
			return ctx
		}).Feature()
}

// defragPolicyFeature defragments a 1Gi cluster holding 64 MiB of data
// and as much of free pages, first by the thresholds, then on the schedule,
// with clients of the Service measuring how long they wait.
func defragPolicyFeature() features.Feature {
	const values = 128 // of 512 KiB, written twice
	var (
		key    client.ObjectKey
		cli    *clientv3.Client
		w      *writer
		probes []*prober
		fresh  *prober
		names  map[uint64]string
		quiet  [2]time.Time
	)
	return features.New("defragmentation policy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			c := newCluster(namespaceOf(ctx), "defrag", 3)
			c.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
			// Everything but disabled would defragment once the pages are free.
			c.Spec.Maintenance.Defrag = etcdv1.DefragPolicy{Disabled: true, MinFreePercent: ptr.To[int32](20), MinFreeBytes: ptr.To(resource.MustParse("1Mi"))}
			key, cli = createRunning(ctx, t, k, c)
			start := time.Now()
			loadFreePages(ctx, t, cli, values)
			t.Logf("wrote %d MiB and overwrote it, compacted: %.1fs", values/2, time.Since(start).Seconds())

			// etcd counts the pages compaction freed at its next commit:
			// the writer brings one.
			w = startWriter(ctx, cli, "defrag/w/")
			// A spec change brings a pass at once: its health check sees the
			// free pages, and a disabled policy leaves them.
			patchSpec(ctx, t, k, key, func(s *etcdv1.EtcdClusterSpec) { s.Maintenance.Defrag.MinFreePercent = ptr.To[int32](25) })
			free := int64(values/2) << 20 * 8 / 10 // most of what was overwritten
			got := &etcdv1.EtcdCluster{}
			waitFor(ctx, t, 2*time.Minute, "status.members to show the free pages", func() (bool, error) {
				if err := k.c.Get(ctx, key, got); err != nil {
					return false, err
				}
				for _, m := range got.Status.Members {
					if m.DBSize-m.DBSizeInUse < free || m.Quota != resources.DefaultQuota(1<<30) {
						return false, fmt.Errorf("member %s: dbSize %d in use %d quota %d", m.Name, m.DBSize, m.DBSizeInUse, m.Quota)
					}
				}
				return len(got.Status.Members) == 3, nil
			})
			for _, m := range got.Status.Members {
				t.Logf("member %s: database %s, %s in use, quota %s", m.Name, mib(m.DBSize), mib(m.DBSizeInUse), mib(m.Quota))
			}
			if m := got.Status.Maintenance; m != nil && (m.Defrag != nil || len(m.Members) > 0) {
				t.Errorf("disabled, yet status.maintenance is %+v", m)
			}

			names = map[uint64]string{}
			for name, id := range memberIDs(ctx, t, cli) {
				names[id] = name
			}
			// Six clients of one connection each: the Service's proxy puts
			// each on a member at random, so most members get some.
			for i := range 6 {
				probes = append(probes, startProber(ctx, fmt.Sprintf("pinned%d", i), pinned(etcdClient(ctx, t, k, key))))
			}
			fresh = startProber(ctx, "fresh", freshDial(ctx, k.clientConfig(ctx, t, key, k.rootTLS(ctx, t, key))))
			time.Sleep(2 * time.Second)
			quiet[0] = time.Now()
			time.Sleep(12 * time.Second)
			quiet[1] = time.Now()
			for _, p := range probes {
				t.Logf("client %s connected to %s", p.name, names[p.memberAt(quiet[1])])
			}
			return ctx
		}).
		Assess("free pages over the thresholds: every member defragmented, followers first, each out of the Service meanwhile", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			patchSpec(ctx, t, k, key, func(s *etcdv1.EtcdClusterSpec) {
				s.Maintenance.Defrag.Disabled = false
				s.Maintenance.Defrag.MinFreePercent = ptr.To[int32](20)
			})
			run := followRun(ctx, t, k, key, etcdv1.DefragForThreshold, nil)
			checkRun(ctx, t, k, key, run, "thresholds")
			got := &etcdv1.EtcdCluster{}
			if err := k.c.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			checkDefragRecords(t, got, etcdv1.DefragForThreshold, run.order)
			waitConverged(ctx, t, k, key, 3, time.Minute)
			k.inService(ctx, t, key)
			logGaps(t, run, got, probes, fresh, names, quiet)
			return ctx
		}).
		Assess("the schedule fires: every member defragmented whatever its free pages", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			patched := time.Now()
			// Anchored at the cluster's creation, "@every 1m" has fired
			// since: the run starts at once. The thresholds cannot match.
			patchSpec(ctx, t, k, key, func(s *etcdv1.EtcdClusterSpec) {
				s.Maintenance.Defrag.Schedule = "@every 1m"
				s.Maintenance.Defrag.MinFreeBytes = ptr.To(resource.MustParse("100Gi"))
			})
			// Once it runs, disabling the policy lets it finish and starts
			// no other run.
			disabled := false
			run := followRun(ctx, t, k, key, etcdv1.DefragForSchedule, func(c *etcdv1.EtcdCluster) {
				if m := c.Status.Maintenance; !disabled && m != nil && m.Defrag != nil && m.Defrag.Reason == etcdv1.DefragForSchedule {
					patchSpec(ctx, t, k, key, func(s *etcdv1.EtcdClusterSpec) { s.Maintenance.Defrag.Disabled = true })
					disabled = true
				}
			})
			checkRun(ctx, t, k, key, run, "schedule")
			got := &etcdv1.EtcdCluster{}
			if err := k.c.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			checkDefragRecords(t, got, etcdv1.DefragForSchedule, run.order)
			last := got.Status.Maintenance.LastScheduleTime
			switch {
			case last == nil:
				t.Errorf("no status.maintenance.lastScheduleTime")
			case last.Sub(got.CreationTimestamp.Time)%time.Minute != 0 || last.After(time.Now()) || last.Time.Before(patched.Add(-time.Minute-time.Second)):
				t.Errorf("lastScheduleTime %v: want the newest minute since the creation (%v) before the schedule was set (%v)", last, got.CreationTimestamp, patched)
			}
			waitConverged(ctx, t, k, key, 3, time.Minute)
			k.inService(ctx, t, key)
			logGaps(t, run, got, probes, fresh, names, quiet)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if fresh == nil {
				return ctx
			}
			var acked []string
			for _, p := range append(probes, fresh) {
				acked = append(acked, p.stop()...)
			}
			checkKeys(ctx, t, cli, "probe/", acked)
			acked, failed := w.stop()
			t.Logf("writer: %d acknowledged, %d failed and retried", len(acked), failed)
			checkKeys(ctx, t, cli, "defrag/w/", acked)
			checkLoaded(ctx, t, cli, values)
			return ctx
		}).Feature()
}

// createRunning creates the cluster, waits until it converged and returns
// its key and a client of its client Service.
func createRunning(ctx context.Context, t *testing.T, k *kube, c *etcdv1.EtcdCluster) (client.ObjectKey, *clientv3.Client) {
	t.Helper()
	start := time.Now()
	if err := k.c.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	waitConverged(ctx, t, k, key, *c.Spec.Replicas, 3*time.Minute)
	t.Logf("%s: %d members Available %.1fs after create", key.Name, *c.Spec.Replicas, time.Since(start).Seconds())
	return key, etcdClient(ctx, t, k, key)
}

func patchSpec(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, change func(*etcdv1.EtcdClusterSpec)) {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := k.c.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	change(&c.Spec)
	if err := k.c.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
}

// bigValue is the value of key written in round, size bytes long.
func bigValue(key string, round, size int) string {
	p := fmt.Sprintf("%s@%d;", key, round)
	return strings.Repeat(p, size/len(p)+1)[:size]
}

func isNoSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database space exceeded")
}

// bigKeys are four keys written over and over with large values: etcd
// keeps each value until the history is compacted. ok holds the rounds a
// key may read back: the last one etcd acknowledged, and any later one
// whose put failed. A failure does not say whether the put was applied,
// not even a refusal for the quota: the put that takes the database over
// it is applied, then answered with that refusal (etcd's quota applier).
type bigKeys struct {
	ok   map[string][]int
	size int
}

func (b *bigKeys) put(ctx context.Context, cli *clientv3.Client, round int) error {
	key := fmt.Sprintf("big/%d", round%4)
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := cli.Put(c, key, bigValue(key, round, b.size))
	cancel()
	if err == nil {
		b.ok[key] = []int{round}
	} else {
		b.ok[key] = append(b.ok[key], round)
	}
	return err
}

// fillToQuota writes large values until etcd refuses one for its quota,
// and returns the small keys it wrote and when the refusal came. The first
// 4 MiB of history (half the quota) is followed by more small revisions
// than a NOSPACE repair keeps (1000), so that its compaction has that
// history to free: the rest then fits in the quota again.
func (b *bigKeys) fillToQuota(ctx context.Context, t *testing.T, cli *clientv3.Client) ([]string, time.Time) {
	t.Helper()
	first := (4 << 20) / b.size
	for round := range first {
		if err := b.put(ctx, cli, round); err != nil {
			t.Fatalf("large put %d, below the quota: %v", round, err)
		}
	}
	padded := pad(ctx, t, cli, "nospace/pad/", 1500)
	for round := first; ; round++ {
		err := b.put(ctx, cli, round)
		if isNoSpace(err) {
			t.Logf("%d large puts of %d KiB and %d small ones, then etcd refused one: %v", round, b.size>>10, len(padded), err)
			return padded, time.Now()
		}
		if round > 200 {
			t.Fatalf("%d large puts of %d KiB and etcd never refused one (last error %v)", round, b.size>>10, err)
		}
	}
}

// check reads back each large key.
func (b *bigKeys) check(ctx context.Context, t *testing.T, cli *clientv3.Client) {
	t.Helper()
	for key, rounds := range b.ok {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		i := -1
		if len(resp.Kvs) == 1 {
			i = slices.IndexFunc(rounds, func(r int) bool { return string(resp.Kvs[0].Value) == bigValue(key, r, b.size) })
		}
		switch {
		case i < 0:
			t.Errorf("%s does not hold the value of any of the rounds %v (the first acknowledged, the others failed)", key, rounds)
		case i > 0:
			t.Logf("%s holds the value of round %d, whose put failed", key, rounds[i])
		}
	}
	t.Logf("the %d large keys read back", len(b.ok))
}

// pad puts n small keys from six clients at once and returns those etcd
// acknowledged.
func pad(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string, n int) []string {
	t.Helper()
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := g; i < n; i += 6 {
				key := fmt.Sprintf("%s%05d", prefix, i)
				c, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := cli.Put(c, key, key)
				cancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, key)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(acked) < n*9/10 {
		t.Fatalf("only %d of %d small puts acknowledged", len(acked), n)
	}
	return acked
}

// loadFreePages writes n values of 512 KiB from four clients at once, writes
// each again, then compacts: n/2 MiB of data and about as much of free pages.
func loadFreePages(ctx context.Context, t *testing.T, cli *clientv3.Client, n int) {
	t.Helper()
	var rev int64
	for round := range 2 {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					key := fmt.Sprintf("load/%04d", i)
					c, cancel := context.WithTimeout(ctx, 30*time.Second)
					resp, err := cli.Put(c, key, bigValue(key, round, 512<<10))
					cancel()
					mu.Lock()
					if err != nil {
						errs = append(errs, fmt.Errorf("put %s: %w", key, err))
					} else {
						rev = max(rev, resp.Header.Revision)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d puts failed, the first: %v", len(errs), errs[0])
		}
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact to %d: %v", rev, err)
	}
}

// checkLoaded reads back the values loadFreePages wrote last.
func checkLoaded(ctx context.Context, t *testing.T, cli *clientv3.Client, n int) {
	t.Helper()
	bad := 0
	for i := range n {
		key := fmt.Sprintf("load/%04d", i)
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != bigValue(key, 1, 512<<10) {
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d large values differ", bad, n)
	}
	t.Logf("all %d large values read back", n)
}

// defragRun is what the test saw of one defragmentation run.
type defragRun struct {
	// order is the members in the order planned, leader the leader then.
	order  []string
	leader string
	// windows are when members were seen in phase Defragmenting (one that
	// takes less than a read of the status may not be); drained are the
	// members seen out of the client Service before it.
	windows           []defragWindow
	drained           []string
	progressing       bool
	compactedRevision int64
	started, ended    time.Time
}

type defragWindow struct {
	member   string
	from, to time.Time
}

// followRun waits for a run for reason to start and end, reading the
// cluster every 200 ms; each, when set, is given every cluster read. Once
// the member being defragmented says it is not Serving for a second (the
// operator waits 3s before it defragments), or is seen in phase
// Defragmenting, it must be out of the client Service.
func followRun(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, reason string, each func(*etcdv1.EtcdCluster)) *defragRun {
	t.Helper()
	run := &defragRun{}
	var open *defragWindow
	checked := map[string]bool{}
	waitFor(ctx, t, defragBound, "a defragmentation run ("+reason+") to start and end", func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := k.c.Get(ctx, key, c); err != nil {
			return false, err
		}
		now := time.Now()
		if each != nil {
			each(c)
		}
		var d *etcdv1.DefragRun
		if c.Status.Maintenance != nil {
			d = c.Status.Maintenance.Defrag
		}
		if d == nil || d.Reason != reason {
			if run.started.IsZero() {
				return false, fmt.Errorf("no run yet: status.maintenance %+v", c.Status.Maintenance)
			}
			if open != nil {
				open.to = now
				run.windows = append(run.windows, *open)
			}
			run.ended = now
			return true, nil
		}
		if run.started.IsZero() {
			run.started = now
			if d.Member != "" {
				run.order = append(run.order, d.Member)
			}
			run.order = append(run.order, d.Pending...)
			for _, m := range c.Status.Members {
				if m.Leader {
					run.leader = m.Name
				}
			}
			t.Logf("%s run planned: %v (leader %s)", reason, run.order, run.leader)
		}
		p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
		if p != nil && p.Status == metav1.ConditionTrue && p.Reason == etcdv1.ReasonDefragmenting {
			run.progressing = true
		}
		run.compactedRevision = max(run.compactedRevision, d.CompactedRevision)
		if open != nil && (d.Member != open.member || d.Phase != etcdv1.DefragDefragmenting) {
			open.to = now
			run.windows = append(run.windows, *open)
			open = nil
		}
		if open == nil && d.Phase == etcdv1.DefragDefragmenting && !slices.ContainsFunc(run.windows, func(w defragWindow) bool { return w.member == d.Member }) {
			open = &defragWindow{member: d.Member, from: now}
		}
		if d.Member != "" && !checked[d.Member] && (d.Phase == etcdv1.DefragDefragmenting || k.drainedFor(ctx, key, d.Member, time.Second)) {
			checked[d.Member] = true
			if err := k.outOfService(ctx, key, d.Member); err != nil {
				t.Errorf("while %s is drained for its defragmentation: %v", d.Member, err)
			} else {
				run.drained = append(run.drained, d.Member)
			}
		}
		return false, nil
	})
	t.Logf("%s run: %.1fs from the first sight of its plan to its end", reason, run.ended.Sub(run.started).Seconds())
	return run
}

// checkRun checks a run that should have taken every member: planned
// followers first and the leader last, Progressing said so, each member
// was seen out of the client Service, and the MemberDefragmented events
// whose note names why came in the planned order.
func checkRun(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, run *defragRun, why string) {
	t.Helper()
	if len(run.order) != 3 || run.order[2] != run.leader {
		t.Errorf("run planned as %v, leader %s: want the three members, the leader last", run.order, run.leader)
	}
	if !run.progressing {
		t.Errorf("Progressing never True with reason Defragmenting during the run")
	}
	if !slices.Equal(run.drained, run.order) {
		t.Errorf("members seen out of the client Service %v, want %v", run.drained, run.order)
	}
	var events []string
	waitFor(ctx, t, time.Minute, "a MemberDefragmented event for each member", func() (bool, error) {
		evs, err := k.cs.EventsV1().Events(key.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		items := slices.DeleteFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Reason != "MemberDefragmented" || e.Regarding.Name != key.Name || !strings.Contains(e.Note, why)
		})
		slices.SortStableFunc(items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
		events = events[:0]
		for _, e := range items {
			if e.Related != nil {
				events = append(events, e.Related.Name)
			}
		}
		return len(events) >= len(run.order), fmt.Errorf("events for %v", events)
	})
	events = events[:len(run.order)]
	if !slices.Equal(events, run.order) {
		t.Errorf("MemberDefragmented events (%s) for %v, want %v", why, events, run.order)
	}
}

// checkDefragRecords checks that status.maintenance.members has a record
// of each member for reason, each giving space back, and logs them.
func checkDefragRecords(t *testing.T, c *etcdv1.EtcdCluster, reason string, members []string) {
	t.Helper()
	if c.Status.Maintenance == nil {
		t.Fatalf("no status.maintenance")
	}
	for _, name := range members {
		i := slices.IndexFunc(c.Status.Maintenance.Members, func(m etcdv1.MemberDefragStatus) bool { return m.Name == name })
		if i < 0 {
			t.Errorf("no status.maintenance.members entry for %s", name)
			continue
		}
		m := c.Status.Maintenance.Members[i]
		t.Logf("%s defragmented (%s): %s -> %s, %s reclaimed, %dms", m.Name, m.Reason, mib(m.SizeBefore), mib(m.SizeAfter), mib(m.ReclaimedBytes), m.DurationMillis)
		if m.Reason != reason || m.SizeAfter <= 0 || m.ReclaimedBytes != max(m.SizeBefore-m.SizeAfter, 0) {
			t.Errorf("status.maintenance.members entry %+v: want reason %s and the sizes before and after", m, reason)
		}
		if reason != etcdv1.DefragForSchedule && m.SizeAfter >= m.SizeBefore {
			t.Errorf("%s: database %d bytes after its defragmentation, %d before: nothing given back", m.Name, m.SizeAfter, m.SizeBefore)
		}
	}
}

// outOfService says what, if anything, still has member in the client
// Service: its spec.drained, its Serving condition, its Pod's serving
// label and the Service's endpoints.
func (k *kube) outOfService(ctx context.Context, key client.ObjectKey, member string) error {
	m := &etcdv1.EtcdMember{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: member}, m); err != nil {
		return err
	}
	s := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionServing)
	if !m.Spec.Drained || s == nil || s.Status != metav1.ConditionFalse || s.Reason != etcdv1.ReasonDrained {
		return fmt.Errorf("spec.drained %v, Serving %+v: want true and False, Drained", m.Spec.Drained, s)
	}
	p := &corev1.Pod{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: member}, p); err != nil {
		return err
	}
	if v := p.Labels[etcdv1.ServingLabel]; v != "false" {
		return fmt.Errorf("pod label %s=%q, want false", etcdv1.ServingLabel, v)
	}
	in, err := k.serviceEndpoints(ctx, key)
	if err != nil {
		return err
	}
	if slices.Contains(in, member) {
		return fmt.Errorf("still an endpoint of the client Service: %v", in)
	}
	return nil
}

// drainedFor says whether member's Serving condition has been False for
// at least d.
func (k *kube) drainedFor(ctx context.Context, key client.ObjectKey, member string, d time.Duration) bool {
	m := &etcdv1.EtcdMember{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: member}, m); err != nil {
		return false
	}
	s := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionServing)
	return s != nil && s.Status == metav1.ConditionFalse && time.Since(s.LastTransitionTime.Time) >= d
}

// inService waits until every member is back in the client Service.
func (k *kube) inService(ctx context.Context, t *testing.T, key client.ObjectKey) {
	t.Helper()
	svc := &corev1.Service{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: resources.ClientServiceName(key.Name)}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector[etcdv1.ServingLabel] != "true" {
		t.Errorf("client Service selector %v, want %s=true", svc.Spec.Selector, etcdv1.ServingLabel)
	}
	waitFor(ctx, t, time.Minute, "every member back in the client Service", func() (bool, error) {
		for _, m := range membersOf(ctx, t, k, key) {
			s := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionServing)
			if m.Spec.Drained || s == nil || s.Status != metav1.ConditionTrue {
				return false, fmt.Errorf("member %s: drained %v, Serving %+v", m.Name, m.Spec.Drained, s)
			}
		}
		in, err := k.serviceEndpoints(ctx, key)
		return len(in) == 3, fmt.Errorf("endpoints %v, %v", in, err)
	})
}

// serviceEndpoints are the Pods the client Service sends to.
func (k *kube) serviceEndpoints(ctx context.Context, key client.ObjectKey) ([]string, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := k.c.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: resources.ClientServiceName(key.Name)}); err != nil {
		return nil, err
	}
	var pods []string
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return pods, nil
}

// prober puts a key of its own and reads it back, again and again, and
// remembers when each round succeeded and which member answered it: the
// longest time between two is how long its client waited.
type prober struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	oks    []probeOK
	acked  []string
}

type probeOK struct {
	at     time.Time
	member uint64
}

// dialer gives the client of one round and what to do after it.
type dialer func() (*clientv3.Client, func(), error)

// pinned uses one client, and so one connection, for every round.
func pinned(cli *clientv3.Client) dialer {
	return func() (*clientv3.Client, func(), error) { return cli, func() {}, nil }
}

// freshDial makes a client, and so a connection, for each round.
func freshDial(ctx context.Context, cfg clientv3.Config) dialer {
	cfg.Context = ctx
	return func() (*clientv3.Client, func(), error) {
		cli, err := clientv3.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return cli, func() { _ = cli.Close() }, nil
	}
}

func startProber(ctx context.Context, name string, dial dialer) *prober {
	ctx, cancel := context.WithCancel(ctx)
	p := &prober{name: name, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("probe/%s/%07d", name, i)
			p.round(ctx, dial, key)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return p
}

func (p *prober) round(ctx context.Context, dial dialer, key string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, done, err := dial()
	if err != nil {
		return
	}
	defer done()
	if _, err := cli.Put(ctx, key, key); err != nil {
		return
	}
	p.mu.Lock()
	p.acked = append(p.acked, key)
	p.mu.Unlock()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		return
	}
	p.mu.Lock()
	p.oks = append(p.oks, probeOK{at: time.Now(), member: resp.Header.MemberId})
	p.mu.Unlock()
}

// stop ends the rounds and returns the keys etcd acknowledged.
func (p *prober) stop() []string {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

// longestGap is the longest time between two successful rounds around any
// part of [from, to], or since the last one when none came after.
func (p *prober) longestGap(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(p.oks); i++ {
		a, b := p.oks[i-1].at, p.oks[i].at
		if b.After(from) && a.Before(to) {
			gap = max(gap, b.Sub(a))
		}
	}
	if n := len(p.oks); n > 0 && p.oks[n-1].at.Before(to) {
		gap = max(gap, to.Sub(p.oks[n-1].at))
	}
	return gap
}

// memberAt is the member that answered the last round before at.
func (p *prober) memberAt(at time.Time) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m uint64
	for _, ok := range p.oks {
		if ok.at.After(at) {
			break
		}
		m = ok.member
	}
	return m
}

// logGaps logs, for each member's defragmentation in the run, the longest
// wait of the clients connected to it, of those connected to other
// members and of the client dialing for each round, beside the same in
// the quiet window before any defragmentation.
func logGaps(t *testing.T, run *defragRun, c *etcdv1.EtcdCluster, probes []*prober, fresh *prober, names map[uint64]string, quiet [2]time.Time) {
	t.Helper()
	var quietPinned time.Duration
	for _, p := range probes {
		quietPinned = max(quietPinned, p.longestGap(quiet[0], quiet[1]))
	}
	quietFresh := fresh.longestGap(quiet[0], quiet[1])
	t.Logf("no defragmentation (%.0fs): longest wait of a one-connection client %v, of the new-connection client %v",
		quiet[1].Sub(quiet[0]).Seconds(), quietPinned.Round(time.Millisecond), quietFresh.Round(time.Millisecond))
	for _, w := range run.windows {
		var on, off time.Duration
		n := 0
		for _, p := range probes {
			g := p.longestGap(w.from, w.to)
			if names[p.memberAt(w.from)] == w.member {
				on, n = max(on, g), n+1
			} else {
				off = max(off, g)
			}
		}
		took := int64(-1)
		if i := slices.IndexFunc(c.Status.Maintenance.Members, func(m etcdv1.MemberDefragStatus) bool { return m.Name == w.member }); i >= 0 {
			took = c.Status.Maintenance.Members[i].DurationMillis
		}
		role := "follower"
		if w.member == run.leader {
			role = "leader (moved first)"
		}
		onText := "no client connected to it"
		if n > 0 {
			onText = fmt.Sprintf("%d clients connected to it waited up to %v", n, on.Round(time.Millisecond))
		}
		t.Logf("%s %s defragmented in %dms (seen Defragmenting %.1fs): %s; clients on other members %v; the new-connection client %v",
			role, w.member, took, w.to.Sub(w.from).Seconds(), onText, off.Round(time.Millisecond), fresh.longestGap(w.from, w.to).Round(time.Millisecond))
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
