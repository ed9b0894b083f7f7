package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/raftsman/raftsman/pkg/pki"
)

// countingListener counts the connections it accepts and those still open.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
	open     atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// role is how a fake member answers MemberList and AlarmList.
type role int

const (
	// roleVoter answers.
	roleVoter role = iota
	// roleLearner refuses as etcd does on a learner.
	roleLearner
	// roleCutOff is a member cut off from the others: it waits for a
	// quorum until the request's deadline.
	roleCutOff
	// roleNoLeader says it has no leader.
	roleNoLeader
	// roleDown: nothing listens at its address.
	roleDown
	// roleRefuses: its listener closes every connection it accepts.
	roleRefuses
)

func (r role) String() string {
	return [...]string{"voter", "learner", "cut off", "no leader", "down", "refuses"}[r]
}

const fakeClusterID = 0xc1

// grpcMember answers etcd's cluster and maintenance APIs as one member.
type grpcMember struct {
	pb.UnimplementedClusterServer
	pb.UnimplementedMaintenanceServer
	id   uint64
	role role
	// asked counts MemberList and AlarmList; disarmed AlarmDisarm.
	asked, disarmed atomic.Int32
}

func (m *grpcMember) header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: fakeClusterID, MemberId: m.id}
}

// refuse is the answer of a member that does not answer a question.
func (m *grpcMember) refuse(ctx context.Context) error {
	m.asked.Add(1)
	switch m.role {
	case roleLearner:
		return rpctypes.ErrGRPCNotSupportedForLearner
	case roleNoLeader:
		return rpctypes.ErrGRPCNoLeader
	case roleCutOff:
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

func (m *grpcMember) MemberList(ctx context.Context, r *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if err := m.refuse(ctx); err != nil {
		return nil, err
	}
	if !r.Linearizable {
		return nil, status.Error(codes.InvalidArgument, "the test wants a linearizable MemberList")
	}
	return &pb.MemberListResponse{Header: m.header(), Members: []*pb.Member{{ID: m.id, Name: fmt.Sprintf("m%d", m.id)}}}, nil
}

func (m *grpcMember) MemberAdd(_ context.Context, r *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	return &pb.MemberAddResponse{Header: m.header(), Member: &pb.Member{ID: 99, PeerURLs: r.PeerURLs, IsLearner: r.IsLearner}}, nil
}

func (m *grpcMember) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	return &pb.MemberRemoveResponse{Header: m.header()}, nil
}

func (m *grpcMember) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if r.Action == pb.AlarmRequest_DEACTIVATE {
		m.disarmed.Add(1)
		return &pb.AlarmResponse{Header: m.header()}, nil
	}
	if err := m.refuse(ctx); err != nil {
		return nil, err
	}
	return &pb.AlarmResponse{Header: m.header(), Alarms: []*pb.AlarmMember{{MemberID: m.id, Alarm: pb.AlarmType_NOSPACE}}}, nil
}

func (m *grpcMember) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: m.header(), Leader: m.id, Version: "3.6.16"}, nil
}

func (m *grpcMember) Defragment(context.Context, *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	return &pb.DefragmentResponse{}, nil
}

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate, made once.
var testPKI = sync.OnceValues(func() (pkiSet, error) {
	now := time.Now()
	ca, err := pki.NewCA("test CA", time.Hour, now)
	if err != nil {
		return pkiSet{}, err
	}
	server, err := pki.Issue(ca, pki.Request{CommonName: "etcd-server", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: pki.UsageServer, Lifetime: time.Hour}, now)
	if err != nil {
		return pkiSet{}, err
	}
	client, err := pki.Issue(ca, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: time.Hour}, now)
	if err != nil {
		return pkiSet{}, err
	}
	return pkiSet{ca: ca, server: server, client: client}, nil
})

type pkiSet struct{ ca, server, client *pki.KeyPair }

