// Package etcdsim is a lightweight etcd for the scale benchmark: each
// member is a TCP listener on 127.0.0.1 speaking etcd's gRPC API (the
// Cluster and Maintenance services) over TLS with the member's real serving
// certificate, and the operator's real client talks to it. It keeps no
// data: it answers the membership and status calls an operator makes, counts
// what each member listener sees, and can make chosen clusters hang as a
// paused etcd does.
//
// The simulator runs in a process of its own (Serve), so that what it holds
// is not counted in the operator's heap; the benchmark drives it over a small
// HTTP API on loopback (Control).
package etcdsim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Sim is the simulator: clusters of members, each started member serving on
// a listener of its own.
type Sim struct {
	done chan struct{}

	mu       sync.Mutex
	clusters map[string]*cluster
	// addrs maps a member's client URL, and a cluster's client Service URL,
	// to the address of a listener.
	addrs map[string]string
	// unimplemented counts the calls answered Unimplemented, by method.
	unimplemented map[string]int64
	// handshakeErrors counts failed TLS handshakes; lastHandshakeError
	// says why the last one failed.
	handshakeErrors    int64
	lastHandshakeError string
}

// New returns an empty simulator.
func New() *Sim {
	return &Sim{done: make(chan struct{}), clusters: map[string]*cluster{}, addrs: map[string]string{}, unimplemented: map[string]int64{}}
}

// Close stops every member.
func (s *Sim) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	var ms []*member
	for _, c := range s.clusters {
		c.mu.Lock()
		ms = append(ms, c.members...)
		c.mu.Unlock()
	}
	s.mu.Unlock()
	for _, m := range ms {
		m.stop()
	}
}

// cluster is one etcd cluster: its members in the order etcd lists them.
type cluster struct {
	sim *Sim
	key string
	id  uint64

	mu        sync.Mutex
	members   []*member
	raftIndex uint64
	// resumed is nil while the cluster answers; while it hangs, a channel
	// closed when it resumes.
	resumed chan struct{}
	// calls is when each method was first called, and waiters those who
	// wait for a first call, by method.
	calls   map[string]time.Time
	waiters map[string][]chan time.Time
}

// member is one member; it serves once started.
type member struct {
	cl        *cluster
	id        uint64
	name      string // empty until started, as etcd lists an unstarted member
	peerURL   string
	clientURL string
	learner   bool
	version   string

	lis  net.Listener
	srv  *grpc.Server
	addr string

	accepted, open, handshakes atomic.Int64
	reqMu                      sync.Mutex
	requests                   map[string]int64
}

// StartRequest starts a member's etcd, as its Pod's container would: a
// member of a new cluster (New) forms the cluster from InitialCluster, its
// --initial-cluster; any other joins the cluster that has it (added as a
// learner before).
type StartRequest struct {
	Cluster    string `json:"cluster"` // namespace/name
	Name       string `json:"name"`
	PeerURL    string `json:"peerURL"`
	ClientURL  string `json:"clientURL"`
	ServiceURL string `json:"serviceURL"` // the cluster's client Service, reaching any member
	Version    string `json:"version"`
	New        bool   `json:"new"`
	// InitialCluster is name=peerURL,... as etcd's --initial-cluster.
	InitialCluster string `json:"initialCluster"`
	// CertPEM and KeyPEM are the serving certificate (none: plain
	// connections); ClientCAPEM, when set, the CAs whose client
	// certificates are required, as --client-cert-auth does.
	CertPEM     []byte `json:"certPEM,omitempty"`
	KeyPEM      []byte `json:"keyPEM,omitempty"`
	ClientCAPEM []byte `json:"clientCAPEM,omitempty"`
}

