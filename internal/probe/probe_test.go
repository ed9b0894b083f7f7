package probe

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	// /readyz fails twice, then answers; /healthz answers; /down never does.
	var readyz atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			if readyz.Add(1) <= 2 {
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case "/healthz":
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()

	for _, c := range []struct {
		name    string
		args    []string
		wantErr string
		want    []string
	}{
		{name: "answers after failures", args: []string{"--interval=1ms", srv.URL + "/readyz", srv.URL + "/healthz"},
			want: []string{"/readyz: 200 OK (attempt 3)", "/healthz: 200 OK (attempt 1)", `503 Service Unavailable: "not yet\n"`}},
		{name: "never answers", args: []string{"--interval=1ms", "--timeout=50ms", srv.URL + "/down"},
			wantErr: "/down did not answer 2xx in time"},
		{name: "nothing listens", args: []string{"--interval=1ms", "--timeout=50ms", "http://127.0.0.1:1/readyz"},
			wantErr: "did not answer 2xx in time"},
		{name: "no URL", args: nil, wantErr: "usage"},
		{name: "bad flag", args: []string{"--nope"}, wantErr: "flag provided but not defined"},
	} {
		var out bytes.Buffer
		err := Run(context.Background(), c.args, &out)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, out.String())
			}
		}
	}
}
