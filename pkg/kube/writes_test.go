package kube

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestResourceOf(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/pods/name/status":                            "pods",
		"/api/v1/namespaces/ns/pods":                                        "pods",
		"/apis/etcd.raftsman.io/v1alpha1/namespaces/ns/etcdmembers/x":       "etcdmembers",
		"/apis/coordination.k8s.io/v1/namespaces/raftsman-system/leases/id": "leases",
		"/apis/events.k8s.io/v1/namespaces/ns/events":                       "events",
		"/api/v1/namespaces":                                                "namespaces",
		"/version":                                                          "other",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}

type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// TestWritesLogged: at V(1) each write is logged with its method, path,
// field manager and answer; reads are not.
func TestWritesLogged(t *testing.T) {
	var lines []string
	old := writeLog
	writeLog = funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	t.Cleanup(func() { writeLog = old })
	rt := writeCounter{okTransport{}}
	for _, r := range []struct{ method, url string }{
		{http.MethodGet, "https://api/api/v1/namespaces/ns/pods/p"},
		{http.MethodPatch, "https://api/apis/etcd.raftsman.io/v1alpha1/namespaces/ns/etcdmembers/m/status?fieldManager=raftsman-member"},
	} {
		req, err := http.NewRequest(r.method, r.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"method"="PATCH"`) || !strings.Contains(lines[0], `"fieldManager"="raftsman-member"`) ||
		!strings.Contains(lines[0], `"path"="/apis/etcd.raftsman.io/v1alpha1/namespaces/ns/etcdmembers/m/status"`) || !strings.Contains(lines[0], `"status"=200`) {
		t.Errorf("logged %q, want the PATCH alone with its path, field manager and status", lines)
	}
}
