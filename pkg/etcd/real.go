package etcd

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// ClientFactory makes real etcd clients and keeps one per cluster.
//
// A cluster's client has one connection per member, made on first use:
// the questions a pass asks (MemberList, each member's Status, the alarms,
// and Defragment and MoveLeader) go over them. etcd's balanced client, one
// more connection to every member, is opened only for the calls that change
// something (membership, alarms disarmed, compaction, downgrade,
// authentication and users). Both are closed once unused for IdleTimeout,
// and opened again by the next call that needs them: a calm cluster, asked
// every few minutes, holds no connection between its polls.
type ClientFactory struct {
	// DialTimeout bounds connecting to an endpoint.
	DialTimeout time.Duration
	// IdleTimeout is how long a cluster's balanced client, and each of its
	// member connections, stays open after its last call; zero keeps them
	// open until the cluster is forgotten.
	IdleTimeout time.Duration

	mu      sync.Mutex
	clients map[string]*realClient
}

var _ Factory = (*ClientFactory)(nil)

// NewClientFactory returns a factory of real clients.
func NewClientFactory() *ClientFactory {
	return &ClientFactory{DialTimeout: 3 * time.Second, IdleTimeout: 2 * time.Minute, clients: map[string]*realClient{}}
}

// Keepalive of every connection: etcd's client defaults. Without a call
// under way (PermitWithoutStream false) an idle connection sends no ping.
const (
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 5 * time.Second
)

// dialOptions are the gRPC options of both the balanced client and the
// members' own connections.
func dialOptions(dialTimeout time.Duration) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: dialTimeout}),
		// gRPC reads through a 32 KiB buffer of its own, kept for the
		// connection's life on a TLS connection (gRPC 1.83 pools read
		// buffers only on plain TCP connections): TLS already reads whole
		// records into its own buffer, and the answers here are small.
		// The 32 KiB write buffer is shared by default in gRPC 1.83, which
		// deprecates WithSharedWriteBuffer: a connection holds one only
		// while it writes.
		grpc.WithReadBufferSize(0),
	}
}

// reconnectBackoff is how often a connection to a member that went away is
// tried again. gRPC's default doubles up to 2 minutes: a member whose Pod
// restarts (a rollout, a quorum recovery forcing it) was seen answering
// again only at the next try, up to 20 s after it did. Capped at 3 s, a
// member that is gone for good costs one dial every 3 s until it is removed.
var reconnectBackoff = backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second}

// Get implements Factory. It dials nothing: connections are made by the
// calls that need them.
func (f *ClientFactory) Get(_ context.Context, key string, endpoints []string, creds Credentials) (Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	sum := creds.fingerprint()
	if c, ok := f.clients[key]; ok {
		if c.creds == sum {
			c.setEndpoints(eps)
			return c, nil
		}
		// Renewed certificates: connections already open keep working, but
		// the next ones must present the new certificate.
		c.close()
		delete(f.clients, key)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("etcd client for %s: no endpoint", key)
	}
	tlsConfig, err := creds.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", key, err)
	}
	c := &realClient{endpoints: eps, creds: sum, tls: tlsConfig, dialTimeout: f.DialTimeout, idleTimeout: f.IdleTimeout}
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
		// The parsed leaf would be kept for the cluster's life (2.5 KiB
		// with an ECDSA certificate); a handshake that needs it parses it
		// again, and a calm cluster makes one a poll at most.
		cert.Leaf = nil
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

// errClosed: a call on a client its factory has closed (cluster forgotten,
// credentials renewed) while the caller still held it.
var errClosed = errors.New("etcd client closed: its cluster was forgotten or its credentials renewed")

