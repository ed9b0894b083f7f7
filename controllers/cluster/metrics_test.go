package cluster

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
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
` + eventsHeader + eventLines("collector-ns", "demo", nil)
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

func TestMetricsMemberDBSeries(t *testing.T) {
	t.Parallel()
	fresh := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "sized", Namespace: "dbsize"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	stale := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "stale", Namespace: "dbsize"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	dbSizes.Store("dbsize/sized", dbSizeRecord{at: time.Now(), members: map[string]memberDB{
		"sized-a": {size: 20480, inUse: 16384, quota: 1 << 20},
		// A member whose spec has no quota yet: sizes only.
		"sized-b": {size: 24576, inUse: 8192},
	}})
	dbSizes.Store("dbsize/stale", dbSizeRecord{at: time.Now().Add(-2 * dbSizeTTL), members: map[string]memberDB{"stale-a": {size: 1, inUse: 1, quota: 1}}})
	// A cluster this replica does not cache (deleted, or another shard's).
	dbSizes.Store("dbsize/elsewhere", dbSizeRecord{at: time.Now(), members: map[string]memberDB{"elsewhere-a": {size: 1, inUse: 1, quota: 1}}})
	t.Cleanup(func() {
		for _, k := range []string{"dbsize/sized", "dbsize/stale", "dbsize/elsewhere"} {
			dbSizes.Delete(k)
		}
	})
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(fresh, stale).Build()
	want := `
# HELP raftsman_etcdmember_db_size_bytes Size of an etcd member's database (etcd's dbSize) at the operator's last health check; absent while the cluster does not answer.
# TYPE raftsman_etcdmember_db_size_bytes gauge
raftsman_etcdmember_db_size_bytes{member="sized-a",name="sized",namespace="dbsize"} 20480
raftsman_etcdmember_db_size_bytes{member="sized-b",name="sized",namespace="dbsize"} 24576
# HELP raftsman_etcdmember_db_size_in_use_bytes Part of an etcd member's database that holds data (etcd's dbSizeInUse) at the operator's last health check; the rest is free pages a defragmentation gives back. Absent while the cluster does not answer.
# TYPE raftsman_etcdmember_db_size_in_use_bytes gauge
raftsman_etcdmember_db_size_in_use_bytes{member="sized-a",name="sized",namespace="dbsize"} 16384
raftsman_etcdmember_db_size_in_use_bytes{member="sized-b",name="sized",namespace="dbsize"} 8192
# HELP raftsman_etcdmember_db_quota_bytes Backend quota of an etcd member (--quota-backend-bytes of its EtcdMember's spec): etcd raises a NOSPACE alarm and takes no writes once the database size reaches it. Reported with the member's database size.
# TYPE raftsman_etcdmember_db_quota_bytes gauge
raftsman_etcdmember_db_quota_bytes{member="sized-a",name="sized",namespace="dbsize"} 1.048576e+06
`
	names := []string{"raftsman_etcdmember_db_size_bytes", "raftsman_etcdmember_db_size_in_use_bytes", "raftsman_etcdmember_db_quota_bytes"}
	if err := testutil.CollectAndCompare(clusterCollector{reader: c}, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestMetricsRecordDBSizes checks what a health check keeps: the members etcd
// lists that answered, each with its sizes and the quota of its spec.
func TestMetricsRecordDBSizes(t *testing.T) {
	t.Parallel()
	member := func(name string, quota *int64) *etcdv1.EtcdMember {
		return &etcdv1.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "record"},
			Spec:       etcdv1.EtcdMemberSpec{PeerURL: "https://" + name + ":2380", Options: etcdv1.EtcdOptions{QuotaBackendBytes: quota}},
		}
	}
	listed := func(id uint64, name string) etcd.Member {
		return etcd.Member{ID: id, Name: name, PeerURLs: []string{"https://" + name + ":2380"}}
	}
	tests := []struct {
		name    string
		members []*etcdv1.EtcdMember
		list    []etcd.Member
		health  map[uint64]etcd.Status
		want    map[string]memberDB // nil: no record
	}{{
		name:    "quota from the spec",
		members: []*etcdv1.EtcdMember{member("q-a", ptr.To[int64](512<<20))},
		list:    []etcd.Member{listed(1, "q-a")},
		health:  map[uint64]etcd.Status{1: {DBSize: 4096, DBSizeInUse: 2048}},
		want:    map[string]memberDB{"q-a": {size: 4096, inUse: 2048, quota: 512 << 20}},
	}, {
		name:    "quota 0 is etcd's default",
		members: []*etcdv1.EtcdMember{member("z-a", ptr.To[int64](0))},
		list:    []etcd.Member{listed(1, "z-a")},
		health:  map[uint64]etcd.Status{1: {DBSize: 4096, DBSizeInUse: 4096}},
		want:    map[string]memberDB{"z-a": {size: 4096, inUse: 4096, quota: 2 << 30}},
	}, {
		// A member made before the operator filled in quotas runs
		// etcd's own default.
		name:    "no quota in the spec",
		members: []*etcdv1.EtcdMember{member("n-a", nil)},
		list:    []etcd.Member{listed(1, "n-a")},
		health:  map[uint64]etcd.Status{1: {DBSize: 4096, DBSizeInUse: 1024}},
		want:    map[string]memberDB{"n-a": {size: 4096, inUse: 1024, quota: 2 << 30}},
	}, {
		name:    "members that did not answer or etcd does not list",
		members: []*etcdv1.EtcdMember{member("s-a", ptr.To[int64](1<<30)), member("s-b", ptr.To[int64](1<<30)), member("s-c", ptr.To[int64](1<<30))},
		list:    []etcd.Member{listed(1, "s-a"), listed(2, "s-b")},
		health:  map[uint64]etcd.Status{1: {DBSize: 8192, DBSizeInUse: 4096}},
		want:    map[string]memberDB{"s-a": {size: 8192, inUse: 4096, quota: 1 << 30}},
	}, {
		name:    "no member answered",
		members: []*etcdv1.EtcdMember{member("d-a", ptr.To[int64](1<<30))},
		list:    []etcd.Member{listed(1, "d-a")},
		health:  map[uint64]etcd.Status{},
	}}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ec := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i), Namespace: "record"}}
			key := ec.Namespace + "/" + ec.Name
			// A record of an earlier pass, which this one replaces.
			dbSizes.Store(key, dbSizeRecord{at: time.Now(), members: map[string]memberDB{"gone": {size: 1}}})
			t.Cleanup(func() { dbSizes.Delete(key) })
			recordDBSizes(&scope{view: view{cluster: ec, members: tc.members, etcdList: tc.list, health: tc.health}})
			v, ok := dbSizes.Load(key)
			switch {
			case tc.want == nil && ok:
				t.Fatalf("record %+v, want none", v)
			case tc.want == nil:
				return
			case !ok:
				t.Fatalf("no record, want %+v", tc.want)
			}
			if got := v.(dbSizeRecord).members; !maps.Equal(got, tc.want) {
				t.Errorf("members %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestMetricsStatusSeries checks the series read from a cluster's status: the
// last defragmentation of each member and etcd's alarms.
func TestMetricsStatusSeries(t *testing.T) {
	t.Parallel()
	finished := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const defragHeader = `
