package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// defragValues is how many values of 512 KiB the defragmentation's cluster
// holds; each is written twice, so compaction leaves about as much of free
// pages as of data.
const defragValues = 128

// defragProbes is how many clients of one connection each watch the
// defragmentation: the Service's proxy puts each on a member at random, so
// some are on the follower defragmented first (none, 4% of the time).
const defragProbes = 8

// defragResult is the defragmentation of the first member of a threshold
// run (a follower): what etcd took, what it gave back, and the longest wait
// of the clients connected to it while it was defragmented, beside the
// longest wait of the same clients over a quiet window just before.
type defragResult struct {
	member                 string
	took, reclaimed        float64
	stall, quiet           float64
	clients                int
	otherStall, otherQuiet float64
}

// defrag creates a 3-member cluster on 1Gi volumes with its defragmentation
// policy disabled, fills it with data and as much of free pages, watches
// clients of its Service over a quiet window, then enables the policy's
// thresholds and measures the first member's defragmentation.
func (b *bench) defrag(ns string) (defragResult, error) {
	var res defragResult
	const name = "defrag"
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{
		Replicas: ptr.To[int32](3), Version: *version, Storage: etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		Maintenance: etcdv1.MaintenanceSpec{Defrag: etcdv1.DefragPolicy{Disabled: true, MinFreePercent: ptr.To[int32](20), MinFreeBytes: ptr.To(resource.MustParse("1Mi"))}}}}
	if err := b.c.Create(b.ctx, c); err != nil {
		return res, err
	}
	if _, err := b.poll(3*time.Minute, b.converged(ns, name, 3)); err != nil {
		return res, err
	}
	cli, err := b.etcdClient(ns, name)
	if err != nil {
		return res, err
	}
	defer func() { _ = cli.Close() }()
	if err := fill(b.ctx, cli); err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	probes, closeProbes, err := b.startProbes(ctx, ns, name)
	defer closeProbes()
	if err != nil {
		return res, err
	}
	time.Sleep(settle)
	q0 := time.Now()
	time.Sleep(10 * time.Second)
	q1 := time.Now()

	if err := b.c.Get(b.ctx, client.ObjectKeyFromObject(c), c); err != nil {
		return res, err
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Maintenance.Defrag.Disabled = false
	if err := b.c.Patch(b.ctx, c, patch); err != nil {
		return res, err
	}
	from, to, err := b.firstDefrag(c, &res)
	if err != nil {
		return res, err
	}
	// The run goes on with the other members; the figures are the first's.
	if _, err := b.poll(3*time.Minute, func() (bool, error) {
		if err := b.c.Get(b.ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		return c.Status.Maintenance != nil && c.Status.Maintenance.Defrag == nil, nil
	}); err != nil {
		return res, fmt.Errorf("the rest of the defragmentation run: %w", err)
	}
	cancel()
	res.tally(c, probes, [2]time.Time{from, to}, [2]time.Time{q0, q1})
	return res, nil
}

// startProbes starts defragProbes probes of the cluster's Service, each on
// a client of its own, which closeProbes closes (even when err is set).
func (b *bench) startProbes(ctx context.Context, ns, name string) (probes []*probe, closeProbes func(), err error) {
	var clients []*clientv3.Client
	closeProbes = func() {
		for _, pc := range clients {
			_ = pc.Close()
		}
	}
	for i := range defragProbes {
		pc, err := b.etcdClient(ns, name)
		if err != nil {
			return nil, closeProbes, err
		}
		clients = append(clients, pc)
		probes = append(probes, startProbe(ctx, pc, fmt.Sprintf("probe/%d/", i)))
	}
	return probes, closeProbes, nil
}

// firstDefrag waits for the first member of the run (res.member, recorded
// here) to be defragmented, and returns when it entered and left the
// phase Defragmenting.
func (b *bench) firstDefrag(c *etcdv1.EtcdCluster, res *defragResult) (from, to time.Time, err error) {
	if _, err := b.poll(3*time.Minute, func() (bool, error) {
		if err := b.c.Get(b.ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		now := time.Now()
		var d *etcdv1.DefragRun
		if c.Status.Maintenance != nil {
			d = c.Status.Maintenance.Defrag
		}
		if d != nil && res.member == "" {
			res.member = d.Member
		}
		in := d != nil && res.member != "" && d.Member == res.member && d.Phase == etcdv1.DefragDefragmenting
		if from.IsZero() && in {
			from = now
		}
		if !from.IsZero() && !in {
			to = now
			return true, nil
		}
		if d == nil && res.member != "" {
			return false, fmt.Errorf("the run ended and %s was never seen in phase Defragmenting", res.member)
		}
		return false, nil
	}); err != nil {
		return from, to, fmt.Errorf("defragmentation of the first member %q: %w", res.member, err)
	}
	return from, to, nil
}

// tally records what the cluster's status says of the first member's
// defragmentation, and stops the probes: the longest wait of each over
// the defragmentation (run) and over the quiet window, by whether the
// probe was connected to that member.
func (res *defragResult) tally(c *etcdv1.EtcdCluster, probes []*probe, run, quietWindow [2]time.Time) {
	for _, m := range c.Status.Maintenance.Members {
		if m.Name == res.member {
			res.took, res.reclaimed = float64(m.DurationMillis)/1000, float64(m.ReclaimedBytes)/(1<<20)
		}
	}
	ids := map[string]uint64{}
	for _, m := range c.Status.Members {
		var id uint64
		if _, err := fmt.Sscanf(m.ID, "%x", &id); err == nil {
			ids[m.Name] = id
		}
	}
	for _, p := range probes {
		p.stop()
		acks := p.times()
		stall, _ := longestGap(acks, run[0], run[1])
		quiet, _ := longestGap(acks, quietWindow[0], quietWindow[1])
		if p.memberAt(quietWindow[1]) == ids[res.member] {
			res.clients++
			res.stall, res.quiet = max(res.stall, stall), max(res.quiet, quiet)
		} else {
			res.otherStall, res.otherQuiet = max(res.otherStall, stall), max(res.otherQuiet, quiet)
		}
	}
}

// fill writes defragValues values of 512 KiB from four clients at once,
// writes each again, then compacts.
func fill(ctx context.Context, cli *clientv3.Client) error {
	var rev int64
	for round := range 2 {
		var mu sync.Mutex
		var first error
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < defragValues; i += 4 {
					c, cancel := context.WithTimeout(ctx, 30*time.Second)
					resp, err := cli.Put(c, fmt.Sprintf("load/%04d", i), strings.Repeat(fmt.Sprint(round), 512<<10))
					cancel()
					mu.Lock()
					if err != nil && first == nil {
						first = err
					} else if err == nil {
						rev = max(rev, resp.Header.Revision)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			return fmt.Errorf("fill: %w", first)
		}
	}
	_, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return err
}

// probe puts a key every 20 ms with a 1 s timeout, like the writer of the
// rolling changes, and keeps the times of the writes that succeeded with
// the member that answered each.
type probe struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	acks   []time.Time
	by     []uint64
}

func startProbe(ctx context.Context, cli *clientv3.Client, prefix string) *probe {
	ctx, cancel := context.WithCancel(ctx)
	p := &probe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			c, cancelPut := context.WithTimeout(ctx, time.Second)
			resp, err := cli.Put(c, fmt.Sprintf("%s%07d", prefix, i), "x")
			cancelPut()
			if err == nil {
				p.mu.Lock()
				p.acks, p.by = append(p.acks, time.Now()), append(p.by, resp.Header.MemberId)
				p.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *probe) stop() {
	p.cancel()
	<-p.done
}

// times are the times of the writes that succeeded.
func (p *probe) times() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acks)
}

// memberAt is the member that answered the last write before at: the one
// the probe's connection goes to.
func (p *probe) memberAt(at time.Time) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m uint64
	for i, t := range p.acks {
		if t.After(at) {
			break
		}
		m = p.by[i]
	}
	return m
}
