package etcd

import (
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// tcpProxy forwards the connections it accepts on loopback to target
// (host:port), counting them: what a client costs the member behind it.
func tcpProxy(t *testing.T, target string) (string, *countingListener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	go func() {
		for {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer func() { _ = u.Close() }()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
				// Either side closing closes both.
				<-done
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return "http://" + l.Addr().String(), cl
}

// startAt makes ep the member the client's next MemberList or Alarms tries
// first, as if none had failed yet.
func startAt(c Client, ep string) {
	rc := c.(*realClient)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	i := slices.Index(rc.endpoints, ep)
	rc.answered = rc.endpoints[(i+len(rc.endpoints)-1)%len(rc.endpoints)]
	clear(rc.failing)
}

// TestRealQuietClusterConnections: against a real etcd, behind a proxy
// that counts connections, a quiet cluster's questions (MemberList,
// Status, Alarms, again and again) keep exactly one connection to the
// member and never open the balanced client; Get dials nothing; changes
// (MemberAddAsLearner, MemberRemove, DisarmAlarm) open the balanced
// client, a second connection. Both are closed once idle, and the next
// questions open one connection again.
func TestRealQuietClusterConnections(t *testing.T) {
	endpoint := startLocalEtcd(t)
	proxy, counted := tcpProxy(t, strings.TrimPrefix(endpoint, "http://"))
	f := NewClientFactory()
	f.IdleTimeout = 500 * time.Millisecond
	t.Cleanup(func() { f.Forget("c") })
	ctx := t.Context()
	cli, err := f.Get(ctx, "c", []string{proxy}, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := counted.accepted.Load(); n != 0 {
		t.Fatalf("Get made %d connections", n)
	}
	var memberID uint64
	ask := func(wantMembers int) {
		t.Helper()
		for range 5 {
			_, list, err := cli.MemberList(ctx)
			if err != nil {
				t.Fatalf("MemberList: %v", err)
			}
			if len(list) != wantMembers {
				t.Fatalf("MemberList: %+v, want %d members", list, wantMembers)
			}
			st, err := cli.Status(ctx, proxy)
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			memberID = st.MemberID
			if _, err := cli.Alarms(ctx); err != nil {
				t.Fatalf("Alarms: %v", err)
			}
		}
	}
	ask(1)
	if a, o := counted.accepted.Load(), counted.open.Load(); a != 1 || o != 1 {
		t.Fatalf("questions made %d connections, %d open; want 1, 1", a, o)
	}
	if balancedOpen(cli) {
		t.Fatal("questions opened the balanced client")
	}

	learner, err := cli.MemberAddAsLearner(ctx, "http://127.0.0.1:1")
	if err != nil {
		t.Fatalf("MemberAddAsLearner: %v", err)
	}
	if !balancedOpen(cli) {
		t.Fatal("MemberAddAsLearner did not open the balanced client")
	}
	if a, o := counted.accepted.Load(), counted.open.Load(); a != 2 || o != 2 {
		t.Errorf("with the balanced client: %d connections made, %d open; want 2, 2", a, o)
	}
	ask(2)
	if err := cli.MemberRemove(ctx, learner.ID); err != nil {
		t.Fatalf("MemberRemove: %v", err)
	}
	if err := cli.DisarmAlarm(ctx, Alarm{MemberID: memberID, Type: AlarmNoSpace}); err != nil {
		t.Fatalf("DisarmAlarm: %v", err)
	}
	eventually(t, "closed the idle balanced client", func() bool { return !balancedOpen(cli) })
	eventually(t, "closed the idle member connection too", func() bool { return counted.open.Load() == 0 })
	ask(1)
	if a, o := counted.accepted.Load(), counted.open.Load(); a != 3 || o != 1 {
		t.Errorf("questions after the connections went idle: %d connections made in all, %d open; want 3, 1", a, o)
	}
}

// TestRealDeadFirstEndpoint: with a dead endpoint tried first (nothing
// listens there, or a listener closes each connection), MemberList and
// Alarms answer from the real member within the deadline, and the next
// MemberList starts with the member that answered.
func TestRealDeadFirstEndpoint(t *testing.T) {
	endpoint := startLocalEtcd(t)
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = refusing.Close() })
	go func() {
		for {
			c, err := refusing.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = gone.Close()
	const deadline = 4 * time.Second
	for _, tt := range []struct{ name, dead string }{
		{name: "nothing listens", dead: "http://" + gone.Addr().String()},
		{name: "listener refuses", dead: "http://" + refusing.Addr().String()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := NewClientFactory()
			t.Cleanup(func() { f.Forget("c") })
			cli, err := f.Get(t.Context(), "c", []string{endpoint, tt.dead}, Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			for name, call := range map[string]func(context.Context) error{
				"MemberList": func(ctx context.Context) error {
					_, list, err := cli.MemberList(ctx)
					if err == nil && len(list) != 1 {
						t.Errorf("MemberList: %+v", list)
					}
					return err
				},
				"Alarms": func(ctx context.Context) error { _, err := cli.Alarms(ctx); return err },
			} {
				startAt(cli, tt.dead)
				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				start := time.Now()
				err := call(ctx)
				took := time.Since(start)
				cancel()
				if err != nil {
					t.Fatalf("%s with %s first: %v", name, tt.dead, err)
				}
				if took >= deadline {
					t.Errorf("%s took %v, its whole deadline", name, took)
				}
				t.Logf("%s answered in %v with a dead endpoint first", name, took)
			}
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			start := time.Now()
			if _, _, err := cli.MemberList(ctx); err != nil {
				t.Fatalf("MemberList again: %v", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("MemberList again took %v: it tried the dead endpoint first again", took)
			}
		})
	}
}

// TestRealStatusCarriesAlarms: a real etcd puts every alarm of the
// cluster in each member's status errors, which lets the operator skip
// the alarm list while no member reports an error.
func TestRealStatusCarriesAlarms(t *testing.T) {
	t.Parallel()
	ep := startLocalEtcd(t)
	f := NewClientFactory()
	t.Cleanup(func() { f.Forget("c") })
	c, err := f.Get(t.Context(), "c", []string{ep}, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Errors) != 0 {
		t.Fatalf("status errors with no alarm: %v", st.Errors)
	}
	// Raise a NOSPACE alarm as etcd's own tests do, through the alarm API.
	raw := dialTLS(t, ep, "", "", nil)
	if _, err := pb.NewMaintenanceClient(raw.ActiveConnection()).Alarm(ctx, &pb.AlarmRequest{
		Action: pb.AlarmRequest_ACTIVATE, MemberID: st.MemberID, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatal(err)
	}
	if st, err = c.Status(ctx, ep); err != nil || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "NOSPACE") {
		t.Fatalf("status errors with a NOSPACE alarm: %q (%v), want it named", st.Errors, err)
	}
	if err := c.DisarmAlarm(ctx, Alarm{MemberID: st.MemberID, Type: "NOSPACE"}); err != nil {
		t.Fatal(err)
	}
	if st, err = c.Status(ctx, ep); err != nil || len(st.Errors) != 0 {
		t.Fatalf("status errors once disarmed: %q (%v), want none", st.Errors, err)
	}
}