type realClient struct {
	creds [32]byte
	tls   *tls.Config
	// tlsCreds are the member connections' credentials, made once from
	// tls (each holds a copy of the configuration).
	tlsCreds    grpccreds.TransportCredentials
	dialTimeout time.Duration
	idleTimeout time.Duration

	mu        sync.Mutex
	endpoints []string
	closed    bool

	// conns are the connections to single members, by endpoint, made on
	// first use and kept while used: etcd's client dials a new one for
	// each call to one member, which cost a TLS handshake per member and
	// health check. Each is closed once no call has used it for
	// idleTimeout (sweep), as are those of endpoints the cluster no longer
	// has. sweepArmed says whether sweep will fire.
	conns      map[string]*memberConn
	sweep      *time.Timer
	sweepArmed bool
	// answered is the endpoint that answered MemberList or Alarms last;
	// failing are those whose last try at either failed, asked last.
	answered string
	failing  map[string]bool

	// cli is etcd's balanced client, for changes, while open; inUse counts
	// the calls using it and lastUse is when the last one ended. idle
	// closes it IdleTimeout after that.
	cli     *clientv3.Client
	inUse   int
	lastUse time.Time
	idle    *time.Timer
}

// balanced returns etcd's balanced client, opening it if it is not, and
// the function to call when done with it.
func (c *realClient) balanced() (*clientv3.Client, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, errClosed
	}
	if c.cli == nil {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:            slices.Clone(c.endpoints),
			TLS:                  c.tls,
			DialTimeout:          c.dialTimeout,
			DialKeepAliveTime:    keepAliveTime,
			DialKeepAliveTimeout: keepAliveTimeout,
			AutoSyncInterval:     0,
			Logger:               zap.NewNop(),
			DialOptions:          dialOptions(c.dialTimeout),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("etcd client: %w", err)
		}
		// Leave gRPC's idle mode now, under c.mu: that builds etcd's
		// endpoint resolver, whose fields SetEndpoints (also under c.mu)
		// writes without a lock of their own. Left to the first call, the
		// build would race with a SetEndpoints of the factory's Get. The
		// client is opened for a call anyway.
		cli.ActiveConnection().Connect()
		c.cli = cli
	}
	c.inUse++
	return c.cli, c.release, nil
}

// release ends a use of the balanced client: the last one starts its idle
// time.
func (c *realClient) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse--
	c.lastUse = time.Now()
	if c.inUse > 0 || c.cli == nil || c.idleTimeout <= 0 {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(c.idleTimeout, c.closeIdle)
		return
	}
	c.idle.Reset(c.idleTimeout)
}

// closeIdle closes the balanced client if no call has used it for the
// idle timeout.
func (c *realClient) closeIdle() {
	c.mu.Lock()
	if c.cli == nil || c.inUse > 0 {
		// A use under way starts the idle time again when it ends.
		c.mu.Unlock()
		return
	}
	if d := c.idleTimeout - time.Since(c.lastUse); d > 0 {
		c.idle.Reset(d)
		c.mu.Unlock()
		return
	}
	cli := c.cli
	c.cli = nil
	c.mu.Unlock()
	_ = cli.Close()
}

// memberConn is the connection kept for one member's endpoint, the calls
// using it and when the last one ended.
type memberConn struct {
	cc      *grpc.ClientConn
	inUse   int
	lastUse time.Time
}

// conn is the connection kept for one member's endpoint, and the function
// to call when done with it. gRPC connects it at its first call, not here.
func (c *realClient) conn(endpoint string) (*grpc.ClientConn, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, errClosed
	}
	if mc, ok := c.conns[endpoint]; ok {
		mc.inUse++
		return mc.cc, func() { c.releaseConn(mc) }, nil
	}
	target, secure := memberTarget(endpoint, c.tls != nil)
	creds := insecure.NewCredentials()
	if secure {
		if c.tlsCreds == nil {
			c.tlsCreds = grpccreds.NewTLS(c.tls)
		}
		creds = c.tlsCreds
	}
	opts := append(dialOptions(c.dialTimeout),
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepAliveTime, Timeout: keepAliveTimeout}),
		// A call waits, within its deadline, for a connection being made
		// again (etcd's client retries such calls): otherwise a member that
		// hung and came back would be refused until gRPC's next try.
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
	)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	if c.conns == nil {
		c.conns = map[string]*memberConn{}
	}
	mc := &memberConn{cc: cc, inUse: 1}
	c.conns[endpoint] = mc
	return cc, func() { c.releaseConn(mc) }, nil
}

