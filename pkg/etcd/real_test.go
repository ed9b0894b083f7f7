package etcd

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// maintenance answers Status and Defragment as a member would.
type maintenance struct {
	pb.UnimplementedMaintenanceServer
	id uint64
}

func (m *maintenance) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	return &pb.StatusResponse{Header: &pb.ResponseHeader{MemberId: m.id}, Leader: m.id, Version: "3.6.16"}, nil
}

func (m *maintenance) Defragment(context.Context, *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	return &pb.DefragmentResponse{}, nil
}

// serveMember runs a gRPC server with etcd's maintenance API on a local
// port, counting the connections it is given.
func serveMember(t *testing.T, id uint64) (string, *countingListener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	srv := grpc.NewServer()
	pb.RegisterMaintenanceServer(srv, &maintenance{id: id})
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(srv.Stop)
	return "http://" + l.Addr().String(), cl
}

// TestMemberCallsReuseOneConnection: health checks of a member (Status)
// and its defragmentation go over one connection per member, kept between
// calls, not one dialled per call; a member the cluster no longer has gets
// its connection closed, and a new one when it is back.
func TestMemberCallsReuseOneConnection(t *testing.T) {
	t.Parallel()
	ep1, l1 := serveMember(t, 1)
	ep2, l2 := serveMember(t, 2)
	f := NewClientFactory()
	t.Cleanup(func() { f.Forget("ns/c") })
	ctx := t.Context()
	cli, err := f.Get(ctx, "ns/c", []string{ep1, ep2}, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	before1, before2 := l1.accepted.Load(), l2.accepted.Load()
	for range 10 {
		for i, ep := range []string{ep1, ep2} {
			st, err := cli.Status(ctx, ep)
			if err != nil {
				t.Fatalf("status of %s: %v", ep, err)
			}
			if st.MemberID != uint64(i+1) || st.Version != "3.6.16" {
				t.Fatalf("status of %s: %+v", ep, st)
			}
		}
	}
	if err := cli.Defragment(ctx, ep1); err != nil {
		t.Fatal(err)
	}
	if n := l1.accepted.Load() - before1; n > 1 {
		t.Errorf("member 1: %d new connections for 11 calls, want at most 1", n)
	}
	if n := l2.accepted.Load() - before2; n > 1 {
		t.Errorf("member 2: %d new connections for 10 calls, want at most 1", n)
	}
	rc := cli.(*realClient)
	if _, err := f.Get(ctx, "ns/c", []string{ep1}, Credentials{}); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	_, kept := rc.conns[ep2]
	rc.mu.Unlock()
	if kept {
		t.Errorf("the connection to a member the cluster no longer has is kept")
	}
}
