package robustness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/raftsman/raftsman/internal/testenv"
)

// etcdBinary finds the etcd the project builds for the local cluster (the
// version in hack/cluster/versions.sh), or the one envtest uses. Without one
// the test skips, except in CI, where make test builds it first.
func etcdBinary(t *testing.T) string {
	t.Helper()
	var candidates []string
	if b, err := os.ReadFile("../../hack/cluster/versions.sh"); err == nil {
		if m := regexp.MustCompile(`ETCD_VERSION=\$\{ETCD_VERSION:-([0-9.]+)\}`).FindSubmatch(b); m != nil {
			candidates = append(candidates, fmt.Sprintf("../../_output/bin/etcd-v%s/etcd", m[1]))
		}
	}
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "etcd"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			abs, err := filepath.Abs(c)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no etcd binary at %v; make test builds it before the unit tests", candidates)
	}
	t.Skipf("no etcd binary at %v (built by make envtest-assets or make cluster-up)", candidates)
	return ""
}

// localEtcd is one etcd member on loopback whose process the test can kill
// and start again on the same data.
type localEtcd struct {
	t       *testing.T
	binary  string
	dataDir string
	client  string
	peer    string
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *os.File
}

func startEtcd(t *testing.T) *localEtcd {
	t.Helper()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	ports := testenv.FreePorts(t, 2)
	e := &localEtcd{
		t: t, binary: etcdBinary(t), dataDir: filepath.Join(dir, "data"), log: log,
		client: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		peer:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	}
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.kill()
		_ = log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("etcd log:\n%s", tail(string(b), 40))
			}
		}
	})
	return e
}

func (e *localEtcd) start() error {
	e.cmd = exec.Command(e.binary,
		"--name", "robustness", "--data-dir", e.dataDir,
		"--listen-client-urls", e.client, "--advertise-client-urls", e.client,
		"--listen-peer-urls", e.peer, "--initial-advertise-peer-urls", e.peer,
		"--initial-cluster", "robustness="+e.peer, "--log-level", "warn")
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	if err := e.cmd.Start(); err != nil {
		return err
	}
	e.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(e.cmd, e.exited)
	return nil
}

// kill ends the process this test started, by its own handle, and waits for it.
func (e *localEtcd) kill() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	select {
	case <-e.exited:
	default:
		_ = e.cmd.Process.Signal(syscall.SIGKILL)
		<-e.exited
	}
}

func (e *localEtcd) config() clientv3.Config {
	return clientv3.Config{
		Endpoints:   []string{e.client},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	}
}

