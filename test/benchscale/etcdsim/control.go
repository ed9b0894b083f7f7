package etcdsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"
)

// Handler is the simulator's control API, for the benchmark on loopback:
//
//	POST /members        StartRequest -> {"addr": "127.0.0.1:port"}
//	POST /hang           {"clusters": [...], "hung": true|false}
//	GET  /stats          Stats
//	GET  /resolve?url=U  {"addr": ...}, 404 when nothing serves U
//	GET  /wait?cluster=K&method=M&timeout=D  {"at": unix nanoseconds}
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /members", func(w http.ResponseWriter, r *http.Request) {
		var req StartRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		addr, err := s.Start(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		writeJSON(w, map[string]string{"addr": addr})
	})
	mux.HandleFunc("POST /hang", func(w http.ResponseWriter, r *http.Request) {
		var req hangRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.Hang(req.Clusters, req.Hung); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Stats()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st.HeapInuse, st.Goroutines = int64(ms.HeapInuse), runtime.NumGoroutine()
		writeJSON(w, st)
	})
	mux.HandleFunc("GET /resolve", func(w http.ResponseWriter, r *http.Request) {
		addr, ok := s.Resolve(r.URL.Query().Get("url"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]string{"addr": addr})
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		d, err := time.ParseDuration(q.Get("timeout"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		at, err := s.WaitCall(ctx, q.Get("cluster"), q.Get("method"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		writeJSON(w, map[string]int64{"at": at.UnixNano()})
	})
	return mux
}

type hangRequest struct {
	Clusters []string `json:"clusters"`
	Hung     bool     `json:"hung"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Serve runs the simulator in this process: its control API on a loopback
// port whose address it writes as the first line of out, until in ends
// (the parent's end of the pipe closing, or the parent dying).
func Serve(in io.Reader, out io.Writer) error {
	sim := New()
	defer sim.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	defer func() { _ = srv.Close() }()
	if _, err := fmt.Fprintf(out, "etcdsim %s\n", lis.Addr()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// Control is the benchmark's end of the control API, of one simulator
// process or of several that share the clusters, each cluster wholly in one
// (ProcessOf): a process holds a listener and a connection per member, and
// an open-file limit that cannot be raised far enough for every member of
// a large fleet in one process leaves no other way.
type Control struct {
	bases []string
	http  *http.Client
}

// NewControl talks to the simulator whose control API is at addr, or to
// the processes at a comma-separated list of addresses (Addr's).
func NewControl(addr string) *Control {
	// The operator's reconciles resolve addresses through it at once, as
	// many as its workers: connections kept for them all, so that a busy
	// fleet does not open and close one per call (each leaving a socket in
	// TIME_WAIT for a minute).
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	c := &Control{http: &http.Client{Transport: tr}}
	for a := range strings.SplitSeq(addr, ",") {
		c.bases = append(c.bases, "http://"+a)
	}
	return c
}

// Addr is the control API's address, or the processes' comma-separated,
// for a child process.
func (c *Control) Addr() string {
	addrs := make([]string, len(c.bases))
	for i, b := range c.bases {
		addrs[i] = strings.TrimPrefix(b, "http://")
	}
	return strings.Join(addrs, ",")
}

// Processes is the number of simulator processes.
func (c *Control) Processes() int { return len(c.bases) }

// ProcessOf is the process, of n, that serves a cluster (namespace/name).
func ProcessOf(cluster string, n int) int {
	return int(hashID(cluster) % uint64(n))
}

func (c *Control) of(cluster string) string { return c.bases[ProcessOf(cluster, len(c.bases))] }

// ReadAddr reads the address line Serve writes first.
func ReadAddr(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("the simulator did not start: %w", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "etcdsim ")
	if !ok {
		return "", fmt.Errorf("the simulator said %q", line)
	}
	return addr, nil
}

func (c *Control) do(ctx context.Context, base, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNotFound && method == http.MethodGet {
		return errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("etcdsim %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

var errNotFound = errors.New("not found")

// Start starts a member and returns its address.
func (c *Control) Start(ctx context.Context, req StartRequest) (string, error) {
	var out struct{ Addr string }
	if err := c.do(ctx, c.of(req.Cluster), http.MethodPost, "/members", req, &out); err != nil {
		return "", err
	}
	return out.Addr, nil
}

// Hang makes clusters hang or answer again.
func (c *Control) Hang(ctx context.Context, clusters []string, hung bool) error {
	byBase := map[string][]string{}
	for _, k := range clusters {
		byBase[c.of(k)] = append(byBase[c.of(k)], k)
	}
	for base, keys := range byBase {
		if err := c.do(ctx, base, http.MethodPost, "/hang", hangRequest{Clusters: keys, Hung: hung}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Stats reads the counters, of every process together.
func (c *Control) Stats(ctx context.Context) (Stats, error) {
	all := Stats{Unimplemented: map[string]int64{}}
	for _, base := range c.bases {
		var st Stats
		if err := c.do(ctx, base, http.MethodGet, "/stats", nil, &st); err != nil {
			return Stats{}, err
		}
		all.Members = append(all.Members, st.Members...)
		for k, v := range st.Unimplemented {
			all.Unimplemented[k] += v
		}
		all.HandshakeErrors += st.HandshakeErrors
		if st.LastHandshakeError != "" {
			all.LastHandshakeError = st.LastHandshakeError
		}
		all.HeapInuse += st.HeapInuse
		all.Goroutines += st.Goroutines
	}
	return all, nil
}

// Resolve is the address serving a client URL; ok is false when nothing
// serves it (yet). A URL does not say its cluster: each process is asked
// in turn.
func (c *Control) Resolve(ctx context.Context, clientURL string) (addr string, ok bool, err error) {
	for _, base := range c.bases {
		var out struct{ Addr string }
		switch err := c.do(ctx, base, http.MethodGet, "/resolve?url="+url.QueryEscape(clientURL), nil, &out); {
		case errors.Is(err, errNotFound):
		case err != nil:
			return "", false, err
		default:
			return out.Addr, true, nil
		}
	}
	return "", false, nil
}

// WaitCall waits up to timeout for the cluster's first call of method.
func (c *Control) WaitCall(ctx context.Context, cluster, method string, timeout time.Duration) (time.Time, error) {
	var out struct{ At int64 }
	q := url.Values{"cluster": {cluster}, "method": {method}, "timeout": {timeout.String()}}
	if err := c.do(ctx, c.of(cluster), http.MethodGet, "/wait?"+q.Encode(), nil, &out); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, out.At), nil
}

// ServeChild is Serve on this process's standard input and output.
func ServeChild() error { return Serve(os.Stdin, os.Stdout) }
