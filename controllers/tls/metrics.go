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
type certCollector struct {
	// readers are the caches of the shards this process runs.
	readers func() []client.Reader
}

func (c certCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- certExpiryDesc
	ch <- caExpiryDesc
}

func (c certCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdClusterList{}
	for _, r := range c.readers() {
		part := &etcdv1.EtcdClusterList{}
		if err := r.List(ctx, part); err != nil {
			// A shard starting or stopping: its clusters are reported by
			// whichever replica holds them, not by failing the scrape.
			continue
		}
		list.Items = append(list.Items, part.Items...)
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
