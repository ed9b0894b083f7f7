package cluster

import (
	"cmp"
	"context"
	"errors"
	"maps"
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

// observations counts the looks at clusters' etcd (Observer) by how they
// ended: answered, no_answer (the member list failed), and demoted counts
// those of clusters that answered last time which took longer than the
// pass waits (the cluster turned suspect, and the look left the answering
// lane). A platform alerts on a rising no_answer or demoted rate.
var (
	observations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "raftsman",
		Name:      "etcd_observations_total",
		Help:      "Looks at clusters' etcd (member list, member status, alarms) by result: answered, no_answer.",
	}, []string{"result"})
	observationsDemoted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "raftsman",
		Name:      "etcd_observations_demoted_total",
		Help:      "Looks at a cluster that answered last time which outlasted the pass's wait and went on beside the workers (the cluster is suspect).",
	})
)

func init() {
	metrics.Registry.MustRegister(membershipOperations, observations, observationsDemoted)
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
		"Size of an etcd member's database (etcd's dbSize) at the operator's last health check; absent while the cluster does not answer.", memberDBLabels, nil)
	memberDBSizeInUseDesc = prometheus.NewDesc("raftsman_etcdmember_db_size_in_use_bytes",
		"Part of an etcd member's database that holds data (etcd's dbSizeInUse) at the operator's last health check; the rest is free pages a defragmentation gives back. Absent while the cluster does not answer.", memberDBLabels, nil)
	memberDBQuotaDesc = prometheus.NewDesc("raftsman_etcdmember_db_quota_bytes",
		"Backend quota of an etcd member (--quota-backend-bytes of its EtcdMember's spec): etcd raises a NOSPACE alarm and takes no writes once the database size reaches it. Reported with the member's database size.", memberDBLabels, nil)
	memberLastDefragDesc = prometheus.NewDesc("raftsman_etcdmember_last_defrag_timestamp_seconds",
		"Unix time the last defragmentation of an etcd member finished, by why it ran (Threshold, Schedule, NoSpace).", memberDefragLabels, nil)
	memberDefragReclaimedDesc = prometheus.NewDesc("raftsman_etcdmember_last_defrag_reclaimed_bytes",
		"Bytes the last defragmentation of an etcd member gave back to the file system (database size before minus after), by why it ran (Threshold, Schedule, NoSpace).", memberDefragLabels, nil)
	clusterAlarmDesc = prometheus.NewDesc("raftsman_etcdcluster_alarm",
		"1 for each alarm etcd has raised (type NOSPACE or CORRUPT) and the member it is about, as in the EtcdCluster's status.alarms; no series while there is none.", []string{"namespace", "name", "member", "type"}, nil)
)

// The events counted in raftsman_etcdcluster_events_total: the reasons of
// the Kubernetes events that mark a rollout, a defragmentation, a leader
// move or a member replaced onto new storage, which the dashboards show as
// annotations.
const (
	eventMemberUpdated      = "MemberUpdated"
	eventRolloutStuck       = "RolloutStuck"
	eventDefragStarted      = "DefragStarted"
	eventMemberDefragmented = "MemberDefragmented"
	eventDefragFailed       = "DefragFailed"
	eventLeaderMoved        = "LeaderMoved"
	eventMemberReplaced     = "MemberReplaced"
	eventReplacementStuck   = "ReplacementStuck"
)

// eventReplacingMember marks the start of a member's replacement; it is
// not counted.
const eventReplacingMember = "ReplacingMember"

// countedEvents are the reasons the counter reports, 0 until the first.
var countedEvents = []string{eventMemberUpdated, eventRolloutStuck, eventDefragStarted, eventMemberDefragmented, eventDefragFailed, eventLeaderMoved, eventMemberReplaced, eventReplacementStuck}

var clusterEventsDesc = prometheus.NewDesc("raftsman_etcdcluster_events_total",
	"Events of an EtcdCluster since the operator replica started, by the Kubernetes event's reason: rollouts (MemberUpdated, RolloutStuck), defragmentations (DefragStarted, MemberDefragmented, DefragFailed), leader moves (LeaderMoved) and members replaced onto new storage (MemberReplaced, ReplacementStuck).",
	[]string{"namespace", "name", "reason"}, nil)

// eventCounts holds the counts of countedEvents by "namespace/name" of the
// cluster, then reason. Kept apart from the cache so that the collector can
// report every reason of every cached cluster, 0 before its first event: a
// counter that appeared with its first event would hide that event from
// increase() and from the dashboards' annotations.
var eventCounts = struct {
	sync.Mutex
	m map[string]map[string]uint64
}{m: map[string]map[string]uint64{}}

// countEvent counts an event just recorded for the cluster; reason is one
// of countedEvents.
func countEvent(c *etcdv1.EtcdCluster, reason string) {
	key := c.Namespace + "/" + c.Name
	eventCounts.Lock()
	defer eventCounts.Unlock()
	if eventCounts.m[key] == nil {
		eventCounts.m[key] = map[string]uint64{}
	}
	eventCounts.m[key][reason]++
}

// forgetEvents drops the counts of a deleted cluster.
func forgetEvents(key string) {
	eventCounts.Lock()
	defer eventCounts.Unlock()
	delete(eventCounts.m, key)
}

// Labels of the member series: the cluster is "name", as in the cluster
// gauges, so that every series of an EtcdCluster is joined on namespace and
// name, and "cluster" stays free for the label a fleet's Prometheus adds to
// tell its Kubernetes clusters apart (a series' own label would win over
// it).
var (
	memberDBLabels     = []string{"namespace", "name", "member"}
	memberDefragLabels = []string{"namespace", "name", "member", "reason"}
)

