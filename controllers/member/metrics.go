package member

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
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

var memberConditionDesc = prometheus.NewDesc("raftsman_etcdmember_status_condition",
	"Conditions of an EtcdMember: 1 for the current status of each condition type, 0 for the others.", kube.ConditionLabels, nil)

// memberCollector reports the conditions of every EtcdMember the cache
// holds, computed at each scrape so a deleted member's series go with it.
type memberCollector struct{ reader client.Reader }

func (c memberCollector) Describe(ch chan<- *prometheus.Desc) { ch <- memberConditionDesc }

func (c memberCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdMemberList{}
	if err := c.reader.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(memberConditionDesc, err)
		return
	}
	for i := range list.Items {
		m := &list.Items[i]
		kube.CollectConditions(ch, memberConditionDesc, m.Namespace, m.Name, m.Status.Conditions)
	}
}
