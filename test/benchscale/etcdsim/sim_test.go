package etcdsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
)

// tlsFixture is a cluster's CA, a serving certificate as the operator
// issues one (its DNS names and 127.0.0.1) and the operator's client
// certificate.
type tlsFixture struct {
	ca, server, client *pki.KeyPair
}

func newTLSFixture(t *testing.T, name string) tlsFixture {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA(name+"-ca", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := pki.Issue(ca, pki.Request{CommonName: "etcd-server", DNSNames: []string{"*." + name + "-peer.ns.svc", "localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: pki.UsageServer, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	client, err := pki.Issue(ca, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	return tlsFixture{ca: ca, server: server, client: client}
}

func (f tlsFixture) creds() etcd.Credentials {
	return etcd.Credentials{CertPEM: f.client.CertPEM, KeyPEM: f.client.KeyPEM, CAPEM: f.ca.CertPEM}
}

func startSim(t *testing.T) (*Sim, *Control) {
	t.Helper()
	sim := New()
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return sim, NewControl(srv.Listener.Addr().String())
}

const (
	peerURL   = "https://a-x1.a-peer.ns.svc:2380"
	clientURL = "https://a-x1.a-peer.ns.svc:2379"
)

func startMember(t *testing.T, ctl *Control, f tlsFixture) string {
	t.Helper()
	addr, err := ctl.Start(context.Background(), StartRequest{Cluster: "ns/a", Name: "a-x1", PeerURL: peerURL, ClientURL: clientURL,
		ServiceURL: "https://a.ns.svc.cluster.local:2379", Version: "3.6.16", New: true, InitialCluster: "a-x1=" + peerURL,
		CertPEM: f.server.CertPEM, KeyPEM: f.server.KeyPEM, ClientCAPEM: f.ca.CertPEM})
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestRealClient: the operator's real client, through Factory, reaches a
// simulated one-member cluster over TLS: the member list, its status and
// alarms answer on one connection kept, and a learner can be added.
func TestRealClient(t *testing.T) {
	sim, ctl := startSim(t)
	f := newTLSFixture(t, "a")
	startMember(t, ctl, f)
	factory := NewFactory(etcd.NewClientFactory(), ctl)
	t.Cleanup(func() { factory.Forget("ns/a") })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 {
		cli, err := factory.Get(ctx, "ns/a", []string{clientURL}, f.creds())
		if err != nil {
			t.Fatal(err)
		}
		_, members, err := cli.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(members) != 1 || members[0].Name != "a-x1" || members[0].ClientURLs[0] != clientURL {
			t.Fatalf("members: %+v", members)
		}
		st, err := cli.Status(ctx, clientURL)
		if err != nil {
			t.Fatal(err)
		}
		if st.MemberID != members[0].ID || st.Leader != st.MemberID || st.Version != "3.6.16" || st.StorageVersion != "3.6.0" {
			t.Fatalf("status: %+v", st)
		}
		if alarms, err := cli.Alarms(ctx); err != nil || len(alarms) != 0 {
			t.Fatalf("alarms: %v, %v", alarms, err)
		}
	}
	stats := sim.Stats()
	if len(stats.Members) != 1 {
		t.Fatalf("stats: %+v", stats)
	}
	m := stats.Members[0]
	if m.Handshakes != 1 || m.Open != 1 || m.Requests["MemberList"] != 3 || m.Requests["Status"] != 3 || m.Requests["Alarm"] != 3 {
		t.Fatalf("one kept connection and 3 of each request expected: %+v", m)
	}

	cli, err := factory.Get(ctx, "ns/a", []string{clientURL}, f.creds())
	if err != nil {
		t.Fatal(err)
	}
	learner, err := cli.MemberAddAsLearner(ctx, "https://a-x2.a-peer.ns.svc:2380")
	if err != nil {
		t.Fatal(err)
	}
	if !learner.IsLearner {
		t.Fatalf("learner: %+v", learner)
	}
	if _, err := ctl.WaitCall(ctx, "ns/a", "MemberAddAsLearner", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cli.MemberPromote(ctx, learner.ID); !errors.Is(err, etcd.ErrNotYet) {
		t.Fatalf("promoting a learner that has not started: %v", err)
	}
	if n := len(sim.Stats().Unimplemented); n != 0 {
		t.Fatalf("unimplemented calls: %v", sim.Stats().Unimplemented)
	}
}

// TestWrongCA: a client that trusts another CA is refused, and so is one
// without the cluster's client certificate.
func TestWrongCA(t *testing.T) {
	sim, ctl := startSim(t)
	f := newTLSFixture(t, "a")
	startMember(t, ctl, f)
	other := newTLSFixture(t, "b")
	for name, creds := range map[string]etcd.Credentials{
		"other CA":           {CertPEM: f.client.CertPEM, KeyPEM: f.client.KeyPEM, CAPEM: other.ca.CertPEM},
		"other client cert":  {CertPEM: other.client.CertPEM, KeyPEM: other.client.KeyPEM, CAPEM: f.ca.CertPEM},
		"no client cert":     {CAPEM: f.ca.CertPEM},
		"other CA, no cert:": {CAPEM: other.ca.CertPEM},
	} {
		factory := NewFactory(etcd.NewClientFactory(), ctl)
		cli, err := factory.Get(context.Background(), "ns/a", []string{clientURL}, creds)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if _, err := cli.Status(ctx, clientURL); err == nil {
			t.Errorf("%s: Status answered", name)
		}
		cancel()
		factory.Forget("ns/a")
	}
	if m := sim.Stats().Members[0]; m.Requests["Status"] != 0 {
		t.Fatalf("a refused client was answered: %+v", m)
	}
}

// TestHang: a hung cluster answers nothing, not even on the connection
// made before, until it resumes.
func TestHang(t *testing.T) {
	sim, ctl := startSim(t)
	f := newTLSFixture(t, "a")
	startMember(t, ctl, f)
	factory := NewFactory(etcd.NewClientFactory(), ctl)
	t.Cleanup(func() { factory.Forget("ns/a") })
	cli, err := factory.Get(context.Background(), "ns/a", []string{clientURL}, f.creds())
	if err != nil {
		t.Fatal(err)
	}
	status := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := cli.Status(ctx, clientURL)
		return err
	}
	if err := status(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Hang(context.Background(), []string{"ns/a"}, true); err != nil {
		t.Fatal(err)
	}
	if err := status(300 * time.Millisecond); !errors.Is(err, etcd.ErrUnreachable) {
		t.Fatalf("a hung member answered: %v", err)
	}
	if err := ctl.Hang(context.Background(), []string{"ns/a"}, false); err != nil {
		t.Fatal(err)
	}
	if err := status(5 * time.Second); err != nil {
		t.Fatalf("after resuming: %v", err)
	}
	if m := sim.Stats().Members[0]; m.Handshakes != 1 {
		t.Fatalf("the connection was made again: %+v", m)
	}
}

// TestProcesses: a Control over several simulators starts each cluster's
// members in the one ProcessOf names, finds a member's address in
// whichever serves it, hangs each cluster where it is, and adds up the
// counters of all.
func TestProcesses(t *testing.T) {
	var sims []*Sim
	var addrs []string
	for range 3 {
		sim := New()
		srv := httptest.NewServer(sim.Handler())
		t.Cleanup(func() { srv.Close(); sim.Close() })
		sims = append(sims, sim)
		addrs = append(addrs, srv.Listener.Addr().String())
	}
	ctl := NewControl(strings.Join(addrs, ","))
	if ctl.Processes() != 3 || ctl.Addr() != strings.Join(addrs, ",") {
		t.Fatalf("control of %d processes at %s", ctl.Processes(), ctl.Addr())
	}
	ctx := context.Background()
	var keys []string
	for i := range 12 {
		name := fmt.Sprintf("c%d", i)
		key := "ns/" + name
		peer, client := "https://"+name+"-0."+name+"-peer.ns.svc:2380", "https://"+name+"-0."+name+"-peer.ns.svc:2379"
		addr, err := ctl.Start(ctx, StartRequest{Cluster: key, Name: name + "-0", PeerURL: peer, ClientURL: client, Version: "3.6.16", New: true, InitialCluster: name + "-0=" + peer})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sims[ProcessOf(key, 3)].Resolve(client); !ok {
			t.Fatalf("%s is not in process %d", key, ProcessOf(key, 3))
		}
		if got, ok, err := ctl.Resolve(ctx, client); err != nil || !ok || got != addr {
			t.Fatalf("resolve %s: %s, %v, %v; want %s", client, got, ok, err, addr)
		}
		keys = append(keys, key)
	}
	if _, ok, err := ctl.Resolve(ctx, "https://nobody.ns.svc:2379"); ok || err != nil {
		t.Fatalf("resolved a URL nothing serves: %v, %v", ok, err)
	}
	if err := ctl.Hang(ctx, keys, true); err != nil {
		t.Fatal(err)
	}
	st, err := ctl.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 12 {
		t.Fatalf("stats of %d members, want 12", len(st.Members))
	}
	for _, m := range st.Members {
		if !m.Hung {
			t.Fatalf("not hung: %+v", m)
		}
	}
	if err := ctl.Hang(ctx, keys, false); err != nil {
		t.Fatal(err)
	}
}