// waitReady waits, at most 10 s, for a linearizable read to succeed.
func (e *localEtcd) waitReady(ctx context.Context, c *clientv3.Client) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Get(rctx, "ready")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("etcd at %s not ready: %v", e.client, err)
		}
		select {
		case <-e.exited:
			e.t.Fatalf("etcd exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestTrafficAgainstEtcd runs the recorder against a real etcd on loopback and
// checks what it recorded: the whole chain from client calls to the verdict.
// The second case kills etcd in the middle of the traffic and starts it again
// on the same data, so the history holds writes whose outcome the clients
// never learned.
func TestTrafficAgainstEtcd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		restart bool
	}{
		{name: "steady"},
		{name: "etcd killed and restarted", restart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			e := startEtcd(t)
			wc, err := clientv3.New(e.config())
			if err != nil {
				t.Fatal(err)
			}
			defer wc.Close()
			e.waitReady(ctx, wc)

			prefix := "/robustness/" + strings.ReplaceAll(tt.name, " ", "-") + "/"
			w, err := Watch(ctx, wc, prefix, 0)
			if err != nil {
				t.Fatal(err)
			}
			restarted := make(chan error, 1)
			if tt.restart {
				go func() {
					// Kill while writes are in flight, and leave the clients
					// facing a closed port for a while before etcd comes back.
					time.Sleep(1200 * time.Millisecond)
					e.kill()
					time.Sleep(800 * time.Millisecond)
					restarted <- e.start()
				}()
			} else {
				restarted <- nil
			}
			began := time.Now()
			h, err := Run(ctx, TrafficConfig{
				NewClient: NewClientFactory(e.config()), Prefix: prefix,
				Clients: 4, Keys: 8, Duration: 3500 * time.Millisecond, Rate: 400,
				RequestTimeout: 500 * time.Millisecond, Seed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			traffic := time.Since(began)
			if err := <-restarted; err != nil {
				t.Fatalf("restart etcd: %v", err)
			}
			fin, err := ReadFinal(ctx, wc, prefix, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			watch := w.Stop(fin.Revision, 5*time.Second)
			r := Check(h, fin, CheckConfig{Timeout: 10 * time.Second, Watch: watch})
			t.Logf("traffic %s, watch %d events up to revision %d (final %d): %s",
				traffic.Round(time.Millisecond), len(watch.Events), watch.Progress, fin.Revision, r)

			if !r.OK() {
				dir := t.ArtifactDir()
				if err := r.Write(dir); err != nil {
					t.Error(err)
				}
				t.Fatalf("check failed; history and visualization in %s", dir)
			}
			if watch.Progress < fin.Revision {
				t.Errorf("watch reached revision %d, not the final %d", watch.Progress, fin.Revision)
			}
			// Low bars: a loaded machine serves fewer operations, and the
			// check is about the answers, not the rate.
			if r.Counts.Acked < 20 || r.Counts.Reads < 20 {
				t.Errorf("too little traffic to mean anything: %+v", r.Counts)
			}
			if tt.restart && r.Counts.Indeterminate == 0 {
				// Timing decides whether a write was in flight at the kill.
				t.Logf("no indeterminate write this time although etcd was killed: %+v", r.Counts)
			}
			if !tt.restart {
				checkCorruptions(t, h, fin)
			}
			// Without the watch's help porcupine has to place the
			// indeterminate writes itself.
			// Placing them can take the checker longer than its bound on a
			// loaded machine (each may have taken effect or not): Unknown
			// is then no finding. A violation is.
			switch alone := Check(h, fin, CheckConfig{Timeout: 10 * time.Second}); alone.Linearizable {
			case Linearizable:
			case NotLinearizable:
				t.Errorf("without the watch: %s", alone)
			default:
				t.Logf("without the watch the check did not end within its bound (no finding): %s", alone)
			}
		})
	}
}

// checkCorruptions makes a real history wrong in two ways and expects the
// checker to notice each: a read that returns an older write's value after a
// newer write to the key was acknowledged, and a final read that lost a key.
func checkCorruptions(t *testing.T, h *History, fin *FinalState) {
	t.Helper()
	stale := *h
	stale.Operations = slices.Clone(h.Operations)
	if !injectStaleRead(stale.Operations) {
		t.Fatal("no read in the history to make stale")
	}
	if r := Check(&stale, fin, CheckConfig{Timeout: 10 * time.Second}); r.Linearizable != NotLinearizable {
		t.Errorf("history with a stale read: %s", r)
	}

	lost := *fin
	lost.KVs = maps.Clone(fin.KVs)
	for k, kv := range lost.KVs {
		if slices.ContainsFunc(h.Operations, func(op Operation) bool {
			return op.Acked() && op.Request.Key == k && op.Response.Revision == kv.ModRevision
		}) {
			delete(lost.KVs, k)
			break
		}
	}
	if r := Check(h, &lost, CheckConfig{Timeout: 10 * time.Second}); len(r.LostWrites) == 0 || r.Linearizable != NotLinearizable {
		t.Errorf("final read without an acknowledged key: %s", r)
	}
}

// injectStaleRead finds a read that returned the value of write w2, where an
// earlier write w1 to the same key had returned before w2 was called, and
// makes the read return w1's value and revision instead.
func injectStaleRead(ops []Operation) bool {
	for i := len(ops) - 1; i >= 0; i-- {
		g := ops[i]
		if g.Request.Kind != OpGet || !g.Response.Found {
			continue
		}
		var w2 *Operation
		for j := range ops {
			if ops[j].writesValue() && ops[j].Acked() && ops[j].Request.Value == g.Response.KV.Value {
				w2 = &ops[j]
			}
		}
		if w2 == nil || w2.Return >= g.Call {
			continue
		}
		for j := range ops {
			w1 := ops[j]
			if w1.writesValue() && w1.Acked() && w1.Request.Key == g.Request.Key && w1.Return < w2.Call {
				ops[i].Response = Response{Revision: w1.Response.Revision, Found: true,
					KV: KV{Value: w1.Request.Value, ModRevision: w1.Response.Revision}}
				return true
			}
		}
	}
	return false
}