# HELP raftsman_etcdmember_last_defrag_reclaimed_bytes Bytes the last defragmentation of an etcd member gave back to the file system (database size before minus after), by why it ran (Threshold, Schedule, NoSpace).
# TYPE raftsman_etcdmember_last_defrag_reclaimed_bytes gauge
`
	const timeHeader = `
# HELP raftsman_etcdmember_last_defrag_timestamp_seconds Unix time the last defragmentation of an etcd member finished, by why it ran (Threshold, Schedule, NoSpace).
# TYPE raftsman_etcdmember_last_defrag_timestamp_seconds gauge
`
	const alarmHeader = `
# HELP raftsman_etcdcluster_alarm 1 for each alarm etcd has raised (type NOSPACE or CORRUPT) and the member it is about, as in the EtcdCluster's status.alarms; no series while there is none.
# TYPE raftsman_etcdcluster_alarm gauge
`
	names := []string{"raftsman_etcdmember_last_defrag_timestamp_seconds", "raftsman_etcdmember_last_defrag_reclaimed_bytes", "raftsman_etcdcluster_alarm"}
	tests := []struct {
		name   string
		status etcdv1.EtcdClusterStatus
		want   string
	}{{
		name: "nothing to report",
	}, {
		name:   "maintenance without a defragmentation yet",
		status: etcdv1.EtcdClusterStatus{Maintenance: &etcdv1.MaintenanceStatus{Defrag: &etcdv1.DefragRun{Reason: etcdv1.DefragForSchedule, Member: "demo-a"}}},
	}, {
		name: "each member's last defragmentation",
		status: etcdv1.EtcdClusterStatus{
			Members: []etcdv1.ClusterMemberStatus{{Name: "demo-a"}, {Name: "demo-b"}, {Name: "demo-c"}},
			Maintenance: &etcdv1.MaintenanceStatus{Members: []etcdv1.MemberDefragStatus{
				{Name: "demo-a", Time: metav1.NewTime(finished), Reason: etcdv1.DefragForThreshold, SizeBefore: 3 << 20, SizeAfter: 1 << 20, ReclaimedBytes: 2 << 20, DurationMillis: 120},
				{Name: "demo-b", Time: metav1.NewTime(finished.Add(-time.Hour)), Reason: etcdv1.DefragForNoSpace, SizeBefore: 4096, SizeAfter: 4096},
				// Not reported: no time, a member no longer in the cluster,
				// a second entry for a member.
				{Name: "demo-c", Reason: etcdv1.DefragForSchedule},
				{Name: "demo-gone", Time: metav1.NewTime(finished), Reason: etcdv1.DefragForSchedule, ReclaimedBytes: 1},
				{Name: "demo-a", Time: metav1.NewTime(finished), Reason: etcdv1.DefragForSchedule},
			}},
		},
		want: defragHeader + `raftsman_etcdmember_last_defrag_reclaimed_bytes{member="demo-a",name="demo",namespace="status",reason="Threshold"} 2.097152e+06
