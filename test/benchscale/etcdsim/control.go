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

// Control is the benchmark's end of the control API.
type Control struct {
	base string
	http *http.Client
}

// NewControl talks to the simulator whose control API is at addr.
func NewControl(addr string) *Control {
	// The operator's reconciles resolve addresses through it at once, as
	// many as its workers: connections kept for them all, so that a busy
	// fleet does not open and close one per call (each leaving a socket in
	// TIME_WAIT for a minute).
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	return &Control{base: "http://" + addr, http: &http.Client{Transport: tr}}
}

// Addr is the control API's address, for a child process.
func (c *Control) Addr() string { return strings.TrimPrefix(c.base, "http://") }

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

func (c *Control) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
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
	if err := c.do(ctx, http.MethodPost, "/members", req, &out); err != nil {
		return "", err
	}
	return out.Addr, nil
}

// Hang makes clusters hang or answer again.
func (c *Control) Hang(ctx context.Context, clusters []string, hung bool) error {
	return c.do(ctx, http.MethodPost, "/hang", hangRequest{Clusters: clusters, Hung: hung}, nil)
}

// Stats reads the counters.
func (c *Control) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.do(ctx, http.MethodGet, "/stats", nil, &st)
	return st, err
}

// Resolve is the address serving a client URL; ok is false when nothing
// serves it (yet).
func (c *Control) Resolve(ctx context.Context, clientURL string) (addr string, ok bool, err error) {
	var out struct{ Addr string }
	switch err := c.do(ctx, http.MethodGet, "/resolve?url="+url.QueryEscape(clientURL), nil, &out); {
	case errors.Is(err, errNotFound):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return out.Addr, true, nil
}

// WaitCall waits up to timeout for the cluster's first call of method.
func (c *Control) WaitCall(ctx context.Context, cluster, method string, timeout time.Duration) (time.Time, error) {
	var out struct{ At int64 }
	q := url.Values{"cluster": {cluster}, "method": {method}, "timeout": {timeout.String()}}
	if err := c.do(ctx, http.MethodGet, "/wait?"+q.Encode(), nil, &out); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, out.At), nil
}

// ServeChild is Serve on this process's standard input and output.
func ServeChild() error { return Serve(os.Stdin, os.Stdout) }
