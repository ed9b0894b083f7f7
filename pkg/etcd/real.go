package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClientFactory makes real etcd clients and keeps one per cluster.
type ClientFactory struct {
	// DialTimeout bounds connecting to an endpoint.
	DialTimeout time.Duration

	mu      sync.Mutex
	clients map[string]*realClient
}

var _ Factory = (*ClientFactory)(nil)

// NewClientFactory returns a factory of real clients.
func NewClientFactory() *ClientFactory {
	return &ClientFactory{DialTimeout: 3 * time.Second, clients: map[string]*realClient{}}
}

func (f *ClientFactory) config(endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          f.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		AutoSyncInterval:     0,
		Logger:               zap.NewNop(),
	}
}

// Get implements Factory.
func (f *ClientFactory) Get(_ context.Context, key string, endpoints []string) (Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	if c, ok := f.clients[key]; ok {
		if !slices.Equal(c.endpoints, eps) {
			c.cli.SetEndpoints(eps...)
			c.endpoints = eps
		}
		return c, nil
	}
	cli, err := clientv3.New(f.config(eps))
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", key, err)
	}
	c := &realClient{cli: cli, endpoints: eps, factory: f}
	f.clients[key] = c
	return c, nil
}

// Forget implements Factory.
func (f *ClientFactory) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		_ = c.cli.Close()
		delete(f.clients, key)
	}
}

type realClient struct {
	cli       *clientv3.Client
	endpoints []string
	factory   *ClientFactory
}

func (c *realClient) MemberList(ctx context.Context) (uint64, []Member, error) {
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return 0, nil, mapError(err)
	}
	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return resp.Header.ClusterId, out, nil
}

func (c *realClient) MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error) {
	resp, err := c.cli.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, mapError(err)
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner}, nil
}

func (c *realClient) MemberPromote(ctx context.Context, id uint64) error {
	_, err := c.cli.MemberPromote(ctx, id)
	return mapError(err)
}

func (c *realClient) MemberRemove(ctx context.Context, id uint64) error {
	_, err := c.cli.MemberRemove(ctx, id)
	return mapError(err)
}

func (c *realClient) MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error {
	// MoveLeader must reach the leader itself, so it gets a client of its own.
	cli, err := clientv3.New(c.factory.config([]string{leaderEndpoint}))
	if err != nil {
		return fmt.Errorf("etcd client for %s: %w", leaderEndpoint, err)
	}
	defer func() { _ = cli.Close() }()
	_, err = cli.MoveLeader(ctx, to)
	return mapError(err)
}

func (c *realClient) Status(ctx context.Context, endpoint string) (Status, error) {
	resp, err := c.cli.Status(ctx, endpoint)
	if err != nil {
		return Status{}, mapError(err)
	}
	return Status{
		MemberID:  resp.Header.MemberId,
		Leader:    resp.Leader,
		Version:   resp.Version,
		IsLearner: resp.IsLearner,
		RaftIndex: resp.RaftIndex,
		DBSize:    resp.DbSize,
		Errors:    resp.Errors,
	}, nil
}

// mapError wraps etcd's answers in this package's errors so callers can use
// errors.Is, keeping etcd's own message.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	switch ev := rpctypes.Error(err); {
	case errors.Is(ev, rpctypes.ErrUnhealthy), errors.Is(ev, rpctypes.ErrMemberNotEnoughStarted),
		errors.Is(ev, rpctypes.ErrMemberLearnerNotReady), errors.Is(ev, rpctypes.ErrTooManyLearners),
		errors.Is(ev, rpctypes.ErrNoLeader), errors.Is(ev, rpctypes.ErrLeaderChanged),
		errors.Is(ev, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(ev, rpctypes.ErrTimeoutDueToConnectionLost):
		return fmt.Errorf("%w: %v", ErrNotYet, ev)
	case errors.Is(ev, rpctypes.ErrMemberNotFound):
		return fmt.Errorf("%w: %v", ErrMemberNotFound, ev)
	case errors.Is(ev, rpctypes.ErrMemberNotLearner):
		return fmt.Errorf("%w: %v", ErrNotLearner, ev)
	case errors.Is(ev, rpctypes.ErrPeerURLExist):
		return fmt.Errorf("%w: %v", ErrPeerURLExists, ev)
	}
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return err
}