raftsman_etcdmember_last_defrag_reclaimed_bytes{member="demo-b",name="demo",namespace="status",reason="NoSpace"} 0
` + timeHeader + fmt.Sprintf(`raftsman_etcdmember_last_defrag_timestamp_seconds{member="demo-a",name="demo",namespace="status",reason="Threshold"} %d
raftsman_etcdmember_last_defrag_timestamp_seconds{member="demo-b",name="demo",namespace="status",reason="NoSpace"} %d
`, finished.Unix(), finished.Add(-time.Hour).Unix()),
	}, {
		name: "alarms",
		status: etcdv1.EtcdClusterStatus{Alarms: []etcdv1.ClusterAlarm{
			{Type: "NOSPACE", MemberID: "a1", Member: "demo-a"},
			{Type: "NOSPACE", MemberID: "b2", Member: "demo-b"},
			{Type: "CORRUPT", MemberID: "a1", Member: "demo-a"},
			// A member without an EtcdMember goes by its etcd ID.
			{Type: "CORRUPT", MemberID: "c3"},
			{Type: "NOSPACE", MemberID: "a1", Member: "demo-a"},
		}},
		want: alarmHeader + `raftsman_etcdcluster_alarm{member="c3",name="demo",namespace="status",type="CORRUPT"} 1
