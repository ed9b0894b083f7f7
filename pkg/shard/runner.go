package shard

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	mu     sync.Mutex
	held   map[int]bool
	live   int
	liveAt time.Time
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
	if !r.NoLeases {
		wg.Go(func() { r.keepPresence(ctx) })
	}
	for i := range r.Shards {
		leaderGauge.WithLabelValues(strconv.Itoa(i)).Set(0)
		if r.NoLeases {
			wg.Go(func() { r.runShard(ctx, ctx, i, r.Log.WithValues("shard", i)) })
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
// controllers run in this goroutine, not in the elector's callback, and the
// Lease is given back only once they have stopped: the elector's context
// does not follow ctx, so that a replica shutting down never releases a
// shard whose reconciles still run.
func (r *Runner) campaign(ctx context.Context, i int) {
	log := r.Log.WithValues("shard", i)
	for ctx.Err() == nil {
		leading := make(chan context.Context, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: r.Namespace, Name: LeaseName(i)},
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
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		elected := make(chan struct{})
		go func() {
			defer close(elected)
			le.Run(cctx)
		}()
		handedOver := false
		select {
		case <-elected:
		case <-ctx.Done():
		case sctx := <-leading:
			handedOver = r.runShard(ctx, sctx, i, log)
		}
		cancel()
		<-elected
		if handedOver {
			r.leaveTo(ctx, i)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.RetryPeriod):
		}
	}
}

// leaveTo leaves a shard just handed over to another replica for a while,
// unless nobody holds it (its new holder died too): then it is taken again
// at once.
func (r *Runner) leaveTo(ctx context.Context, i int) {
	start := time.Now()
	for time.Since(start) < 3*r.LeaseDuration {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.RetryPeriod):
		}
		l, err := r.Client.CoordinationV1().Leases(r.Namespace).Get(ctx, LeaseName(i), metav1.GetOptions{})
		if err != nil {
			continue
		}
		free := l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
			time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
		// Not before a lease duration: the replica it was left to needs a
		// moment to take it.
		if free && time.Since(start) > r.LeaseDuration {
			return
		}
	}
}

// runShard runs the shard's controllers until the Lease is lost (sctx),
// the replica stops (ctx), or the replica holds more than its share of the
// shards and hands this one over (it reports that). Past StopTimeout after
// a lost Lease the process exits rather than risk two holders.
func (r *Runner) runShard(ctx, sctx context.Context, i int, log logr.Logger) (handedOver bool) {
	log.Info("Holding the shard: starting its controllers")
	r.setHeld(i, true)
	defer r.setHeld(i, false)
	runCtx, stop := context.WithCancel(sctx)
	defer stop()
	done := make(chan struct{})
	var over atomic.Bool
	go func() {
		tick := time.NewTicker(r.RetryPeriod)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				stop()
				return
			case <-sctx.Done():
				select {
				case <-done:
				case <-time.After(r.StopTimeout):
					log.Info("The shard's controllers did not stop in time after its Lease ended; exiting")
					r.exit(1)
				}
				return
			case <-tick.C:
				if r.shouldHandOver(ctx, i) {
					log.Info("Handing the shard over: this replica holds more than its share")
					over.Store(true)
					stop()
					return
				}
			}
		}
	}()
	if err := r.Run(runCtx, i); err != nil {
		log.Error(err, "The shard's controllers stopped with an error")
	}
	close(done)
	log.Info("Released the shard: its controllers stopped")
	return over.Load()
}

// presenceLabel marks the Leases by which replicas say they are alive, so
// that each can tell its share of the shards.
const presenceLabel = "etcd.raftsman.io/replica"

// keepPresence renews this replica's presence Lease until ctx ends, then
// deletes it so that the others take their larger share at once.
func (r *Runner) keepPresence(ctx context.Context) {
	name := "raftsman-replica-" + r.Identity
	leases := r.Client.CoordinationV1().Leases(r.Namespace)
	renew := func() {
		now := metav1.NewMicroTime(time.Now())
		seconds := int32(r.LeaseDuration.Seconds())
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace, Labels: map[string]string{presenceLabel: "true"}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &r.Identity, LeaseDurationSeconds: &seconds, RenewTime: &now}}
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		} else if err == nil {
			l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, &seconds
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			r.Log.Info("Cannot renew this replica's presence", "error", err.Error())
		}
	}
	renew()
	tick := time.NewTicker(r.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = leases.Delete(dctx, name, metav1.DeleteOptions{})
			return
		case <-tick.C:
			renew()
		}
	}
}

// liveReplicas counts the replicas whose presence Lease is fresh.
func (r *Runner) liveReplicas(ctx context.Context, fresh bool) int {
	r.mu.Lock()
	if !fresh && time.Since(r.liveAt) < r.RetryPeriod {
		n := r.live
		r.mu.Unlock()
		return n
	}
	r.mu.Unlock()
	list, err := r.Client.CoordinationV1().Leases(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: presenceLabel + "=true"})
	n := 1
	if err == nil {
		n = 0
		for _, l := range list.Items {
			if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
				time.Since(l.Spec.RenewTime.Time) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
				n++
			}
		}
		n = max(n, 1)
	}
	r.mu.Lock()
	r.live, r.liveAt = n, time.Now()
	r.mu.Unlock()
	return n
}

// shouldHandOver says whether shard i should go to another replica: this
// replica holds more than its share (the shards divided by the live
// replicas, rounded up), and i is the highest shard it holds, so that one
// shard moves at a time.
func (r *Runner) shouldHandOver(ctx context.Context, i int) bool {
	if r.NoLeases {
		return false
	}
	held := r.Held()
	over := func(live int) bool {
		share := (r.Shards + live - 1) / live
		return len(held) > share && held[len(held)-1] == i
	}
	// A cached count may still include a replica that just left (and
	// whose shards this one is taking over): check afresh before giving a
	// shard away.
	return over(r.liveReplicas(ctx, false)) && over(r.liveReplicas(ctx, true))
}

func (r *Runner) exit(code int) {
	if r.Exit != nil {
		r.Exit(code)
		return
	}
	os.Exit(code)
}
