package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestClusterCollector(t *testing.T) {
	t.Parallel()
	ec := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "collector-ns"},
		Spec:       etcdv1.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16"},
		Status: etcdv1.EtcdClusterStatus{
			ReadyReplicas: 2,
			Conditions:    []metav1.Condition{{Type: etcdv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonQuorumHealthy}},
			Members: []etcdv1.ClusterMemberStatus{
				{Name: "a", Role: etcdv1.RoleVoter, Healthy: true},
				{Name: "b", Role: etcdv1.RoleVoter, Healthy: true},
				{Name: "c", Role: etcdv1.RoleLearner},
			},
		},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ec).Build()
	col := clusterCollector{reader: c}
	want := `
# HELP raftsman_etcdcluster_status_condition Conditions of an EtcdCluster: 1 for the current status of each condition type, 0 for the others.
# TYPE raftsman_etcdcluster_status_condition gauge
raftsman_etcdcluster_status_condition{name="demo",namespace="collector-ns",reason="QuorumHealthy",status="False",type="Available"} 0
raftsman_etcdcluster_status_condition{name="demo",namespace="collector-ns",reason="QuorumHealthy",status="True",type="Available"} 1
raftsman_etcdcluster_status_condition{name="demo",namespace="collector-ns",reason="QuorumHealthy",status="Unknown",type="Available"} 0
# HELP raftsman_etcdcluster_replicas Members an EtcdCluster asks for.
# TYPE raftsman_etcdcluster_replicas gauge
raftsman_etcdcluster_replicas{name="demo",namespace="collector-ns"} 3
# HELP raftsman_etcdcluster_ready_replicas Healthy voting members of an EtcdCluster.
# TYPE raftsman_etcdcluster_ready_replicas gauge
raftsman_etcdcluster_ready_replicas{name="demo",namespace="collector-ns"} 2
# HELP raftsman_etcdcluster_learners Learners of an EtcdCluster.
# TYPE raftsman_etcdcluster_learners gauge
raftsman_etcdcluster_learners{name="demo",namespace="collector-ns"} 1
# HELP raftsman_etcdcluster_members_healthy Members of an EtcdCluster that answered their last status request.
# TYPE raftsman_etcdcluster_members_healthy gauge
raftsman_etcdcluster_members_healthy{name="demo",namespace="collector-ns"} 2
# HELP raftsman_etcdcluster_voters Voting members of an EtcdCluster; a quorum is voters/2+1 of them.
# TYPE raftsman_etcdcluster_voters gauge
raftsman_etcdcluster_voters{name="demo",namespace="collector-ns"} 2
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// The series of a deleted cluster disappear.
	if err := c.Delete(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n != 0 {
		t.Errorf("%d series left after the cluster was deleted", n)
	}
}

func TestMemberDBSizeSeries(t *testing.T) {
	t.Parallel()
	fresh := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "sized", Namespace: "dbsize"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	stale := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: "dbsize"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	dbSizes.Store("dbsize/sized", dbSizeRecord{at: time.Now(), sizes: map[string]int64{"sized-a": 20480, "sized-b": 24576}})
	dbSizes.Store("dbsize/stale", dbSizeRecord{at: time.Now().Add(-2 * dbSizeTTL), sizes: map[string]int64{"stale-a": 1}})
	// A cluster this replica does not cache (deleted, or another shard's).
	dbSizes.Store("dbsize/elsewhere", dbSizeRecord{at: time.Now(), sizes: map[string]int64{"elsewhere-a": 1}})
	t.Cleanup(func() {
		for _, k := range []string{"dbsize/sized", "dbsize/stale", "dbsize/elsewhere"} {
			dbSizes.Delete(k)
		}
	})
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(fresh, stale).Build()
	want := `
# HELP raftsman_etcdmember_db_size_bytes Size of an etcd member's database (etcd's dbSize) at the operator's last health check; absent while the cluster does not answer.
# TYPE raftsman_etcdmember_db_size_bytes gauge
raftsman_etcdmember_db_size_bytes{cluster="sized",member="sized-a",namespace="dbsize"} 20480
raftsman_etcdmember_db_size_bytes{cluster="sized",member="sized-b",namespace="dbsize"} 24576
`
	if err := testutil.CollectAndCompare(clusterCollector{reader: c}, strings.NewReader(want), "raftsman_etcdmember_db_size_bytes"); err != nil {
		t.Error(err)
	}
}
