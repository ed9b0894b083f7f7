//go:build failpoints

package failpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// Enabled says whether this build has failpoints.
const Enabled = true

var (
	mu    sync.Mutex
	armed = map[string]string{}
	hits  = map[string]int{}
)

// Hit fires the point if it is armed: it disarms it and ends the process
// at once, as a crash would. Not a Go panic: controller-runtime recovers
// panics in reconcilers, and a recovered panic is no crash.
func Hit(name string) {
	mu.Lock()
	hits[name]++
	action, ok := armed[name]
	delete(armed, name)
	mu.Unlock()
	if ok && action == "panic" {
		fmt.Fprintf(os.Stderr, "panic: failpoint %s\n", name)
		exit(2)
	}
}

// exit ends the process; tests replace it.
var exit = os.Exit

// Arm arms a point with an action; only "panic" is known.
func Arm(name, action string) error {
	if action != "panic" {
		return fmt.Errorf("failpoint %s: unknown action %q, want panic", name, action)
	}
	mu.Lock()
	defer mu.Unlock()
	armed[name] = action
	return nil
}

// Disarm disarms a point.
func Disarm(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(armed, name)
}

func init() {
	for _, kv := range strings.Split(os.Getenv("RAFTSMAN_FAILPOINTS"), ",") {
		if name, action, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			if err := Arm(name, action); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
	}
	if addr := os.Getenv("RAFTSMAN_FAILPOINT_ADDR"); addr != "" {
		go func() {
			if err := http.ListenAndServe(addr, Handler()); err != nil {
				fmt.Fprintln(os.Stderr, "failpoint server:", err)
			}
		}()
	}
}

// Handler serves the failpoint API.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /failpoints", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"armed": armed, "hits": hits})
	})
	mux.HandleFunc("PUT /failpoints/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64))
		if err := Arm(r.PathValue("name"), strings.TrimSpace(string(body))); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("DELETE /failpoints/{name}", func(_ http.ResponseWriter, r *http.Request) {
		Disarm(r.PathValue("name"))
	})
	return mux
}
