package etcdsim

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/raftsman/raftsman/pkg/etcd"
)

// Factory is the operator's etcd.Factory (the real one, in the benchmark)
// with each endpoint, a member's or the client Service's URL whose DNS name
// does not resolve on this host, rewritten to the loopback address of the
// simulated member that serves it: https://<member>.<peer service>...:2379
// becomes https://127.0.0.1:<port>. The client still checks the member's
// certificate against the cluster's CA, for the name 127.0.0.1 (the serving
// certificate the operator issues covers 127.0.0.1 and ::1 besides the
// member's DNS names); pkg/etcd has no way to dial one address while
// checking another name.
type Factory struct {
	etcd.Factory
	r *Resolver

	mu sync.Mutex
	// keys are those of the clients given and not forgotten, for Close.
	keys map[string]struct{}
}

// NewFactory wraps inner with the addresses of the simulator at ctl.
func NewFactory(inner etcd.Factory, ctl *Control) *Factory {
	return &Factory{Factory: inner, r: &Resolver{ctl: ctl, addrs: map[string]string{}}, keys: map[string]struct{}{}}
}

// Get implements etcd.Factory.
func (f *Factory) Get(ctx context.Context, key string, endpoints []string, creds etcd.Credentials) (etcd.Client, error) {
	f.mu.Lock()
	f.keys[key] = struct{}{}
	f.mu.Unlock()
	eps := make([]string, len(endpoints))
	for i, ep := range endpoints {
		eps[i] = f.r.Rewrite(ctx, ep)
	}
	c, err := f.Factory.Get(ctx, key, eps, creds)
	if err != nil {
		return nil, err
	}
	return &client{Client: c, r: f.r}, nil
}

// Forget implements etcd.Factory.
func (f *Factory) Forget(key string) {
	f.mu.Lock()
	delete(f.keys, key)
	f.mu.Unlock()
	f.Factory.Forget(key)
}

// Close forgets every client, which closes their connections, once the
// operator that used them has stopped: the real factory has no Close of its
// own, and an operator process measured after this one would otherwise
// find the simulator still holding a connection per member for it.
func (f *Factory) Close() {
	f.mu.Lock()
	keys := f.keys
	f.keys = map[string]struct{}{}
	f.mu.Unlock()
	for key := range keys {
		f.Factory.Forget(key)
	}
}

// client rewrites the endpoints of the calls to one member.
type client struct {
	etcd.Client
	r *Resolver
}

func (c *client) Status(ctx context.Context, endpoint string) (etcd.Status, error) {
	return c.Client.Status(ctx, c.r.Rewrite(ctx, endpoint))
}

func (c *client) MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error {
	return c.Client.MoveLeader(ctx, c.r.Rewrite(ctx, leaderEndpoint), to)
}

func (c *client) Defragment(ctx context.Context, endpoint string) error {
	return c.Client.Defragment(ctx, c.r.Rewrite(ctx, endpoint))
}

// Unreachable is the address an endpoint that nothing serves yet is
// rewritten to: a loopback port nobody listens on, so that a connection is
// refused as one to a name that does not resolve (yet) fails, without a DNS
// query leaving the host.
const Unreachable = "127.0.0.1:1"

// Resolver maps client URLs to the simulator's addresses, asking it once
// per URL that it serves: a member keeps its port.
type Resolver struct {
	ctl   *Control
	mu    sync.RWMutex
	addrs map[string]string
}

// Rewrite is endpoint with its host:port replaced by the address that
// serves it, or by Unreachable.
func (r *Resolver) Rewrite(ctx context.Context, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return endpoint
	}
	r.mu.RLock()
	addr, ok := r.addrs[endpoint]
	r.mu.RUnlock()
	if !ok {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		a, found, err := r.ctl.Resolve(rctx, endpoint)
		cancel()
		if err == nil && found {
			addr, ok = a, true
			r.mu.Lock()
			r.addrs[endpoint] = a
			r.mu.Unlock()
		}
	}
	if !ok {
		addr = Unreachable
	}
	return u.Scheme + "://" + addr
}
