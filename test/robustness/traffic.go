package robustness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClientFactory makes a new client with its own connection. Each worker and
// the watch get one, so a fault on one connection stays on that connection.
type ClientFactory func() (*clientv3.Client, error)

// NewClientFactory returns a factory for cfg as it is, TLS and all: the e2e
// scenarios prepare it with the cluster's client Service and client certificate.
func NewClientFactory(cfg clientv3.Config) ClientFactory {
	return func() (*clientv3.Client, error) { return clientv3.New(cfg) }
}

// TrafficConfig bounds and shapes a run. Zero fields take the defaults below.
type TrafficConfig struct {
	NewClient ClientFactory
	// Prefix is where the keys live. Use a fresh one per run so no earlier
	// value can be mistaken for one of this run's.
	Prefix string
	// Clients is the number of concurrent workers, each with its own client; 4.
	Clients int
	// Keys is the size of the key space; 10. Fewer keys mean more conflicts
	// (and more failed compare-and-sets), more keys mean fewer.
	Keys int
	// Duration and MaxOperations both end the run, whichever comes first;
	// 5 s and 20000.
	Duration      time.Duration
	MaxOperations int
	// Rate is the ceiling on operations per second over all workers; 200. The
	// checker's cost grows with the history, so keep it modest for long runs.
	Rate float64
	// RequestTimeout bounds each call; 2 s. A write that hits it is indeterminate.
	RequestTimeout time.Duration
	// Seed makes the choice of operations repeatable (the outcomes are not).
	Seed uint64
}

func (c *TrafficConfig) defaults() {
	if c.Prefix == "" {
		c.Prefix = fmt.Sprintf("/robustness/%d/", time.Now().UnixNano())
	}
	if c.Clients <= 0 {
		c.Clients = 4
	}
	if c.Keys <= 0 {
		c.Keys = 10
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.MaxOperations <= 0 {
		c.MaxOperations = 20000
	}
	if c.Rate <= 0 {
		c.Rate = 200
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 2 * time.Second
	}
}

// Run sends traffic until cfg.Duration has passed, cfg.MaxOperations were
// made, or ctx ends, and returns what every worker saw. Calls in flight at the
// end run to their own timeout so that they are recorded with an outcome
// rather than cut off. The error is for a run that could not start: no client,
// or no initial read.
func Run(ctx context.Context, cfg TrafficConfig) (*History, error) {
	cfg.defaults()
	if cfg.NewClient == nil {
		return nil, errors.New("traffic: no client factory")
	}
	clients := make([]*clientv3.Client, 0, cfg.Clients)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for i := range cfg.Clients {
		c, err := cfg.NewClient()
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		clients = append(clients, c)
	}

	h := &History{Prefix: cfg.Prefix, Clients: cfg.Clients}
	rev, initial, err := readPrefix(ctx, clients[0], cfg.Prefix, cfg.RequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("initial read of %s: %w", cfg.Prefix, err)
	}
	h.StartRevision, h.Initial = rev, initial

	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%skey-%03d", cfg.Prefix, i)
	}
	for _, w := range runWorkers(ctx, cfg, clients, keys) {
		h.Operations = append(h.Operations, w.ops...)
		h.FailedReads += w.failedReads
		h.RejectedWrites += w.rejectedWrites
	}
	slices.SortStableFunc(h.Operations, func(a, b Operation) int { return cmp.Compare(a.Call, b.Call) })
	return h, nil
}

// runWorkers runs a worker per client on keys until the run ends, and
// returns them with what each saw.
func runWorkers(ctx context.Context, cfg TrafficConfig, clients []*clientv3.Client, keys []string) []*worker {
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	limiter := rate.NewLimiter(rate.Limit(cfg.Rate), 1)
	var budget atomic.Int64
	budget.Store(int64(cfg.MaxOperations))
	start := time.Now()

	workers := make([]*worker, cfg.Clients)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{
			id: i, client: clients[i], keys: keys, start: start, timeout: cfg.RequestTimeout,
			rand: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), seen: map[string]KV{},
		}
		workers[i] = w
		wg.Go(func() {
			for runCtx.Err() == nil && budget.Add(-1) >= 0 {
				if limiter.Wait(runCtx) != nil {
					return
				}
				// The call's own context is not runCtx: the end of the run
				// should not turn calls in flight into indeterminate ones.
				w.step(ctx)
			}
		})
	}
	wg.Wait()
	return workers
}

