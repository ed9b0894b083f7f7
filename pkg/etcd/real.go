package etcd

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
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

func (f *ClientFactory) config(endpoints []string, tlsConfig *tls.Config) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tlsConfig,
		DialTimeout:          f.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		AutoSyncInterval:     0,
		Logger:               zap.NewNop(),
		DialOptions:          []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: f.DialTimeout})},
	}
}

// reconnectBackoff is how often a connection to a member that went away is
// tried again. gRPC's default doubles up to 2 minutes: a member whose Pod
// restarts (a rollout, a quorum recovery forcing it) was seen answering
// again only at the next try, up to 20 s after it did. Capped at 3 s, a
// member that is gone for good costs one dial every 3 s until it is removed.
var reconnectBackoff = backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second}

// Get implements Factory.
func (f *ClientFactory) Get(_ context.Context, key string, endpoints []string, creds Credentials) (Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	sum := creds.fingerprint()
	if c, ok := f.clients[key]; ok {
		if c.creds == sum {
			if !slices.Equal(c.endpoints, eps) {
				c.cli.SetEndpoints(eps...)
				c.endpoints = eps
				c.keepConns(eps)
			}
			return c, nil
		}
		// Renewed certificates: connections already open keep working, but
		// the next ones must present the new certificate.
		c.close()
		delete(f.clients, key)
	}
	tlsConfig, err := creds.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", key, err)
	}
	cli, err := clientv3.New(f.config(eps, tlsConfig))
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", key, err)
	}
	c := &realClient{cli: cli, endpoints: eps, creds: sum}
	f.clients[key] = c
	return c, nil
}

func (c Credentials) fingerprint() [32]byte {
	h := sha256.New()
	for _, b := range [][]byte{c.CertPEM, c.KeyPEM, c.CAPEM} {
		_, _ = fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return [32]byte(h.Sum(nil))
}

func (c Credentials) TLSConfig() (*tls.Config, error) {
	if !c.TLS() {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAPEM) {
		return nil, errors.New("no CA certificate in the client credentials")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if len(c.CertPEM) > 0 {
		cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Forget implements Factory.
func (f *ClientFactory) Forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[key]; ok {
		c.close()
		delete(f.clients, key)
	}
}

type realClient struct {
	cli       *clientv3.Client
	endpoints []string
	creds     [32]byte

	// conns are the connections to single members (Status, Defragment,
	// MoveLeader), by endpoint, made once: etcd's client dials a new one
	// for each such call, which cost a TLS handshake per member and health
	// check. Those of endpoints the cluster no longer has are closed.
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// member is the maintenance API of one member, on the connection kept for
// its endpoint.
func (c *realClient) member(endpoint string) (pb.MaintenanceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.conns[endpoint]
	if !ok {
		var err error
		if cc, err = c.cli.Dial(endpoint); err != nil {
			return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
		}
		if c.conns == nil {
			c.conns = map[string]*grpc.ClientConn{}
		}
		c.conns[endpoint] = cc
	}
	return pb.NewMaintenanceClient(cc), nil
}

// keepConns closes the member connections of endpoints not in keep.
func (c *realClient) keepConns(keep []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ep, cc := range c.conns {
		if !slices.Contains(keep, ep) {
			_ = cc.Close()
			delete(c.conns, ep)
		}
	}
}

// close closes the client and its member connections.
func (c *realClient) close() {
	c.keepConns(nil)
	_ = c.cli.Close()
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
	// MoveLeader must reach the leader itself.
	m, err := c.member(leaderEndpoint)
	if err != nil {
		return mapError(err)
	}
	_, err = m.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: to})
	return mapError(err)
}

func (c *realClient) Status(ctx context.Context, endpoint string) (Status, error) {
	m, err := c.member(endpoint)
	if err != nil {
		return Status{}, mapError(err)
	}
	resp, err := m.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return Status{}, mapError(err)
	}
	st := Status{
		MemberID:         resp.Header.MemberId,
		Leader:           resp.Leader,
		Version:          resp.Version,
		IsLearner:        resp.IsLearner,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		Revision:         resp.Header.Revision,
		DBSize:           resp.DbSize,
		DBSizeInUse:      resp.DbSizeInUse,
		Errors:           resp.Errors,
		StorageVersion:   resp.StorageVersion,
	}
	if d := resp.DowngradeInfo; d != nil {
		st.Downgrade = DowngradeInfo{Enabled: d.Enabled, TargetVersion: d.TargetVersion}
	}
	return st, nil
}

func (c *realClient) Alarms(ctx context.Context) ([]Alarm, error) {
	resp, err := c.cli.AlarmList(ctx)
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

func (c *realClient) DisarmAlarm(ctx context.Context, a Alarm) error {
	t, ok := pb.AlarmType_value[a.Type]
	if !ok {
		return fmt.Errorf("unknown alarm %q", a.Type)
	}
	_, err := c.cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(t)})
	return mapError(err)
}

func (c *realClient) Compact(ctx context.Context, rev int64) error {
	_, err := c.cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	return mapError(err)
}

func (c *realClient) Defragment(ctx context.Context, endpoint string) error {
	m, err := c.member(endpoint)
	if err != nil {
		return mapError(err)
	}
	_, err = m.Defragment(ctx, &pb.DefragmentRequest{})
	return mapError(err)
}

func (c *realClient) Downgrade(ctx context.Context, action DowngradeAction, version string) (string, error) {
	a := map[DowngradeAction]clientv3.DowngradeAction{
		DowngradeValidate: clientv3.DowngradeValidate,
		DowngradeEnable:   clientv3.DowngradeEnable,
		DowngradeCancel:   clientv3.DowngradeCancel,
	}[action]
	resp, err := c.cli.Downgrade(ctx, a, version)
	if err != nil {
		return "", fmt.Errorf("downgrade %s %s: %w", action, version, mapError(err))
	}
	return resp.Version, nil
}

func (c *realClient) AuthEnabled(ctx context.Context) (bool, error) {
	resp, err := c.cli.AuthStatus(ctx)
	if err != nil {
		return false, mapError(err)
	}
	return resp.Enabled, nil
}

const rootName = "root"

func (c *realClient) EnableAuth(ctx context.Context, rootPassword string) error {
	if _, err := c.cli.RoleAdd(ctx, rootName); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("add the root role: %w", mapError(err))
	}
	switch _, err := c.cli.UserAdd(ctx, rootName, rootPassword); {
	case errors.Is(rpctypes.Error(err), rpctypes.ErrUserAlreadyExist):
		if err := c.SetRootPassword(ctx, rootPassword); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("add the root user: %w", mapError(err))
	}
	if _, err := c.cli.UserGrantRole(ctx, rootName, rootName); err != nil {
		return fmt.Errorf("grant the root role: %w", mapError(err))
	}
	if _, err := c.cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enable authentication: %w", mapError(err))
	}
	return nil
}

func (c *realClient) SetRootPassword(ctx context.Context, password string) error {
	if _, err := c.cli.UserChangePassword(ctx, rootName, password); err != nil {
		return fmt.Errorf("change the root password: %w", mapError(err))
	}
	return nil
}

func (c *realClient) DisableAuth(ctx context.Context) error {
	if _, err := c.cli.AuthDisable(ctx); err != nil {
		return fmt.Errorf("disable authentication: %w", mapError(err))
	}
	return nil
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
