package cluster

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/raftsman/raftsman/pkg/etcd"
)

// membershipOperations counts etcd membership calls by operation and result
// (ok, not_yet for a refusal etcd lifts by itself, error).
var membershipOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "raftsman",
	Name:      "membership_operations_total",
	Help:      "etcd membership operations by operation (add_learner, promote, remove, move_leader) and result (ok, not_yet, error).",
}, []string{"operation", "result"})

func init() {
	metrics.Registry.MustRegister(membershipOperations)
}

func observe(operation string, err error) {
	result := "ok"
	switch {
	case errors.Is(err, etcd.ErrNotYet):
		result = "not_yet"
	case err != nil:
		result = "error"
	}
	membershipOperations.WithLabelValues(operation, result).Inc()
}
