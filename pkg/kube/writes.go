package kube

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// apiWrites counts the operator's writes to the API server by resource, so
// that the cost of a cluster can be told apart from leader election's lease
// renewals (client-go's own request metric has no resource label).
var apiWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "raftsman",
	Name:      "api_writes_total",
	Help:      "Write requests (POST, PUT, PATCH, DELETE) the operator sent to the API server, by resource.",
}, []string{"resource"})

func init() {
	metrics.Registry.MustRegister(apiWrites)
}

// CountWrites makes every client built from cfg count its writes.
func CountWrites(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt} })
}

type writeCounter struct{ next http.RoundTripper }

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		apiWrites.WithLabelValues(resourceOf(req.URL.Path)).Inc()
	}
	return w.next.RoundTrip(req)
}

// resourceOf finds the resource in an API path such as
// /api/v1/namespaces/ns/pods/name/status or /apis/group/version/resource.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return "other"
	}
	return parts[0]
}