// serverTLS is the fake members' TLS configuration: they require a client
// certificate of the test CA, as etcd with --client-cert-auth does.
func serverTLS(t *testing.T) (*tls.Config, Credentials) {
	t.Helper()
	p, err := testPKI()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(p.server.CertPEM, p.server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.ca.CertPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		Credentials{CertPEM: p.client.CertPEM, KeyPEM: p.client.KeyPEM, CAPEM: p.ca.CertPEM}
}

// fakeCluster starts one fake member per role on loopback, plain or with
// TLS. The roles are given in the order of the members' endpoints sorted,
// the order the client first tries them in. members[i] and listeners[i]
// are nil for roleDown and roleRefuses.
func fakeCluster(t *testing.T, withTLS bool, roles ...role) (endpoints []string, members []*grpcMember, listeners []*countingListener, creds Credentials) {
	t.Helper()
	scheme, serverCfg := "http", (*tls.Config)(nil)
	if withTLS {
		scheme = "https"
		serverCfg, creds = serverTLS(t)
	}
	ls := make([]net.Listener, len(roles))
	for i := range ls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	url := func(l net.Listener) string { return scheme + "://" + l.Addr().String() }
	slices.SortFunc(ls, func(a, b net.Listener) int {
		if url(a) < url(b) {
			return -1
		}
		return 1
	})
	members, listeners = make([]*grpcMember, len(roles)), make([]*countingListener, len(roles))
	for i, r := range roles {
		endpoints = append(endpoints, url(ls[i]))
		switch r {
		case roleDown:
			_ = ls[i].Close()
			continue
		case roleRefuses:
			go func(l net.Listener) {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					_ = c.Close()
				}
			}(ls[i])
			t.Cleanup(func() { _ = ls[i].Close() })
			continue
		}
		members[i] = &grpcMember{id: uint64(i + 1), role: r}
		listeners[i] = &countingListener{Listener: ls[i]}
		serveFake(t, listeners[i], members[i], serverCfg)
	}
	return endpoints, members, listeners, creds
}

// serveFake serves m on l until the test ends, and returns the server.
func serveFake(t *testing.T, l net.Listener, m *grpcMember, serverCfg *tls.Config) *grpc.Server {
	t.Helper()
	var opts []grpc.ServerOption
	if serverCfg != nil {
		opts = append(opts, grpc.Creds(grpccreds.NewTLS(serverCfg)))
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterClusterServer(srv, m)
	pb.RegisterMaintenanceServer(srv, m)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return srv
}

// balancedOpen says whether the client holds etcd's balanced client.
func balancedOpen(c Client) bool {
	rc := c.(*realClient)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.cli != nil
}

// memberConnState is the state of the connection kept for endpoint.
func memberConnState(c Client, endpoint string) connectivity.State {
	rc := c.(*realClient)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	cc, ok := rc.conns[endpoint]
	if !ok {
		return connectivity.Shutdown
	}
	return cc.cc.GetState()
}

// eventually fails the test if ok is not true within 10 s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
	}
}

// TestMemberCallsReuseOneConnection: health checks of a member (Status)
// and its defragmentation go over one connection per member, kept between
// calls, not one dialled per call; a member the cluster no longer has gets
// its connection closed.
func TestMemberCallsReuseOneConnection(t *testing.T) {
	t.Parallel()
	eps, _, ls, _ := fakeCluster(t, false, roleVoter, roleVoter)
	f := NewClientFactory()
	t.Cleanup(func() { f.Forget("ns/c") })
	ctx := t.Context()
	cli, err := f.Get(ctx, "ns/c", eps, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		for i, ep := range eps {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				t.Fatalf("status of %s: %v", ep, err)
			}
			if st.MemberID != uint64(i+1) || st.Version != "3.6.16" {
				t.Fatalf("status of %s: %+v", ep, st)
			}
		}
	}
	if err := cli.Defragment(ctx, eps[0]); err != nil {
		t.Fatal(err)
	}
	for i, l := range ls {
		if n := l.accepted.Load(); n != 1 {
			t.Errorf("member %d: %d connections for its calls, want 1", i+1, n)
		}
	}
	rc := cli.(*realClient)
	if _, err := f.Get(ctx, "ns/c", eps[:1], Credentials{}); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	_, kept := rc.conns[eps[1]]
	rc.mu.Unlock()
	if kept {
		t.Errorf("the connection to a member the cluster no longer has is kept")
	}
	eventually(t, "closed the connection to the member gone", func() bool { return ls[1].open.Load() == 0 })
}

