package etcdsim

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
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