// releaseConn ends a call's use of a member connection; once none uses it,
// sweep closes it after the idle timeout. (gRPC's own idle mode would keep
// the connection's three goroutines and most of its memory.)
func (c *realClient) releaseConn(mc *memberConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mc.inUse--
	mc.lastUse = time.Now()
	if mc.inUse > 0 || c.idleTimeout <= 0 || c.closed || c.sweepArmed {
		// An armed sweep fires before this use's idle time ends, and
		// arms itself again for what is left.
		return
	}
	c.sweepArmed = true
	if c.sweep == nil {
		c.sweep = time.AfterFunc(c.idleTimeout, c.closeIdleConns)
		return
	}
	c.sweep.Reset(c.idleTimeout)
}

// closeIdleConns closes the member connections no call has used for the
// idle timeout, and arms the sweep again for the first of the others.
func (c *realClient) closeIdleConns() {
	c.mu.Lock()
	var drop []*grpc.ClientConn
	next := time.Duration(0)
	for ep, mc := range c.conns {
		if mc.inUse > 0 {
			continue // its release arms the sweep if need be
		}
		left := c.idleTimeout - time.Since(mc.lastUse)
		if left <= 0 {
			drop = append(drop, mc.cc)
			delete(c.conns, ep)
			continue
		}
		if next == 0 || left < next {
			next = left
		}
	}
	c.sweepArmed = next > 0 && !c.closed
	if c.sweepArmed {
		c.sweep.Reset(next)
	}
	c.mu.Unlock()
	for _, cc := range drop {
		_ = cc.Close()
	}
}

// memberTarget is the gRPC target of an endpoint and whether it takes TLS,
// as etcd's client reads endpoints: an http:// or https:// URL, or an
// address without a scheme, which takes TLS when there are credentials.
// The host is resolved at each connection, as etcd's client does.
func memberTarget(endpoint string, haveTLS bool) (string, bool) {
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return "passthrough:///" + u.Host, u.Scheme == "https"
	}
	if strings.HasPrefix(endpoint, "unix:") {
		return endpoint, haveTLS
	}
	return "passthrough:///" + endpoint, haveTLS
}

// setEndpoints gives the client the cluster's endpoints, sorted.
func (c *realClient) setEndpoints(eps []string) {
	c.mu.Lock()
	if slices.Equal(c.endpoints, eps) {
		c.mu.Unlock()
		return
	}
	c.endpoints = eps
	if c.cli != nil {
		c.cli.SetEndpoints(eps...)
	}
	c.mu.Unlock()
	c.keepConns(eps)
}

// keepConns closes the member connections of endpoints not in keep.
func (c *realClient) keepConns(keep []string) {
	c.mu.Lock()
	var drop []*grpc.ClientConn
	for ep, mc := range c.conns {
		if !slices.Contains(keep, ep) {
			drop = append(drop, mc.cc)
			delete(c.conns, ep)
		}
	}
	for ep := range c.failing {
		if !slices.Contains(keep, ep) {
			delete(c.failing, ep)
		}
	}
	c.mu.Unlock()
	for _, cc := range drop {
		_ = cc.Close()
	}
}

// close closes the client and its member connections; it answers no call
// after.
func (c *realClient) close() {
	c.mu.Lock()
	c.closed = true
	cli := c.cli
	c.cli = nil
	if c.idle != nil {
		c.idle.Stop()
	}
	if c.sweep != nil {
		c.sweep.Stop()
	}
	c.mu.Unlock()
	c.keepConns(nil)
	if cli != nil {
		_ = cli.Close()
	}
}

// minTry is the least time askAny gives one member; noDeadlineTry is each
// member's time when the caller set no deadline.
const (
	minTry        = 500 * time.Millisecond
	noDeadlineTry = 5 * time.Second
)