// TestAskAnySkipsMembers: MemberList and Alarms go to the members in turn
// over their own connections; a learner, a member without a leader, one
// cut off from the quorum (it would wait until the deadline), one down and
// one whose listener refuses are skipped and the next member answers
// within the deadline, plain or over TLS. The next call starts with the
// member that answered, not with those that failed. When none answers,
// the last error comes back mapped.
func TestAskAnySkipsMembers(t *testing.T) {
	t.Parallel()
	const deadline = 3 * time.Second
	calls := map[string]func(context.Context, Client) (uint64, error){
		"MemberList": func(ctx context.Context, c Client) (uint64, error) {
			id, list, err := c.MemberList(ctx)
			if err != nil {
				return 0, err
			}
			if id != fakeClusterID || len(list) != 1 {
				return 0, fmt.Errorf("unexpected answer: cluster %x, members %+v", id, list)
			}
			return list[0].ID, nil
		},
		"Alarms": func(ctx context.Context, c Client) (uint64, error) {
			alarms, err := c.Alarms(ctx)
			if err != nil {
				return 0, err
			}
			if len(alarms) != 1 || alarms[0].Type != AlarmNoSpace {
				return 0, fmt.Errorf("unexpected answer: %+v", alarms)
			}
			return alarms[0].MemberID, nil
		},
	}
	for _, tt := range []struct {
		name    string
		roles   []role
		wantErr error // else the last member, a voter, answers
	}{
		{name: "learner first", roles: []role{roleLearner, roleVoter}},
		{name: "cut off first", roles: []role{roleCutOff, roleVoter}},
		{name: "no leader first", roles: []role{roleNoLeader, roleVoter}},
		{name: "down first", roles: []role{roleDown, roleVoter}},
		{name: "refusing listener first", roles: []role{roleRefuses, roleVoter}},
		{name: "learner then cut off", roles: []role{roleLearner, roleCutOff, roleVoter}},
		{name: "none answers, cut off last", roles: []role{roleLearner, roleCutOff}, wantErr: ErrUnreachable},
		{name: "none answers, no leader last", roles: []role{roleCutOff, roleNoLeader}, wantErr: ErrNotYet},
		{name: "none answers, learner last", roles: []role{roleDown, roleLearner}, wantErr: rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)},
	} {
		for _, withTLS := range []bool{false, true} {
			for callName, call := range calls {
				t.Run(fmt.Sprintf("%s/%s/tls=%t", tt.name, callName, withTLS), func(t *testing.T) {
					t.Parallel()
					eps, members, _, creds := fakeCluster(t, withTLS, tt.roles...)
					f := NewClientFactory()
					t.Cleanup(func() { f.Forget("c") })
					cli, err := f.Get(t.Context(), "c", eps, creds)
					if err != nil {
						t.Fatal(err)
					}
					ask := func() (uint64, time.Duration, error) {
						ctx, cancel := context.WithTimeout(t.Context(), deadline)
						defer cancel()
						start := time.Now()
						id, err := call(ctx, cli)
						return id, time.Since(start), err
					}
					id, took, err := ask()
					if tt.wantErr != nil {
						if !errors.Is(err, tt.wantErr) && !errors.Is(rpctypes.Error(err), tt.wantErr) {
							t.Fatalf("%s: %v, want %v", callName, err, tt.wantErr)
						}
						if took > deadline+time.Second {
							t.Errorf("%s took %v, beyond its %v deadline", callName, took, deadline)
						}
						return
					}
					if err != nil {
						t.Fatalf("%s after %v: %v", callName, took, err)
					}
					if want := uint64(len(tt.roles)); id != want {
						t.Fatalf("%s answered by member %d, want %d", callName, id, want)
					}
					if took >= deadline {
						t.Errorf("%s took %v, its whole deadline", callName, took)
					}
					askedBefore := make([]int32, len(members))
					for i, m := range members {
						if m != nil {
							askedBefore[i] = m.asked.Load()
						}
					}
					if id, took, err = ask(); err != nil || id != uint64(len(tt.roles)) {
						t.Fatalf("%s again after %v: member %d, %v", callName, took, id, err)
					}
					for i, m := range members[:len(members)-1] {
						if m != nil && m.asked.Load() != askedBefore[i] {
							t.Errorf("%s again asked the %s member first: it failed last time", callName, m.role)
						}
					}
				})
			}
		}
	}
}