// ReadFinal reads the whole prefix with a linearizable range, retrying for at
// most timeout: after faults the cluster may need a moment to elect a leader.
func ReadFinal(ctx context.Context, client *clientv3.Client, prefix string, timeout time.Duration) (*FinalState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 100 && ctx.Err() == nil; attempt++ {
		rev, kvs, err := readPrefix(ctx, client, prefix, 2*time.Second)
		if err == nil {
			return &FinalState{Revision: rev, KVs: kvs}, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("final read of %s: %w", prefix, errors.Join(lastErr, ctx.Err()))
}

func readPrefix(ctx context.Context, client *clientv3.Client, prefix string, timeout time.Duration) (int64, map[string]KV, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, nil, err
	}
	kvs := make(map[string]KV, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs[string(kv.Key)] = KV{Value: string(kv.Value), ModRevision: kv.ModRevision}
	}
	return resp.Header.Revision, kvs, nil
}

type worker struct {
	id      int
	client  *clientv3.Client
	keys    []string
	start   time.Time
	timeout time.Duration
	rand    *rand.Rand
	seq     int
	// seen is the last state of each key this worker observed; compare-and-set
	// guesses from it, so some guesses are right and some are stale.
	seen map[string]KV

	ops            []Operation
	failedReads    int
	rejectedWrites int
}

func (w *worker) now() int64 { return time.Since(w.start).Nanoseconds() }

func (w *worker) next() Request {
	key := w.keys[w.rand.IntN(len(w.keys))]
	w.seq++
	value := fmt.Sprintf("c%d-%d", w.id, w.seq)
	switch n := w.rand.IntN(100); {
	case n < 40:
		return Request{Kind: OpGet, Key: key}
	case n < 65:
		return Request{Kind: OpPut, Key: key, Value: value}
	case n < 75:
		return Request{Kind: OpDelete, Key: key}
	default:
		r := Request{Kind: OpTxn, Key: key, Value: value, Compare: CompareModRevision}
		if kv, ok := w.seen[key]; ok {
			r.ExpectedModRevision = kv.ModRevision
			if w.rand.IntN(2) == 0 {
				r.Compare, r.ExpectedValue = CompareValue, kv.Value
			}
		}
		return r
	}
}

func (w *worker) step(ctx context.Context) {
	req := w.next()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	op := Operation{Client: w.id, Request: req, Call: w.now()}
	resp, err := w.do(ctx, req)
	op.Return = w.now()
	if err != nil {
		switch {
		case req.Kind == OpGet:
			w.failedReads++
			return
		case definitelyNotApplied(err):
			w.rejectedWrites++
			return
		}
		op.Indeterminate, op.Error = true, err.Error()
		w.ops = append(w.ops, op)
		delete(w.seen, req.Key)
		return
	}
	op.Response = resp
	w.ops = append(w.ops, op)
	switch {
	case req.Kind == OpPut || (req.Kind == OpTxn && resp.Succeeded):
		w.seen[req.Key] = KV{Value: req.Value, ModRevision: resp.Revision}
	case resp.Found:
		w.seen[req.Key] = resp.KV
	default:
		delete(w.seen, req.Key)
	}
}

func (w *worker) do(ctx context.Context, req Request) (Response, error) {
	switch req.Kind {
	case OpGet:
		resp, err := w.client.Get(ctx, req.Key)
		if err != nil {
			return Response{}, err
		}
		r := Response{Revision: resp.Header.Revision}
		if len(resp.Kvs) > 0 {
			r.Found = true
			r.KV = KV{Value: string(resp.Kvs[0].Value), ModRevision: resp.Kvs[0].ModRevision}
		}
		return r, nil
	case OpPut:
		resp, err := w.client.Put(ctx, req.Key, req.Value)
		if err != nil {
			return Response{}, err
		}
		return Response{Revision: resp.Header.Revision}, nil
	case OpDelete:
		resp, err := w.client.Delete(ctx, req.Key)
		if err != nil {
			return Response{}, err
		}
		return Response{Revision: resp.Header.Revision, Deleted: resp.Deleted}, nil
	case OpTxn:
		cmp := clientv3.Compare(clientv3.ModRevision(req.Key), "=", req.ExpectedModRevision)
		if req.Compare == CompareValue {
			cmp = clientv3.Compare(clientv3.Value(req.Key), "=", req.ExpectedValue)
		}
		resp, err := w.client.Txn(ctx).If(cmp).
			Then(clientv3.OpPut(req.Key, req.Value)).
			Else(clientv3.OpGet(req.Key)).Commit()
		if err != nil {
			return Response{}, err
		}
		r := Response{Revision: resp.Header.Revision, Succeeded: resp.Succeeded}
		if !resp.Succeeded && len(resp.Responses) == 1 {
			if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
				r.Found = true
				r.KV = KV{Value: string(kvs[0].Value), ModRevision: kvs[0].ModRevision}
			}
		}
		return r, nil
	}
	return Response{}, fmt.Errorf("unknown operation %q", req.Kind)
}

// definitelyNotApplied reports whether err proves that a write was refused
// before it could be applied. Everything else (deadline, Unavailable, a
// connection that broke after sending) leaves the outcome open.
func definitelyNotApplied(err error) bool {
	code := codes.Unknown
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if s, ok := status.FromError(err); ok {
		code = s.Code()
	}
	switch code {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated:
		return true
	}
	return false
}
