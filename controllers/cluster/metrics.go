package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
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

// The cluster gauges are computed from the cache at each scrape, so the
// series of a deleted cluster go with it and nothing is written on the hot
// path of a reconcile.
var (
	clusterConditionDesc = prometheus.NewDesc("raftsman_etcdcluster_status_condition",
		"Conditions of an EtcdCluster: 1 for the current status of each condition type, 0 for the others.", kube.ConditionLabels, nil)
	clusterReplicasDesc = prometheus.NewDesc("raftsman_etcdcluster_replicas",
		"Members an EtcdCluster asks for.", []string{"namespace", "name"}, nil)
	clusterReadyDesc = prometheus.NewDesc("raftsman_etcdcluster_ready_replicas",
		"Healthy voting members of an EtcdCluster.", []string{"namespace", "name"}, nil)
	clusterLearnersDesc = prometheus.NewDesc("raftsman_etcdcluster_learners",
		"Learners of an EtcdCluster.", []string{"namespace", "name"}, nil)
	clusterHealthyDesc = prometheus.NewDesc("raftsman_etcdcluster_members_healthy",
		"Members of an EtcdCluster that answered their last status request.", []string{"namespace", "name"}, nil)
	clusterVotersDesc = prometheus.NewDesc("raftsman_etcdcluster_voters",
		"Voting members of an EtcdCluster; a quorum is voters/2+1 of them.", []string{"namespace", "name"}, nil)
	memberDBSizeDesc = prometheus.NewDesc("raftsman_etcdmember_db_size_bytes",
		"Size of an etcd member's database (etcd's dbSize) at the operator's last health check; absent while the cluster does not answer.", []string{"namespace", "cluster", "member"}, nil)
)

// dbSizeTTL is how long a database size stays reported after the health
// check that measured it.
const dbSizeTTL = 5 * time.Minute

// dbSizes holds each cluster's member database sizes from its last health
// check, by "namespace/name". They live in memory only: sizes change all
// the time, and writing them to the status would cost an API write per
// cluster and health check.
var dbSizes sync.Map

type dbSizeRecord struct {
	at    time.Time
	sizes map[string]int64
}

// recordDBSizes keeps the sizes the members reported in this pass.
func recordDBSizes(s *scope) {
	sizes := map[string]int64{}
	for _, m := range s.members {
		if em, ok := s.inEtcd(m); ok {
			if st, ok := s.health[em.ID]; ok {
				sizes[m.Name] = st.DBSize
			}
		}
	}
	key := s.cluster.Namespace + "/" + s.cluster.Name
	if len(sizes) == 0 {
		dbSizes.Delete(key)
		return
	}
	dbSizes.Store(key, dbSizeRecord{at: time.Now(), sizes: sizes})
}

// clusterCollector reports every EtcdCluster the cache holds.
type clusterCollector struct{ reader client.Reader }

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clusterConditionDesc, clusterReplicasDesc, clusterReadyDesc, clusterLearnersDesc, clusterHealthyDesc, clusterVotersDesc, memberDBSizeDesc} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &etcdv1.EtcdClusterList{}
	if err := c.reader.List(ctx, list); err != nil {
		ch <- prometheus.NewInvalidMetric(clusterConditionDesc, err)
		return
	}
	for i := range list.Items {
		ec := &list.Items[i]
		kube.CollectConditions(ch, clusterConditionDesc, ec.Namespace, ec.Name, ec.Status.Conditions)
		learners, healthy, voters := 0, 0, 0
		for _, m := range ec.Status.Members {
			if m.Role == etcdv1.RoleLearner {
				learners++
			} else {
				voters++
			}
			if m.Healthy {
				healthy++
			}
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, ec.Namespace, ec.Name)
		}
		gauge(clusterReplicasDesc, float64(resources.Replicas(ec)))
		gauge(clusterReadyDesc, float64(ec.Status.ReadyReplicas))
		gauge(clusterLearnersDesc, float64(learners))
		gauge(clusterHealthyDesc, float64(healthy))
		gauge(clusterVotersDesc, float64(voters))
		// Only clusters in this replica's caches: a deleted cluster, or one
		// whose shard moved away, has no series here.
		if v, ok := dbSizes.Load(ec.Namespace + "/" + ec.Name); ok {
			if rec := v.(dbSizeRecord); time.Since(rec.at) < dbSizeTTL {
				for member, size := range rec.sizes {
					ch <- prometheus.MustNewConstMetric(memberDBSizeDesc, prometheus.GaugeValue, float64(size), ec.Namespace, ec.Name, member)
				}
			}
		}
	}
}
