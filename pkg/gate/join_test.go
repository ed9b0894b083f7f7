package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/raftsman/raftsman/internal/testenv"
)

func TestInitialCluster(t *testing.T) {
	const me = "https://c-new.c-peer.ns.svc:2380"
	tests := []struct {
		name    string
		members []peerMember
		want    string
	}{
		{
			name: "started voters and the joiner, not started yet",
			members: []peerMember{
				{Name: "c-a", PeerURLs: []string{"https://c-a.c-peer.ns.svc:2380"}},
				{Name: "c-b", PeerURLs: []string{"https://c-b.c-peer.ns.svc:2380"}},
				{PeerURLs: []string{me}, IsLearner: true},
			},
			want: "c-a=https://c-a.c-peer.ns.svc:2380,c-b=https://c-b.c-peer.ns.svc:2380,c-new=" + me,
		},
		{
			name: "another learner not started yet is named after its host",
			members: []peerMember{
				{Name: "c-a", PeerURLs: []string{"https://c-a.c-peer.ns.svc:2380"}},
				{PeerURLs: []string{"https://c-other.c-peer.ns.svc:2380"}, IsLearner: true},
				{PeerURLs: []string{me}, IsLearner: true},
			},
			want: "c-a=https://c-a.c-peer.ns.svc:2380,c-other=https://c-other.c-peer.ns.svc:2380,c-new=" + me,
		},
		{
			name: "names that would collide are made unique",
			members: []peerMember{
				{Name: "127", PeerURLs: []string{"http://127.0.0.1:1"}},
				{PeerURLs: []string{"http://127.0.0.1:2"}},
				{PeerURLs: []string{"http://127.0.0.1:3"}},
				{PeerURLs: []string{me}},
			},
			want: "127=http://127.0.0.1:1,unstarted-1=http://127.0.0.1:2,unstarted-2=http://127.0.0.1:3,c-new=" + me,
		},
		{
			name: "a member with two peer URLs keeps both",
			members: []peerMember{
				{Name: "c-a", PeerURLs: []string{"https://a1:2380", "https://a2:2380"}},
				{PeerURLs: []string{me}},
			},
			want: "c-a=https://a1:2380,c-a=https://a2:2380,c-new=" + me,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := initialCluster(tt.members, "c-new", me); got != tt.want {
				t.Errorf("initialCluster:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWithInitialCluster(t *testing.T) {
	in := []string{"/usr/local/bin/etcd", "--name=a", "--initial-cluster=a=x", "--initial-cluster-state=existing", "--initial-cluster-token=t"}
	got := withInitialCluster(in, "a=x,b=y")
	want := []string{"/usr/local/bin/etcd", "--name=a", "--initial-cluster-state=existing", "--initial-cluster-token=t", "--initial-cluster=a=x,b=y"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWithoutInitialCorruptCheck(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"etcd", "--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"},
			[]string{"etcd", "--experimental-initial-corrupt-check=false", "--experimental-compact-hash-check-enabled=true"}},
		{[]string{"etcd", "--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"},
			[]string{"etcd", "--feature-gates=InitialCorruptCheck=false,CompactHashCheck=true"}},
		{[]string{"etcd", "--feature-gates=CompactHashCheck=true"}, []string{"etcd", "--feature-gates=CompactHashCheck=true"}},
		{[]string{"etcd", "--name=a"}, []string{"etcd", "--name=a"}},
	}
	for _, tt := range tests {
		if got := withoutInitialCorruptCheck(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("withoutInitialCorruptCheck(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseJoin(t *testing.T) {
	c, err := parseJoin([]string{"--name=m", "--peer-url=http://m:2380", "--data-dir=/d", "--peers=http://a:2380, http://m:2380,http://a:2380,,http://b:2380", "--", "/usr/local/bin/etcd", "--name=m"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://a:2380", "http://b:2380"}; !slices.Equal(c.peers, want) {
		t.Errorf("peers %q, want %q (itself and repeats left out)", c.peers, want)
	}
	if want := []string{"/usr/local/bin/etcd", "--name=m"}; !slices.Equal(c.etcd, want) {
		t.Errorf("etcd command %q, want %q", c.etcd, want)
	}
	if _, err := parseJoin([]string{"--name=m", "--peer-url=u", "--data-dir=/d"}); err == nil {
		t.Error("no etcd command: want an error")
	}
}

// TestGateWaitsUntilListed: the gate never returns while the member list
// lacks the member, whatever peers answer, and returns the list of the
// moment once it has it; a member with data starts at once.
func TestGateWaitsUntilListed(t *testing.T) {
	const me = "http://c-new.c-peer:2380"
	var listedNow atomic.Bool
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/members" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		ms := []peerMember{{Name: "c-a", PeerURLs: []string{"http://c-a.c-peer:2380"}}}
		if listedNow.Load() {
			ms = append(ms, peerMember{PeerURLs: []string{me}, IsLearner: true})
		}
		_ = json.NewEncoder(w).Encode(ms)
	}))
	defer srv.Close()
	down := "http://127.0.0.1:1" // nothing listens: asked, fails, next

	cfg := func(dataDir string) *joinConfig {
		return &joinConfig{name: "c-new", peerURL: me, dataDir: dataDir, peers: []string{down, srv.URL},
			interval: 20 * time.Millisecond, timeout: time.Second, logEvery: time.Hour, out: io.Discard,
			etcd: []string{"etcd", "--initial-cluster=c-new=" + me, "--feature-gates=InitialCorruptCheck=true"}}
	}

	t.Run("not listed: waits", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		before := asked.Load()
		args, err := cfg(t.TempDir()).gate(ctx)
		if err == nil {
			t.Fatalf("gate returned %q while etcd does not list the member", args)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v, want the context's deadline", err)
		}
		if n := asked.Load() - before; n < 2 {
			t.Errorf("asked %d times in 300 ms, want it to keep asking", n)
		}
	})
	t.Run("listed: the live list", func(t *testing.T) {
		listedNow.Store(true)
		defer listedNow.Store(false)
		args, err := cfg(t.TempDir()).gate(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"etcd", "--feature-gates=InitialCorruptCheck=false", "--initial-cluster=c-a=http://c-a.c-peer:2380,c-new=" + me}
		if !slices.Equal(args, want) {
			t.Errorf("args %q, want %q", args, want)
		}
	})
	t.Run("a failed first start left a database, no WAL: asks again", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "member", "snap", "db"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if args, err := cfg(dir).gate(ctx); err == nil {
			t.Fatalf("gate returned %q while etcd does not list the member", args)
		}
	})
	t.Run("not a joiner's first start: etcd starts as it is", func(t *testing.T) {
		c := cfg(t.TempDir())
		c.restart = true
		args, err := c.gate(t.Context())
		if err != nil || !slices.Equal(args, c.etcd) {
			t.Fatalf("gate = %q, %v; want the command unchanged", args, err)
		}
	})
	t.Run("data: starts at once", func(t *testing.T) {
		dir := t.TempDir()
		writeWAL(t, dir)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		args, err := cfg(dir).gate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := cfg(dir).etcd; !slices.Equal(args, want) {
			t.Errorf("args %q, want the command unchanged %q", args, want)
		}
	})
}

// TestGateJoinsRealEtcd: against a real etcd, a joiner's gate waits while
// etcd does not list it, and once it is added as a learner the command it
// returns starts an etcd that joins, alongside another learner added and
// not started (etcd refuses a list that lacks it: "member count is
// unequal"). Two learners at once need etcd 3.6 (--max-learners), which
// envtest's etcd is.
func TestGateJoinsRealEtcd(t *testing.T) {
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd")
	if fi, err := os.Stat(bin); os.Getenv("KUBEBUILDER_ASSETS") == "" || err != nil || fi.IsDir() {
		t.Skip("no etcd binary in KUBEBUILDER_ASSETS (make envtest-assets)")
	}
	ports := testenv.FreePorts(t, 6)
	url := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", ports[i]) }
	first, firstPeer := url(0), url(1)
	startEtcd(t, bin, "--name=first", "--data-dir="+t.TempDir(), "--listen-client-urls="+first, "--advertise-client-urls="+first,
		"--listen-peer-urls="+firstPeer, "--initial-advertise-peer-urls="+firstPeer, "--initial-cluster=first="+firstPeer, "--initial-cluster-state=new", "--max-learners=2")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{first}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("etcd not up: %v", err)
	}

	joiner, joinerPeer := url(2), url(3)
	dataDir := t.TempDir()
	etcdArgs := []string{bin, "--name=joiner", "--data-dir=" + dataDir, "--listen-client-urls=" + joiner, "--advertise-client-urls=" + joiner,
		"--listen-peer-urls=" + joinerPeer, "--initial-advertise-peer-urls=" + joinerPeer, "--initial-cluster=stale=" + firstPeer,
		"--initial-cluster-state=existing", "--max-learners=2", "--log-level=error", "--feature-gates=InitialCorruptCheck=true"}
	cfg := &joinConfig{name: "joiner", peerURL: joinerPeer, dataDir: dataDir, peers: []string{firstPeer},
		interval: 50 * time.Millisecond, timeout: time.Second, logEvery: time.Hour, out: io.Discard, etcd: etcdArgs}

	waitCtx, waitCancel := context.WithTimeout(ctx, time.Second)
	if args, err := cfg.gate(waitCtx); err == nil {
		t.Fatalf("gate returned %q before the member was added", args)
	}
	waitCancel()

	// Another learner, added first and never started, is in the list.
	if _, err := cli.MemberAddAsLearner(ctx, []string{url(5)}); err != nil {
		t.Fatal(err)
	}
	added, err := cli.MemberAddAsLearner(ctx, []string{joinerPeer})
	if err != nil {
		t.Fatal(err)
	}
	args, err := cfg.gate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	startEtcd(t, args[0], args[1:]...)
	for {
		ms, err := cli.MemberList(ctx)
		if err == nil {
			for _, m := range ms.Members {
				if m.ID == added.Member.ID && m.Name == "joiner" {
					return // started and published its name: it joined
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the joiner started with %q never joined: %v", args, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func startEtcd(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
}

// TestJoinerBefore: a listed joiner starts after every joiner named before
// it that is added and not serving its peers yet; started members, joiners
// named after it, and joiners that serve do not hold it.
func TestJoinerBefore(t *testing.T) {
	serving := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			_, _ = io.WriteString(w, `{"etcdserver":"3.6.16","etcdcluster":"3.6.0"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer serving.Close()
	// Listens and answers nothing, like an etcd in its own start.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	const me = "http://me:2380"
	tests := []struct {
		name    string
		self    string
		members []peerMember
		want    string
	}{
		{"a joiner before it serves", "joiner", []peerMember{{PeerURLs: []string{serving.URL}, IsLearner: true}, {PeerURLs: []string{me}}}, ""},
		{"a joiner before it listens and does not answer", "joiner", []peerMember{{PeerURLs: []string{silent.URL}, IsLearner: true}, {PeerURLs: []string{me}}}, "127"},
		{"a joiner before it does not listen", "joiner", []peerMember{{PeerURLs: []string{"http://127.0.0.1:1"}, IsLearner: true}, {PeerURLs: []string{me}}}, "127"},
		{"a joiner after it does not hold it", "000", []peerMember{{PeerURLs: []string{silent.URL}, IsLearner: true}, {PeerURLs: []string{me}}}, ""},
		{"a started member does not hold it", "joiner", []peerMember{{Name: "a", PeerURLs: []string{silent.URL}}, {PeerURLs: []string{me}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &joinConfig{name: tt.self, peerURL: me, probeTimeout: 200 * time.Millisecond}
			if got := c.joinerBefore(t.Context(), tt.members); got != tt.want {
				t.Errorf("joinerBefore = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWaitForPeers: a member with data starts once each member named to
// start first serves its peers, or once the wait's bound is over.
func TestWaitForPeers(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			<-r.Context().Done() // listens, answers nothing: in its own start
			return
		}
		_, _ = io.WriteString(w, `{"etcdserver":"3.6.16"}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeWAL(t, dir)
	cfg := func(wait time.Duration) *joinConfig {
		return &joinConfig{name: "m", peerURL: "http://m:2380", dataDir: dir, after: []string{srv.URL},
			turnWait: wait, probeTimeout: 100 * time.Millisecond, out: io.Discard, etcd: []string{"etcd"}}
	}
	t.Run("the peer before serves: starts", func(t *testing.T) {
		go func() { time.Sleep(300 * time.Millisecond); up.Store(true) }()
		defer up.Store(false)
		start := time.Now()
		args, err := cfg(time.Minute).gate(t.Context())
		if err != nil || !slices.Equal(args, []string{"etcd"}) {
			t.Fatalf("gate = %q, %v", args, err)
		}
		if !up.Load() {
			t.Errorf("started after %s, before the peer served", time.Since(start))
		}
	})
	t.Run("the peer never serves: starts after the bound", func(t *testing.T) {
		args, err := cfg(300 * time.Millisecond).gate(t.Context())
		if err != nil || !slices.Equal(args, []string{"etcd"}) {
			t.Fatalf("gate = %q, %v", args, err)
		}
	})
}

// writeWAL leaves a WAL file in the data directory dir, as a member that
// joined has.
func writeWAL(t *testing.T, dir string) {
	t.Helper()
	wal := filepath.Join(dir, "member", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}
