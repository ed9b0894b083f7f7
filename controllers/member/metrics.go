package member

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// objectsCreated counts the Pods and PVCs this controller created; a Pod count
// growing faster than the PVC count means members keep losing their Pods.
var objectsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "raftsman",
	Subsystem: "member",
	Name:      "objects_created_total",
	Help:      "Pods and PVCs created for etcd members, by kind (pod, pvc).",
}, []string{"kind"})

func init() {
	metrics.Registry.MustRegister(objectsCreated)
}