// Start starts a member and returns the address it serves at. Starting a
// member that serves already returns its address.
func (s *Sim) Start(req StartRequest) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return "", errors.New("simulator closed")
	default:
	}
	c := s.clusters[req.Cluster]
	if c == nil {
		if !req.New {
			return "", fmt.Errorf("member %s joins cluster %s, which does not exist", req.Name, req.Cluster)
		}
		var err error
		if c, err = s.form(req); err != nil {
			return "", err
		}
		s.clusters[req.Cluster] = c
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.members, func(m *member) bool { return m.peerURL == req.PeerURL })
	if i < 0 {
		return "", fmt.Errorf("member %s (%s) is not a member of cluster %s", req.Name, req.PeerURL, req.Cluster)
	}
	m := c.members[i]
	if m.srv != nil {
		return m.addr, nil
	}
	cfg, err := serverTLS(req)
	if err != nil {
		return "", fmt.Errorf("member %s: %w", req.Name, err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	m.name, m.clientURL, m.version = req.Name, req.ClientURL, req.Version
	m.lis, m.addr = &memberListener{Listener: lis, m: m}, lis.Addr().String()
	m.srv = m.server(cfg)
	c.raftIndex++ // the member published itself
	go func() { _ = m.srv.Serve(m.lis) }()
	s.addrs[req.ClientURL] = m.addr
	if _, ok := s.addrs[req.ServiceURL]; !ok && req.ServiceURL != "" {
		s.addrs[req.ServiceURL] = m.addr
	}
	return m.addr, nil
}

// form makes a cluster from its initial members; none has started yet.
func (s *Sim) form(req StartRequest) (*cluster, error) {
	c := &cluster{sim: s, key: req.Cluster, id: hashID(req.Cluster, req.InitialCluster), raftIndex: 1,
		calls: map[string]time.Time{}, waiters: map[string][]chan time.Time{}}
	for pair := range strings.SplitSeq(req.InitialCluster, ",") {
		name, peer, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("cluster %s: bad --initial-cluster %q", req.Cluster, req.InitialCluster)
		}
		c.members = append(c.members, &member{cl: c, id: hashID(req.Cluster, name, peer), peerURL: peer, requests: map[string]int64{}})
		c.raftIndex++
	}
	return c, nil
}

