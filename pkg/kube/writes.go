package kube

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
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

// apiWriteConflicts counts the writes the API server refused with 409: a
// create of an object that exists (AlreadyExists), or an update or patch
// from a stale copy (Conflict). With each controller applying only its own
// status fields there should be no Conflict, and a bench counts both.
var apiWriteConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "raftsman",
	Name:      "api_write_conflicts_total",
	Help:      "Writes the API server refused with 409, by resource and reason (AlreadyExists for a create, Conflict otherwise).",
}, []string{"resource", "reason"})

// writeLog logs each write at V(1) (--zap-log-level=debug): what a
// cluster's writes are, one by one.
var writeLog = ctrl.Log.WithName("api-writes")

func init() {
	metrics.Registry.MustRegister(apiWrites, apiWriteConflicts)
}

// CountWrites makes every client built from cfg count its writes.
func CountWrites(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt} })
}

type writeCounter struct{ next http.RoundTripper }

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return w.next.RoundTrip(req)
	}
	resource := resourceOf(req.URL.Path)
	apiWrites.WithLabelValues(resource).Inc()
	resp, err := w.next.RoundTrip(req)
	if l := writeLog.V(1); l.Enabled() {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		l.Info("API write", "method", req.Method, "path", req.URL.Path,
			"fieldManager", req.URL.Query().Get("fieldManager"), "status", status)
	}
	if err == nil && resp.StatusCode == http.StatusConflict {
		reason := "Conflict"
		if req.Method == http.MethodPost {
			reason = "AlreadyExists"
		}
		apiWriteConflicts.WithLabelValues(resource, reason).Inc()
	}
	return resp, err
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