// dbSizeTTL is how long a database size stays reported after the health
// check that measured it.
const dbSizeTTL = 5 * time.Minute

// dbSizes holds each cluster's member database sizes and quotas from its
// last health check, by "namespace/name". They live in memory only: sizes
// change all the time, and writing them to the status would cost an API
// write per cluster and health check.
var dbSizes sync.Map

type dbSizeRecord struct {
	at      time.Time
	members map[string]memberDB
}

// memberDB is what one member's health check said of its database, with
// the quota its EtcdMember runs with (0: none known yet, not reported).
type memberDB struct {
	size, inUse, quota int64
}

// recordDBSizes keeps the sizes the members reported in this pass, and the
// quota of each from its spec. The quota is recorded with the sizes so that
// the ratio the alerts compute has both sides or neither.
func recordDBSizes(s *scope) {
	members := map[string]memberDB{}
	for _, m := range s.members {
		if em, ok := s.inEtcd(m); ok {
			if st, ok := s.health[em.ID]; ok {
				members[m.Name] = memberDB{size: st.DBSize, inUse: st.DBSizeInUse, quota: resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes)}
			}
		}
	}
	key := s.cluster.Namespace + "/" + s.cluster.Name
	if len(members) == 0 {
		dbSizes.Delete(key)
		return
	}
	dbSizes.Store(key, dbSizeRecord{at: time.Now(), members: members})
}

// clusterCollector reports every EtcdCluster the cache holds.
type clusterCollector struct{ reader client.Reader }

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clusterConditionDesc, clusterReplicasDesc, clusterReadyDesc, clusterLearnersDesc, clusterHealthyDesc, clusterVotersDesc,
		memberDBSizeDesc, memberDBSizeInUseDesc, memberDBQuotaDesc, memberLastDefragDesc, memberDefragReclaimedDesc, clusterAlarmDesc, clusterEventsDesc} {
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
		collectDBSizes(ch, ec)
		collectMaintenance(ch, ec)
		collectAlarms(ch, ec)
		collectEvents(ch, ec)
	}
}

// collectDBSizes reports the sizes of the cluster's last health check.
// Only clusters in this replica's caches: a deleted cluster, or one whose
// shard moved away, has no series here.
func collectDBSizes(ch chan<- prometheus.Metric, ec *etcdv1.EtcdCluster) {
	v, ok := dbSizes.Load(ec.Namespace + "/" + ec.Name)
	if !ok {
		return
	}
	rec := v.(dbSizeRecord)
	if time.Since(rec.at) >= dbSizeTTL {
		return
	}
	for member, db := range rec.members {
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), ec.Namespace, ec.Name, member)
		}
		gauge(memberDBSizeDesc, db.size)
		gauge(memberDBSizeInUseDesc, db.inUse)
		if db.quota > 0 {
			gauge(memberDBQuotaDesc, db.quota)
		}
	}
}

// collectMaintenance reports the last defragmentation of each current
// member. The labels stay bounded: status.maintenance keeps the entries of
// members long removed, which are left out, and the reason is one of the
// three the operator writes.
func collectMaintenance(ch chan<- prometheus.Metric, ec *etcdv1.EtcdCluster) {
	if ec.Status.Maintenance == nil {
		return
	}
	current := map[string]bool{}
	for _, m := range ec.Status.Members {
		current[m.Name] = true
	}
	seen := map[string]bool{}
	for _, d := range ec.Status.Maintenance.Members {
		// A duplicate series would fail the whole scrape.
		if d.Time.IsZero() || !current[d.Name] || seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		ch <- prometheus.MustNewConstMetric(memberLastDefragDesc, prometheus.GaugeValue, float64(d.Time.Unix()), ec.Namespace, ec.Name, d.Name, d.Reason)
		ch <- prometheus.MustNewConstMetric(memberDefragReclaimedDesc, prometheus.GaugeValue, float64(d.ReclaimedBytes), ec.Namespace, ec.Name, d.Name, d.Reason)
	}
}

// collectAlarms reports etcd's alarms as the status lists them: the member
// by name, or by etcd member ID when it has no EtcdMember (as the Degraded
// message names it); the type is etcd's (NOSPACE, CORRUPT).
func collectAlarms(ch chan<- prometheus.Metric, ec *etcdv1.EtcdCluster) {
	seen := map[[2]string]bool{}
	for _, a := range ec.Status.Alarms {
		key := [2]string{cmp.Or(a.Member, a.MemberID), a.Type}
		if seen[key] {
			continue
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(clusterAlarmDesc, prometheus.GaugeValue, 1, ec.Namespace, ec.Name, key[0], key[1])
	}
}

// collectEvents reports the cluster's event counts, every reason of
// countedEvents: a bounded set of series per cluster, gone with the cluster
// from the cache.
func collectEvents(ch chan<- prometheus.Metric, ec *etcdv1.EtcdCluster) {
	eventCounts.Lock()
	counts := maps.Clone(eventCounts.m[ec.Namespace+"/"+ec.Name])
	eventCounts.Unlock()
	for _, reason := range countedEvents {
		ch <- prometheus.MustNewConstMetric(clusterEventsDesc, prometheus.CounterValue, float64(counts[reason]), ec.Namespace, ec.Name, reason)
	}
}