// TestQuietClusterOneConnectionPerMember: questions (MemberList, Alarms,
// Status) keep one connection per member and never open etcd's balanced
// client; Get dials nothing; a change (DisarmAlarm, MemberAddAsLearner)
// opens the balanced client, which is closed once unused for IdleTimeout,
// leaving one connection per member again.
func TestQuietClusterOneConnectionPerMember(t *testing.T) {
	t.Parallel()
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", withTLS), func(t *testing.T) {
			t.Parallel()
			cli, eps, members, ls := clientWithIdleTimeout(t, withTLS, 300*time.Millisecond, roleVoter, roleVoter, roleVoter)
			ctx := t.Context()
			time.Sleep(100 * time.Millisecond)
			for i, l := range ls {
				if n := l.accepted.Load(); n != 0 {
					t.Errorf("member %d: Get made %d connections", i+1, n)
				}
			}
			ask := func() {
				t.Helper()
				for range 5 {
					if _, _, err := cli.MemberList(ctx); err != nil {
						t.Fatalf("MemberList: %v", err)
					}
					if _, err := cli.Alarms(ctx); err != nil {
						t.Fatalf("Alarms: %v", err)
					}
					for _, ep := range eps {
						if _, err := cli.Status(ctx, ep); err != nil {
							t.Fatalf("Status of %s: %v", ep, err)
						}
					}
				}
			}
			ask()
			for i, l := range ls {
				if a, o := l.accepted.Load(), l.open.Load(); a != 1 || o != 1 {
					t.Errorf("member %d: %d connections made, %d open; want 1, 1", i+1, a, o)
				}
			}
			for i, m := range members {
				if m.asked.Load() == 0 {
					t.Errorf("member %d was never asked MemberList or AlarmList: the members are not taken in turn", i+1)
				}
			}
			if balancedOpen(cli) {
				t.Fatal("questions opened the balanced client")
			}

			if err := cli.DisarmAlarm(ctx, Alarm{MemberID: 1, Type: AlarmNoSpace}); err != nil {
				t.Fatalf("DisarmAlarm: %v", err)
			}
			if _, err := cli.MemberAddAsLearner(ctx, "http://127.0.0.1:1"); err != nil {
				t.Fatalf("MemberAddAsLearner: %v", err)
			}
			if !balancedOpen(cli) {
				t.Fatal("a change did not open the balanced client")
			}
			var disarmed int32
			for _, m := range members {
				disarmed += m.disarmed.Load()
			}
			if disarmed != 1 {
				t.Errorf("%d members were asked to disarm, want 1", disarmed)
			}
			total := func() (n int32) {
				for _, l := range ls {
					n += l.accepted.Load()
				}
				return n
			}
			if n := total(); n <= 3 {
				t.Errorf("the balanced client made no connection of its own (%d in all)", n)
			}
			eventually(t, "closed the idle balanced client", func() bool { return !balancedOpen(cli) })
			eventually(t, "closed the idle member connections", func() bool {
				for _, l := range ls {
					if l.open.Load() != 0 {
						return false
					}
				}
				return true
			})
			before := total()
			ask()
			if n := total(); n != before+3 {
				t.Errorf("questions after the connections went idle made %d connections, want 3 (one per member)", n-before)
			}
			if balancedOpen(cli) {
				t.Error("questions after idle opened the balanced client")
			}
		})
	}
}

// clientWithIdleTimeout is a client of a fake cluster of these roles whose
// connections close after idle.
func clientWithIdleTimeout(t *testing.T, withTLS bool, idle time.Duration, roles ...role) (Client, []string, []*grpcMember, []*countingListener) {
	t.Helper()
	eps, members, ls, creds := fakeCluster(t, withTLS, roles...)
	f := NewClientFactory()
	f.IdleTimeout = idle
	t.Cleanup(func() { f.Forget("c") })
	cli, err := f.Get(t.Context(), "c", eps, creds)
	if err != nil {
		t.Fatal(err)
	}
	return cli, eps, members, ls
}

