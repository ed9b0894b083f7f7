package user

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// The gauges are computed from the cache at each scrape, like the other
// kinds', so a deleted user's series go with it.
var (
	userConditionDesc = prometheus.NewDesc("raftsman_etcduser_status_condition",
		"Conditions of an EtcdUser: 1 for the current status of each condition type, 0 for the others.", kube.ConditionLabels, nil)
	userCertExpiryDesc = prometheus.NewDesc("raftsman_etcduser_certificate_expiry_timestamp_seconds",
		"When an EtcdUser's client certificate expires (status.notAfter), in seconds since the epoch.", []string{"namespace", "name"}, nil)
)

// userCollector reports the conditions and certificate expiry of every
// EtcdUser the cache holds.
type userCollector struct{ reader client.Reader }

func (c userCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- userConditionDesc
	ch <- userCertExpiryDesc
}

func (c userCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdUserList{}
	if err := c.reader.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(userConditionDesc, err)
		return
	}
	for i := range list.Items {
		u := &list.Items[i]
		kube.CollectConditions(ch, userConditionDesc, u.Namespace, u.Name, u.Status.Conditions)
		if u.Status.NotAfter != nil {
			ch <- prometheus.MustNewConstMetric(userCertExpiryDesc, prometheus.GaugeValue, float64(u.Status.NotAfter.Unix()), u.Namespace, u.Name)
		}
	}
}