raftsman_etcdcluster_alarm{member="demo-a",name="demo",namespace="status",type="CORRUPT"} 1
raftsman_etcdcluster_alarm{member="demo-a",name="demo",namespace="status",type="NOSPACE"} 1
raftsman_etcdcluster_alarm{member="demo-b",name="demo",namespace="status",type="NOSPACE"} 1
`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ec := &etcdv1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "status"},
				Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16"},
				Status:     tc.status,
			}
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ec).Build()
			if err := testutil.CollectAndCompare(clusterCollector{reader: c}, strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

const eventsHeader = `
# HELP raftsman_etcdcluster_events_total Events of an EtcdCluster since the operator replica started, by the Kubernetes event's reason: rollouts (MemberUpdated, RolloutStuck), defragmentations (DefragStarted, MemberDefragmented, DefragFailed), leader moves (LeaderMoved) and members replaced onto new storage (MemberReplaced, ReplacementStuck).
# TYPE raftsman_etcdcluster_events_total counter
`

// eventLines is the counter's exposition for one cluster: every counted
// reason, with its count in want or 0.
func eventLines(ns, name string, want map[string]int) string {
	var b strings.Builder
	for _, reason := range slices.Sorted(slices.Values(countedEvents)) {
		fmt.Fprintf(&b, "raftsman_etcdcluster_events_total{name=%q,namespace=%q,reason=%q} %d\n", name, ns, reason, want[reason])
	}
	return b.String()
}

// eventCount is what the counter holds for a cluster and reason.
func eventCount(ns, name, reason string) uint64 {
	eventCounts.Lock()
	defer eventCounts.Unlock()
	return eventCounts.m[ns+"/"+name][reason]
}

// TestMetricsClusterEvents checks the event counter: every counted reason of
// every cached cluster from the start (0 before the first event, so that the
// first one shows in increase()), the counts of each cluster apart, nothing
// for a cluster that is not cached, and the counts dropped with the cluster.
func TestMetricsClusterEvents(t *testing.T) {
	t.Parallel()
	quiet := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "events"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	busy := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "events"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	elsewhere := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "events"}}
	t.Cleanup(func() {
		for _, c := range []*etcdv1.EtcdCluster{quiet, busy, elsewhere} {
			forgetEvents(c.Namespace + "/" + c.Name)
		}
	})
	for range 3 {
		countEvent(busy, eventMemberUpdated)
	}
	countEvent(busy, eventLeaderMoved)
	countEvent(busy, eventDefragStarted)
	countEvent(busy, eventMemberDefragmented)
	countEvent(busy, eventMemberDefragmented)
	// Another replica's cluster, or one deleted: counted, not reported.
	countEvent(elsewhere, eventLeaderMoved)

	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(quiet, busy).Build()
	col := clusterCollector{reader: c}
	want := eventsHeader + eventLines("events", "busy", map[string]int{
		eventMemberUpdated: 3, eventLeaderMoved: 1, eventDefragStarted: 1, eventMemberDefragmented: 2,
	}) + eventLines("events", "quiet", nil)
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "raftsman_etcdcluster_events_total"); err != nil {
		t.Error(err)
	}

	forgetEvents("events/busy")
	if got := eventCount("events", "busy", eventMemberUpdated); got != 0 {
		t.Errorf("%d MemberUpdated events left after forgetEvents, want 0", got)
	}
	if got := eventCount("events", "elsewhere", eventLeaderMoved); got != 1 {
		t.Errorf("%d LeaderMoved events of another cluster, want 1", got)
	}
}

// TestCountedEventsAreCounted reads the package's source: every event whose
// reason raftsman_etcdcluster_events_total counts is recorded with the
// reason's constant and counted by the statement right after it, so that
// the counter and the events cannot drift apart.
func TestCountedEventsAreCounted(t *testing.T) {
	t.Parallel()
	counted := map[string]string{}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i >= len(vs.Values) {
							break
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && slices.Contains(countedEvents, strings.Trim(lit.Value, `"`)) {
							counted[id.Name] = strings.Trim(lit.Value, `"`)
						}
					}
				}
			}
		}
	}
	if len(counted) != len(countedEvents) {
		t.Fatalf("constants %v, want one for each of %v", counted, countedEvents)
	}
	seen := map[string]bool{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			block, ok := n.(*ast.BlockStmt)
			if !ok {
				return true
			}
			for i, st := range block.List {
				reason, ok := eventReason(st)
				if !ok {
					continue
				}
				pos := fset.Position(st.Pos())
				if lit, ok := reason.(*ast.BasicLit); ok && slices.Contains(countedEvents, strings.Trim(lit.Value, `"`)) {
					t.Errorf("%s: event %s recorded with a literal: use its constant and countEvent", pos, lit.Value)
					continue
				}
				id, ok := reason.(*ast.Ident)
				if !ok || counted[id.Name] == "" {
					continue
				}
				seen[id.Name] = true
				if i+1 == len(block.List) || !countsEvent(block.List[i+1], id.Name) {
					t.Errorf("%s: event %s is not followed by countEvent(..., %s)", pos, counted[id.Name], id.Name)
				}
			}
			return true
		})
	}
	for name, reason := range counted {
		if !seen[name] {
			t.Errorf("no event %s is recorded: drop it from countedEvents", reason)
		}
	}
}

// eventReason is the reason argument of a statement that records an event
// (Recorder.Eventf).
func eventReason(st ast.Stmt) (ast.Expr, bool) {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return nil, false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Eventf" || len(call.Args) < 4 {
		return nil, false
	}
	return call.Args[3], true
}

// countsEvent says whether st is countEvent(..., reason).
func countsEvent(st ast.Stmt, reason string) bool {
	es, ok := st.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 2 {
		return false
	}
	fn, ok := call.Fun.(*ast.Ident)
	arg, argOK := call.Args[1].(*ast.Ident)
	return ok && fn.Name == "countEvent" && argOK && arg.Name == reason
}