// TestIdleClientOpensOneConnectionPerLook: once every connection of a
// cluster went idle, a calm look (one member's Status, then MemberList
// and Alarms) opens a single connection: the questions that any member
// may answer go to the member whose connection is open, not to the next
// one in turn.
func TestIdleClientOpensOneConnectionPerLook(t *testing.T) {
	t.Parallel()
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", withTLS), func(t *testing.T) {
			t.Parallel()
			cli, eps, members, ls := clientWithIdleTimeout(t, withTLS, 200*time.Millisecond, roleVoter, roleVoter, roleVoter)
			ctx := t.Context()
			accepted := func() []int32 {
				n := make([]int32, len(ls))
				for i, l := range ls {
					n[i] = l.accepted.Load()
				}
				return n
			}
			for look := range 2 * len(eps) {
				eventually(t, "every connection idle", func() bool {
					for _, l := range ls {
						if l.open.Load() != 0 {
							return false
						}
					}
					return true
				})
				k := look % len(eps)
				before, askedBefore := accepted(), members[k].asked.Load()
				if _, err := cli.Status(ctx, eps[k]); err != nil {
					t.Fatalf("look %d: Status of %s: %v", look, eps[k], err)
				}
				if _, _, err := cli.MemberList(ctx); err != nil {
					t.Fatalf("look %d: MemberList: %v", look, err)
				}
				if _, err := cli.Alarms(ctx); err != nil {
					t.Fatalf("look %d: Alarms: %v", look, err)
				}
				after := accepted()
				for i := range ls {
					want := before[i]
					if i == k {
						want++
					}
					if after[i] != want {
						t.Errorf("look %d at member %d: member %d got %d new connections, want %d", look, k+1, i+1, after[i]-before[i], want-before[i])
					}
				}
				if n := members[k].asked.Load() - askedBefore; n != 2 {
					t.Errorf("look %d: member %d, the one connected, answered %d of MemberList and Alarms, want 2", look, k+1, n)
				}
			}
		})
	}
}