// askAny makes call to one member after another, over their own
// connections, until one answers: first those after the member that
// answered last, those whose last try failed at the end. A member may fail
// where another answers: a learner refuses ("rpc not supported for
// learner"), a member without a leader says so, one cut off from the
// others waits for a quorum until its deadline, one may be down. Each try
// gets the time left divided by the members left (at least minTry), so
// that one that hangs leaves the others time. If none answers, the last
// error is returned, mapped.
func (c *realClient) askAny(ctx context.Context, call func(context.Context, *grpc.ClientConn) error) error {
	order, err := c.order()
	if err != nil {
		return err
	}
	var last error
	for i, ep := range order {
		if ctx.Err() != nil {
			break
		}
		cc, release, err := c.conn(ep)
		if err != nil {
			if errors.Is(err, errClosed) {
				return err
			}
			last = err
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, tryTime(ctx, len(order)-i))
		err = call(tctx, cc)
		cancel()
		release()
		if err == nil {
			c.tried(ep, true)
			return nil
		}
		last = err
		if ctx.Err() == nil {
			// The member failed (not the caller's deadline, which ends
			// the loop).
			c.tried(ep, false)
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return mapError(last)
}

// tryTime is the time one member gets of what is left of ctx, left
// members being still to try.
func tryTime(ctx context.Context, left int) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return noDeadlineTry
	}
	return max(time.Until(dl)/time.Duration(left), minTry)
}

// order is the endpoints in the order askAny tries them: after the one
// that answered last, those whose connection is open first (a call on an
// idle one costs a new TLS connection), those whose last try failed last.
func (c *realClient) order() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	n := len(c.endpoints)
	if n == 0 {
		return nil, fmt.Errorf("%w: no endpoint", ErrUnreachable)
	}
	start := 0
	if i := slices.Index(c.endpoints, c.answered); i >= 0 {
		start = i + 1
	}
	order := make([]string, 0, n)
	var closed, failing []string
	for k := range n {
		ep := c.endpoints[(start+k)%n]
		switch mc, ok := c.conns[ep]; {
		case c.failing[ep]:
			failing = append(failing, ep)
		case ok && mc.cc.GetState() == connectivity.Ready:
			order = append(order, ep)
		default:
			closed = append(closed, ep)
		}
	}
	return append(append(order, closed...), failing...), nil
}

// tried records whether a member answered askAny.
func (c *realClient) tried(ep string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.answered = ep
		delete(c.failing, ep)
		return
	}
	if !slices.Contains(c.endpoints, ep) {
		return
	}
	if c.failing == nil {
		c.failing = map[string]bool{}
	}
	c.failing[ep] = true
}

// MemberList asks the members in turn (askAny) with a linearizable
// request, as etcd's client does: the operator decides membership on it.
func (c *realClient) MemberList(ctx context.Context) (uint64, []Member, error) {
	var resp *pb.MemberListResponse
	err := c.askAny(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		var err error
		resp, err = pb.NewClusterClient(cc).MemberList(ctx, &pb.MemberListRequest{Linearizable: true})
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	out := make([]Member, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
	}
	return resp.Header.ClusterId, out, nil
}

func (c *realClient) MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error) {
	cli, done, err := c.balanced()
	if err != nil {
		return Member{}, err
	}
	defer done()
	resp, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, mapError(err)
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner}, nil
}

func (c *realClient) MemberPromote(ctx context.Context, id uint64) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	_, err = cli.MemberPromote(ctx, id)
	return mapError(err)
}

func (c *realClient) MemberRemove(ctx context.Context, id uint64) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	_, err = cli.MemberRemove(ctx, id)
	return mapError(err)
}

// member is the maintenance API of one member, on the connection kept for
// its endpoint, and the function to call when done with it.
func (c *realClient) member(endpoint string) (pb.MaintenanceClient, func(), error) {
	cc, release, err := c.conn(endpoint)
	if err != nil {
		return nil, nil, err
	}
	return pb.NewMaintenanceClient(cc), release, nil
}