func serverTLS(req StartRequest) (*tls.Config, error) {
	if len(req.CertPEM) == 0 {
		return nil, nil
	}
	cert, err := tls.X509KeyPair(req.CertPEM, req.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if len(req.ClientCAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(req.ClientCAPEM) {
			return nil, errors.New("no certificate in the client CAs")
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// hashID is a member or cluster ID that every run gives the same parts.
func hashID(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	if id := h.Sum64(); id != 0 {
		return id
	}
	return 1
}

// Resolve is the address serving a client URL: a member's, or the client
// Service's (its first member started).
func (s *Sim) Resolve(clientURL string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.addrs[clientURL]
	return a, ok
}

// Hang makes the clusters hang (hung) or answer again. A hung cluster's
// members go on accepting connections, and the kernel their bytes, but
// nothing they receive is read on and nothing is written: no TLS handshake
// ends, no request is answered, no keepalive ping either, as with an etcd
// whose process is paused. Resuming answers what waited.
func (s *Sim) Hang(keys []string, hung bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, k := range keys {
		c := s.clusters[k]
		if c == nil {
			missing = append(missing, k)
			continue
		}
		c.mu.Lock()
		switch {
		case hung && c.resumed == nil:
			c.resumed = make(chan struct{})
		case !hung && c.resumed != nil:
			close(c.resumed)
			c.resumed = nil
		}
		c.mu.Unlock()
	}
	if len(missing) > 0 {
		return fmt.Errorf("no such cluster: %s", strings.Join(missing, ", "))
	}
	return nil
}

// wait returns once the cluster is not hung (or the simulator closes).
func (c *cluster) wait() {
	c.mu.Lock()
	ch := c.resumed
	c.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-c.sim.done:
	}
}

// called records the first call of a method and wakes who waits for it.
func (c *cluster) called(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.calls[method]; ok {
		return
	}
	now := time.Now()
	c.calls[method] = now
	for _, w := range c.waiters[method] {
		w <- now
	}
	delete(c.waiters, method)
}

// WaitCall waits until the cluster's first call of method (its gRPC
// method name, or MemberAddAsLearner for a MemberAdd of a learner), and
// says when it came.
func (s *Sim) WaitCall(ctx context.Context, key, method string) (time.Time, error) {
	s.mu.Lock()
	c := s.clusters[key]
	s.mu.Unlock()
	if c == nil {
		return time.Time{}, fmt.Errorf("no such cluster: %s", key)
	}
	c.mu.Lock()
	if t, ok := c.calls[method]; ok {
		c.mu.Unlock()
		return t, nil
	}
	w := make(chan time.Time, 1)
	c.waiters[method] = append(c.waiters[method], w)
	c.mu.Unlock()
	select {
	case t := <-w:
		return t, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// MemberStats is what one member listener saw.
type MemberStats struct {
	Cluster string `json:"cluster"`
	Name    string `json:"name"`
	Hung    bool   `json:"hung,omitempty"`
	// Accepted connections, Open ones now, and completed TLS Handshakes.
	Accepted   int64 `json:"accepted"`
	Open       int64 `json:"open"`
	Handshakes int64 `json:"handshakes"`
	// Requests by gRPC method (MemberAdd of a learner as
	// MemberAddAsLearner), counted once answered.
	Requests map[string]int64 `json:"requests,omitempty"`
}

// Stats is what the simulator saw, member by member.
type Stats struct {
	Members            []MemberStats    `json:"members"`
	Unimplemented      map[string]int64 `json:"unimplemented,omitempty"`
	HandshakeErrors    int64            `json:"handshakeErrors,omitempty"`
	LastHandshakeError string           `json:"lastHandshakeError,omitempty"`
	// The simulator process's own heap in use and goroutines.
	HeapInuse  int64 `json:"heapInuse"`
	Goroutines int   `json:"goroutines"`
}

// Stats returns the counters.
func (s *Sim) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Unimplemented: map[string]int64{}, HandshakeErrors: s.handshakeErrors, LastHandshakeError: s.lastHandshakeError}
	for k, v := range s.unimplemented {
		st.Unimplemented[k] = v
	}
	for _, c := range s.clusters {
		c.mu.Lock()
		hung := c.resumed != nil
		for _, m := range c.members {
			if m.srv == nil {
				continue
			}
			ms := MemberStats{Cluster: c.key, Name: m.name, Hung: hung, Accepted: m.accepted.Load(), Open: m.open.Load(), Handshakes: m.handshakes.Load(), Requests: map[string]int64{}}
			m.reqMu.Lock()
			for k, v := range m.requests {
				ms.Requests[k] = v
			}
			m.reqMu.Unlock()
			st.Members = append(st.Members, ms)
		}
		c.mu.Unlock()
	}
	return st
}

func (s *Sim) handshakeFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handshakeErrors++
	s.lastHandshakeError = err.Error()
}

func (s *Sim) noMethod(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unimplemented[method]++
}

// server is the member's gRPC server, with etcd's keepalive policy (a
// client may ping every 5 s while it has calls under way; the server pings
// an idle connection every 2 hours) and no idle timeout.
func (m *member) server(cfg *tls.Config) *grpc.Server {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if cfg != nil {
		creds = credentials.NewTLS(cfg)
	}
	srv := grpc.NewServer(
		grpc.Creds(&countingCreds{TransportCredentials: creds, sim: m.cl.sim}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		grpc.ChainUnaryInterceptor(m.count),
	)
	pb.RegisterClusterServer(srv, &clusterServer{m: m})
	pb.RegisterMaintenanceServer(srv, &maintenanceServer{m: m})
	return srv
}

// count counts a request by method once answered, and each method the
// simulator does not implement.
func (m *member) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := path.Base(info.FullMethod)
	if add, ok := req.(*pb.MemberAddRequest); ok && add.IsLearner {
		method = "MemberAddAsLearner"
	}
	m.cl.called(method)
	resp, err := handler(ctx, req)
	m.reqMu.Lock()
	m.requests[method]++
	m.reqMu.Unlock()
	if status.Code(err) == codes.Unimplemented {
		m.cl.sim.noMethod(info.FullMethod)
	}
	return resp, err
}

func (m *member) stop() {
	if m.srv != nil {
		m.srv.Stop()
	}
}

// memberListener counts the connections of one member and makes them hang
// with the member's cluster.
type memberListener struct {
	net.Listener
	m *member
}

func (l *memberListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.m.accepted.Add(1)
	l.m.open.Add(1)
	return &memberConn{Conn: conn, m: l.m}, nil
}

// memberConn delivers nothing it read, and writes nothing, while its
// cluster hangs.
type memberConn struct {
	net.Conn
	m      *member
	closed atomic.Bool
}

func (c *memberConn) Read(b []byte) (int, error) {
	c.m.cl.wait()
	n, err := c.Conn.Read(b)
	c.m.cl.wait()
	return n, err
}

func (c *memberConn) Write(b []byte) (int, error) {
	c.m.cl.wait()
	return c.Conn.Write(b)
}

func (c *memberConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.m.open.Add(-1)
	}
	return c.Conn.Close()
}

// countingCreds counts the TLS handshakes that complete, by member.
type countingCreds struct {
	credentials.TransportCredentials
	sim *Sim
}

func (c *countingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.sim.handshakeFailed(err)
		return conn, info, err
	}
	if mc, ok := raw.(*memberConn); ok && info != nil && info.AuthType() == "tls" {
		mc.m.handshakes.Add(1)
	}
	return conn, info, nil
}

func (c *countingCreds) Clone() credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: c.TransportCredentials.Clone(), sim: c.sim}
}

// The answers. A learner answers only Status, as etcd's learners refuse
// most requests.

type clusterServer struct {
	pb.UnimplementedClusterServer
	m *member
}