// TestMemberCallsWaitForAMemberBack: a call over a member's connection
// while the member restarts waits, within its deadline, for the
// connection to be made again instead of failing at once.
func TestMemberCallsWaitForAMemberBack(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	m := &grpcMember{id: 1}
	srv := serveFake(t, l, m, nil)
	f := NewClientFactory()
	t.Cleanup(func() { f.Forget("c") })
	ctx := t.Context()
	cli, err := f.Get(ctx, "c", []string{"http://" + addr}, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{
		"Status":     func(ctx context.Context) error { _, err := cli.Status(ctx, "http://"+addr); return err },
		"MemberList": func(ctx context.Context) error { _, _, err := cli.MemberList(ctx); return err },
	} {
		if err := call(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		srv.Stop()
		// As with a member that hung: the connection is known lost
		// before the call.
		eventually(t, "seen the connection lost", func() bool { return memberConnState(cli, "http://"+addr) != connectivity.Ready })
		back := make(chan struct{})
		go func() {
			defer close(back)
			time.Sleep(500 * time.Millisecond)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return
			}
			srv = serveFake(t, l, m, nil)
		}()
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := call(tctx)
		cancel()
		<-back
		if err != nil {
			t.Errorf("%s while the member restarts: %v", name, err)
		}
	}
}

// TestConcurrentUse runs every kind of call at once, with the balanced
// client closed as soon as it is idle and the endpoints changing, under
// the race detector; once the cluster is forgotten, calls fail and dial
// nothing.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	eps, _, ls, _ := fakeCluster(t, false, roleVoter, roleVoter, roleVoter)
	f := NewClientFactory()
	f.IdleTimeout = time.Millisecond
	ctx := t.Context()
	cli, err := f.Get(ctx, "c", eps, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int32
	count := func(err error) {
		if err == nil {
			ok.Add(1)
		}
	}
	stop := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				_, _, err := cli.MemberList(ctx)
				count(err)
				_, err = cli.Alarms(ctx)
				count(err)
			}
		})
		wg.Go(func() {
			for time.Now().Before(stop) {
				for _, ep := range eps {
					_, err := cli.Status(ctx, ep)
					count(err)
				}
				count(cli.Defragment(ctx, eps[0]))
			}
		})
		wg.Go(func() {
			for time.Now().Before(stop) {
				count(cli.DisarmAlarm(ctx, Alarm{MemberID: 1, Type: AlarmNoSpace}))
				_, err := cli.MemberAddAsLearner(ctx, "http://127.0.0.1:1")
				count(err)
				count(cli.MemberRemove(ctx, 99))
			}
		})
	}
	wg.Go(func() {
		for i := 0; time.Now().Before(stop); i++ {
			if _, err := f.Get(ctx, "c", eps[:2+i%2], Credentials{}); err != nil {
				t.Errorf("Get: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	wg.Wait()
	if ok.Load() == 0 {
		t.Fatal("no call succeeded")
	}
	f.Forget("c")
	var before int32
	for _, l := range ls {
		before += l.accepted.Load()
	}
	if _, _, err := cli.MemberList(ctx); !errors.Is(err, errClosed) {
		t.Errorf("MemberList after Forget: %v, want %v", err, errClosed)
	}
	if _, err := cli.Status(ctx, eps[0]); !errors.Is(err, errClosed) {
		t.Errorf("Status after Forget: %v, want %v", err, errClosed)
	}
	if err := cli.DisarmAlarm(ctx, Alarm{MemberID: 1, Type: AlarmNoSpace}); !errors.Is(err, errClosed) {
		t.Errorf("DisarmAlarm after Forget: %v, want %v", err, errClosed)
	}
	eventually(t, "closed every connection after Forget", func() bool {
		for _, l := range ls {
			if l.open.Load() != 0 {
				return false
			}
		}
		return true
	})
	var after int32
	for _, l := range ls {
		after += l.accepted.Load()
	}
	if after != before {
		t.Errorf("calls after Forget made %d connections", after-before)
	}
}

// TestMemberTarget: endpoints are read as etcd's client reads them.
func TestMemberTarget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		endpoint string
		haveTLS  bool
		target   string
		secure   bool
	}{
		{endpoint: "https://m-0.c.ns.svc:2379", haveTLS: true, target: "passthrough:///m-0.c.ns.svc:2379", secure: true},
		{endpoint: "https://10.0.0.4:2379", target: "passthrough:///10.0.0.4:2379", secure: true},
		{endpoint: "http://127.0.0.1:2379", haveTLS: true, target: "passthrough:///127.0.0.1:2379"},
		{endpoint: "127.0.0.1:2379", haveTLS: true, target: "passthrough:///127.0.0.1:2379", secure: true},
		{endpoint: "m-0:2379", target: "passthrough:///m-0:2379"},
		{endpoint: "unix:///run/etcd.sock", target: "unix:///run/etcd.sock"},
	} {
		target, secure := memberTarget(tt.endpoint, tt.haveTLS)
		if target != tt.target || secure != tt.secure {
			t.Errorf("memberTarget(%q, %t) = %q, %t; want %q, %t", tt.endpoint, tt.haveTLS, target, secure, tt.target, tt.secure)
		}
	}
}

// TestMemberConnectionInUseStaysOpen: a member connection is closed only
// once no call has used it for the idle timeout. A call longer than the
// timeout (a member cut off waits until the deadline) keeps it open, even
// while shorter calls on it end and start the idle time; it is closed the
// idle timeout after the long call ended.
func TestMemberConnectionInUseStaysOpen(t *testing.T) {
	t.Parallel()
	cli, eps, _, ls := clientWithIdleTimeout(t, true, 100*time.Millisecond, roleCutOff)
	if _, err := cli.Status(t.Context(), eps[0]); err != nil {
		t.Fatalf("Status: %v", err)
	}
	long := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, _, err := cli.MemberList(ctx)
		long <- err
	}()
	for range 6 {
		time.Sleep(80 * time.Millisecond)
		if _, err := cli.Status(t.Context(), eps[0]); err != nil {
			t.Fatalf("Status during the long call: %v", err)
		}
	}
	err := <-long
	if err == nil || strings.Contains(err.Error(), "closing") {
		t.Fatalf("the cut-off member's MemberList: %v, want its deadline", err)
	}
	if a, o := ls[0].accepted.Load(), ls[0].open.Load(); a != 1 || o != 1 {
		t.Fatalf("during the long call: %d connections made, %d open; want 1, 1", a, o)
	}
	eventually(t, "closed the connection once idle", func() bool { return ls[0].open.Load() == 0 })
}
