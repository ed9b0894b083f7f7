package shard

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Runner runs the controllers of every shard whose Lease this replica
// holds. Each shard has a Lease of its own; a replica campaigns for all of
// them, so work spreads over the replicas, and when a holder dies another
// replica takes its shards over once their Leases expire.
//
// A replica stops a shard's controllers as soon as it fails to renew the
// shard's Lease, RenewDeadline after its last renewal; another replica can
// take the Lease only LeaseDuration after that renewal, so two replicas
// never run one shard at once. The shard's context is cancelled at that
// moment, which also cancels the etcd calls of its reconciles in flight.
type Runner struct {
	// Client writes the Leases.
	Client kubernetes.Interface
	// Namespace of the Leases.
	Namespace string
	// Identity of this replica in the Leases.
	Identity string
	// Shards is the number of shards.
	Shards int
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// StopTimeout bounds how long a shard's controllers may take to stop
	// after its Lease is lost; past it the process exits, as a leader-elected
	// controller-runtime manager does, rather than risk two holders.
	StopTimeout time.Duration
	// Run runs the controllers of one shard until ctx ends.
	Run func(ctx context.Context, shard int) error
	// Prepare runs once before any shard: Relabel.
	Prepare func(ctx context.Context) error
	// NoLeases runs every shard at once without Leases: one replica only,
	// for development.
	NoLeases bool
	// Log is the logger.
	Log logr.Logger
	// Exit ends the process; os.Exit when nil.
	Exit func(code int)

	mu   sync.Mutex
	held map[int]bool
}

// leaderGauge is 1 for the shards this replica holds, 0 for the others.
var leaderGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "raftsman",
	Name:      "shard_leader",
	Help:      "1 for each shard whose Lease this operator replica holds, 0 for the other shards.",
}, []string{"shard"})

// Collectors are the metrics of the shard runner, to register once.
func Collectors() []prometheus.Collector { return []prometheus.Collector{leaderGauge} }

// Start campaigns for every shard until ctx ends. It implements
// controller-runtime's Runnable.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	r.held = map[int]bool{}
	r.mu.Unlock()
	if r.Prepare != nil {
		if err := r.Prepare(ctx); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for i := range r.Shards {
		leaderGauge.WithLabelValues(strconv.Itoa(i)).Set(0)
		if r.NoLeases {
			wg.Go(func() { r.runShard(ctx, i, r.Log.WithValues("shard", i)) })
			continue
		}
		wg.Go(func() { r.campaign(ctx, i) })
	}
	wg.Wait()
	return nil
}

// Held returns the shards this replica runs now.
func (r *Runner) Held() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i := range r.Shards {
		if r.held[i] {
			out = append(out, i)
		}
	}
	return out
}

func (r *Runner) setHeld(i int, held bool) {
	r.mu.Lock()
	r.held[i] = held
	r.mu.Unlock()
	v := 0.0
	if held {
		v = 1
	}
	leaderGauge.WithLabelValues(strconv.Itoa(i)).Set(v)
}

// campaign holds shard i whenever it can, until ctx ends. The shard's
// controllers run in this goroutine, not in the elector's callback, so that
// the next campaign starts only once they have stopped.
func (r *Runner) campaign(ctx context.Context, i int) {
	log := r.Log.WithValues("shard", i)
	for ctx.Err() == nil {
		leading := make(chan context.Context, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metaFor(r.Namespace, LeaseName(i)),
				Client:     r.Client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: r.Identity},
			},
			LeaseDuration:   r.LeaseDuration,
			RenewDeadline:   r.RenewDeadline,
			RetryPeriod:     r.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            LeaseName(i),
			Callbacks: leaderelection.LeaderCallbacks{
				// sctx ends the moment the Lease is not renewed in time.
				OnStartedLeading: func(sctx context.Context) { leading <- sctx },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			log.Error(err, "Cannot campaign for the shard")
			return
		}
		// Controllers that stop on their own (a start failure) give the
		// Lease back: cancelling the campaign releases it.
		cctx, cancel := context.WithCancel(ctx)
		elected := make(chan struct{})
		go func() {
			defer close(elected)
			le.Run(cctx)
		}()
		select {
		case <-elected:
		case sctx := <-leading:
			r.runShard(sctx, i, log)
			cancel()
			<-elected
		}
		cancel()
		if ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(r.RetryPeriod):
			}
		}
	}
}

// runShard runs the shard's controllers until sctx ends, and makes sure
// they stop within StopTimeout after that.
func (r *Runner) runShard(sctx context.Context, i int, log logr.Logger) {
	log.Info("Holding the shard: starting its controllers")
	r.setHeld(i, true)
	defer r.setHeld(i, false)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-sctx.Done():
			select {
			case <-done:
			case <-time.After(r.StopTimeout):
				log.Info("The shard's controllers did not stop in time after its Lease ended; exiting")
				r.exit(1)
			}
		}
	}()
	if err := r.Run(sctx, i); err != nil {
		log.Error(err, "The shard's controllers stopped with an error")
	}
	close(done)
	log.Info("Released the shard: its controllers stopped")
}

func (r *Runner) exit(code int) {
	if r.Exit != nil {
		r.Exit(code)
		return
	}
	os.Exit(code)
}