type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	m *member
}

// header is etcd's response header from member m; c.mu is held.
func (m *member) header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: m.cl.id, MemberId: m.id, Revision: 1, RaftTerm: 2}
}

// list is etcd's member list; c.mu is held.
func (c *cluster) list() []*pb.Member {
	out := make([]*pb.Member, 0, len(c.members))
	for _, m := range c.members {
		pm := &pb.Member{ID: m.id, Name: m.name, PeerURLs: []string{m.peerURL}, IsLearner: m.learner}
		if m.name != "" {
			pm.ClientURLs = []string{m.clientURL}
		}
		out = append(out, pm)
	}
	return out
}

// leader is the first voter that has started; c.mu is held.
func (c *cluster) leader() uint64 {
	for _, m := range c.members {
		if !m.learner && m.name != "" {
			return m.id
		}
	}
	return 0
}

func (s *clusterServer) MemberList(context.Context, *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.m.learner {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	return &pb.MemberListResponse{Header: s.m.header(), Members: c.list()}, nil
}

func (s *clusterServer) MemberAdd(_ context.Context, req *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.m.learner {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	if len(req.PeerURLs) != 1 {
		return nil, status.Error(codes.InvalidArgument, "the simulator adds members of one peer URL")
	}
	for _, m := range c.members {
		if m.peerURL == req.PeerURLs[0] {
			return nil, rpctypes.ErrGRPCPeerURLExist
		}
		if m.learner && req.IsLearner {
			return nil, rpctypes.ErrGRPCTooManyLearners
		}
	}
	c.raftIndex++
	m := &member{cl: c, id: hashID(c.key, req.PeerURLs[0], fmt.Sprint(c.raftIndex)), peerURL: req.PeerURLs[0], learner: req.IsLearner, requests: map[string]int64{}}
	c.members = append(c.members, m)
	return &pb.MemberAddResponse{Header: s.m.header(), Member: &pb.Member{ID: m.id, PeerURLs: []string{m.peerURL}, IsLearner: m.learner}, Members: c.list()}, nil
}

func (s *clusterServer) MemberRemove(_ context.Context, req *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	if s.m.learner {
		c.mu.Unlock()
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	i := slices.IndexFunc(c.members, func(m *member) bool { return m.id == req.ID })
	if i < 0 {
		c.mu.Unlock()
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	gone := c.members[i]
	c.members = slices.Delete(c.members, i, i+1)
	c.raftIndex++
	resp := &pb.MemberRemoveResponse{Header: s.m.header(), Members: c.list()}
	c.mu.Unlock()
	// A removed member's etcd stops; not within the call that removed it,
	// which may be its own.
	go gone.stop()
	return resp, nil
}

func (s *clusterServer) MemberPromote(_ context.Context, req *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.m.learner {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	i := slices.IndexFunc(c.members, func(m *member) bool { return m.id == req.ID })
	switch {
	case i < 0:
		return nil, rpctypes.ErrGRPCMemberNotFound
	case !c.members[i].learner:
		return nil, rpctypes.ErrGRPCMemberNotLearner
	case c.members[i].name == "":
		return nil, rpctypes.ErrGRPCLearnerNotReady
	}
	c.members[i].learner = false
	c.raftIndex++
	return &pb.MemberPromoteResponse{Header: s.m.header(), Members: c.list()}, nil
}

func (s *maintenanceServer) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	return &pb.StatusResponse{
		Header:           s.m.header(),
		Version:          s.m.version,
		DbSize:           24 << 10,
		DbSizeInUse:      20 << 10,
		Leader:           c.leader(),
		RaftIndex:        c.raftIndex,
		RaftTerm:         2,
		RaftAppliedIndex: c.raftIndex,
		IsLearner:        s.m.learner,
		StorageVersion:   storageVersion(s.m.version),
	}, nil
}

// storageVersion is what etcd 3.6 and later report: the minor's x.y.0.
func storageVersion(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] != "3" || parts[1] < "6" && len(parts[1]) == 1 {
		return ""
	}
	return parts[0] + "." + parts[1] + ".0"
}

func (s *maintenanceServer) Alarm(_ context.Context, req *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	c := s.m.cl
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.m.learner {
		return nil, rpctypes.ErrGRPCNotSupportedForLearner
	}
	// No alarm is ever raised: GET lists none, DEACTIVATE has nothing to clear.
	if req.Action == pb.AlarmRequest_ACTIVATE {
		return nil, status.Error(codes.Unimplemented, "the simulator raises no alarm")
	}
	return &pb.AlarmResponse{Header: s.m.header()}, nil
}
