package tls

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// The certificate gauges are computed from the cache at each scrape, like
// the cluster controller's, so a deleted cluster's series go with it.
var (
	certExpiryDesc = prometheus.NewDesc("raftsman_etcdcluster_certificate_expiry_timestamp_seconds",
		"When the first of an EtcdCluster's certificates expires (status.tls.notAfter), in seconds since the epoch.", []string{"namespace", "name"}, nil)
	caExpiryDesc = prometheus.NewDesc("raftsman_etcdcluster_ca_expiry_timestamp_seconds",
		"When the operator's CA of an EtcdCluster expires (status.tls.caNotAfter), in seconds since the epoch.", []string{"namespace", "name"}, nil)
)

// certCollector reports the certificate expiry of every cluster with TLS.
type certCollector struct{ reader client.Reader }

func (c certCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- certExpiryDesc
	ch <- caExpiryDesc
}

func (c certCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdClusterList{}
	if err := c.reader.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(certExpiryDesc, err)
		return
	}
	for _, ec := range list.Items {
		st := ec.Status.TLS
		if st == nil {
			continue
		}
		if st.NotAfter != nil {
			ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(st.NotAfter.Unix()), ec.Namespace, ec.Name)
		}
		if st.CANotAfter != nil {
			ch <- prometheus.MustNewConstMetric(caExpiryDesc, prometheus.GaugeValue, float64(st.CANotAfter.Unix()), ec.Namespace, ec.Name)
		}
	}
}