func (c *realClient) MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error {
	// MoveLeader must reach the leader itself.
	m, release, err := c.member(leaderEndpoint)
	if err != nil {
		return mapError(err)
	}
	defer release()
	_, err = m.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: to})
	return mapError(err)
}

func (c *realClient) Status(ctx context.Context, endpoint string) (Status, error) {
	m, release, err := c.member(endpoint)
	if err != nil {
		return Status{}, mapError(err)
	}
	defer release()
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

// Alarms asks the members in turn (askAny).
func (c *realClient) Alarms(ctx context.Context) ([]Alarm, error) {
	var resp *pb.AlarmResponse
	err := c.askAny(ctx, func(ctx context.Context, cc *grpc.ClientConn) error {
		var err error
		resp, err = pb.NewMaintenanceClient(cc).Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET, Alarm: pb.AlarmType_NONE})
		return err
	})
	if err != nil {
		return nil, err
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
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	_, err = cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(t)})
	return mapError(err)
}

func (c *realClient) Compact(ctx context.Context, rev int64) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	return mapError(err)
}

func (c *realClient) Defragment(ctx context.Context, endpoint string) error {
	m, release, err := c.member(endpoint)
	if err != nil {
		return mapError(err)
	}
	defer release()
	_, err = m.Defragment(ctx, &pb.DefragmentRequest{})
	return mapError(err)
}

func (c *realClient) Downgrade(ctx context.Context, action DowngradeAction, version string) (string, error) {
	a := map[DowngradeAction]clientv3.DowngradeAction{
		DowngradeValidate: clientv3.DowngradeValidate,
		DowngradeEnable:   clientv3.DowngradeEnable,
		DowngradeCancel:   clientv3.DowngradeCancel,
	}[action]
	cli, done, err := c.balanced()
	if err != nil {
		return "", err
	}
	defer done()
	resp, err := cli.Downgrade(ctx, a, version)
	if err != nil {
		return "", fmt.Errorf("downgrade %s %s: %w", action, version, mapError(err))
	}
	return resp.Version, nil
}

func (c *realClient) AuthEnabled(ctx context.Context) (bool, error) {
	cli, done, err := c.balanced()
	if err != nil {
		return false, err
	}
	defer done()
	resp, err := cli.AuthStatus(ctx)
	if err != nil {
		return false, mapError(err)
	}
	return resp.Enabled, nil
}

const rootName = "root"

func (c *realClient) EnableAuth(ctx context.Context, rootPassword string) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	if _, err := cli.RoleAdd(ctx, rootName); err != nil && !errors.Is(rpctypes.Error(err), rpctypes.ErrRoleAlreadyExist) {
		return fmt.Errorf("add the root role: %w", mapError(err))
	}
	switch _, err := cli.UserAdd(ctx, rootName, rootPassword); {
	case errors.Is(rpctypes.Error(err), rpctypes.ErrUserAlreadyExist):
		if err := setRootPassword(ctx, cli, rootPassword); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("add the root user: %w", mapError(err))
	}
	if _, err := cli.UserGrantRole(ctx, rootName, rootName); err != nil {
		return fmt.Errorf("grant the root role: %w", mapError(err))
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enable authentication: %w", mapError(err))
	}
	return nil
}

func (c *realClient) SetRootPassword(ctx context.Context, password string) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	return setRootPassword(ctx, cli, password)
}

func setRootPassword(ctx context.Context, cli *clientv3.Client, password string) error {
	if _, err := cli.UserChangePassword(ctx, rootName, password); err != nil {
		return fmt.Errorf("change the root password: %w", mapError(err))
	}
	return nil
}

func (c *realClient) DisableAuth(ctx context.Context) error {
	cli, done, err := c.balanced()
	if err != nil {
		return err
	}
	defer done()
	if _, err := cli.AuthDisable(ctx); err != nil {
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
