package data

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/schedule"
)

// The backup gauges are computed from the cache at each scrape, like the
// cluster gauges: a deleted cluster's series go with it.
var (
	lastBackupDesc = prometheus.NewDesc("raftsman_etcdcluster_last_backup_timestamp_seconds",
		"Unix time of the newest complete backup of an EtcdCluster.", []string{"namespace", "name"}, nil)
	backupIntervalDesc = prometheus.NewDesc("raftsman_etcdcluster_backup_interval_seconds",
		"Seconds between two scheduled backups of an EtcdCluster (spec.backup.schedule); absent without a schedule.", []string{"namespace", "name"}, nil)
)

// backupCollector reports the backups of every EtcdCluster the cache holds.
type backupCollector struct{ reader client.Reader }

func (c backupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastBackupDesc
	ch <- backupIntervalDesc
}

func (c backupCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdClusterList{}
	if err := c.reader.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		cl := &list.Items[i]
		if st := cl.Status.Backup; st != nil && st.LastSuccessfulBackup != nil {
			ch <- prometheus.MustNewConstMetric(lastBackupDesc, prometheus.GaugeValue, float64(st.LastSuccessfulBackup.Time.Unix()), cl.Namespace, cl.Name)
		}
		if cl.Spec.Backup == nil {
			continue
		}
		if interval, ok := scheduleInterval(string(cl.Spec.Backup.Schedule), cl.CreationTimestamp.Time); ok {
			ch <- prometheus.MustNewConstMetric(backupIntervalDesc, prometheus.GaugeValue, interval.Seconds(), cl.Namespace, cl.Name)
		}
	}
}

// scheduleInterval is the time between the first two runs of a schedule
// after from.
func scheduleInterval(expr string, from time.Time) (time.Duration, bool) {
	s, err := schedule.Parse(expr)
	if err != nil {
		return 0, false
	}
	a := s.Next(from)
	b := s.Next(a)
	if a.IsZero() || b.IsZero() {
		return 0, false
	}
	return b.Sub(a), true
}
