package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
)

// wantCond is what a test expects of one condition; a nil *wantCond means
// the condition must be absent.
type wantCond struct {
	status metav1.ConditionStatus
	reason string
	// msg are substrings the message must contain.
	msg []string
}

func checkCond(t *testing.T, conds []metav1.Condition, typ string, generation int64, want *wantCond) {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if want == nil {
		if c != nil {
			t.Errorf("condition %s = %+v, want none", typ, *c)
		}
		return
	}
	if c == nil {
		t.Fatalf("condition %s missing; have %+v", typ, conds)
	}
	if c.Status != want.status || c.Reason != want.reason {
		t.Errorf("condition %s = %s/%s, want %s/%s (message %q)", typ, c.Status, c.Reason, want.status, want.reason, c.Message)
	}
	if c.ObservedGeneration != generation {
		t.Errorf("condition %s observedGeneration = %d, want %d", typ, c.ObservedGeneration, generation)
	}
	for _, m := range want.msg {
		if !strings.Contains(c.Message, m) {
			t.Errorf("condition %s message %q does not contain %q", typ, c.Message, m)
		}
	}
}

func testBackup(name string, conds ...metav1.Condition) *etcdv1.EtcdBackup {
	b := &etcdv1.EtcdBackup{}
	b.Name, b.Namespace, b.Generation = name, "ns", 1
	b.Spec.ClusterName = "demo"
	b.Status.Conditions = conds
	return b
}

func TestSetBackupConditions(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("0f", 32)
	tests := []struct {
		name     string
		scope    scope
		complete wantCond
		failed   wantCond
	}{
		{
			name:  "success",
			scope: scope{result: &agent.Result{Size: 2048, Revision: 99, URI: "s3://b/ns/demo/x.db", SHA256: sum}},
			complete: wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonSnapshotStored,
				msg: []string{"2048 bytes", "revision 99", "s3://b/ns/demo/x.db", sum}},
			failed: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonSnapshotStored},
		},
		{
			name:     "checksum mismatch",
			scope:    scope{result: &agent.Result{Error: "the store holds 10 bytes", Reason: agent.ReasonChecksumMismatch}},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonChecksumMismatch, msg: []string{"Failed condition"}},
			failed:   wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonChecksumMismatch, msg: []string{"the store holds 10 bytes"}},
		},
		{
			name:     "other failure",
			scope:    scope{result: &agent.Result{Error: "connect to member: refused", Reason: agent.ReasonFailed}},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonSnapshotFailed},
			failed:   wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonSnapshotFailed, msg: []string{"connect to member: refused"}},
		},
		{
			name:     "not found is a plain failure",
			scope:    scope{result: &agent.Result{Error: "no snapshot", Reason: agent.ReasonNotFound}},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonSnapshotFailed},
			failed:   wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonSnapshotFailed, msg: []string{"no snapshot"}},
		},
		{
			name:     "cluster missing",
			scope:    scope{clusterMissing: true},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonClusterNotFound, msg: []string{"EtcdCluster demo does not exist in namespace ns"}},
			failed:   wantCond{status: metav1.ConditionTrue, reason: etcdv1.ReasonClusterNotFound, msg: []string{"EtcdCluster demo does not exist in namespace ns"}},
		},
		{
			name:     "pending",
			scope:    scope{pending: "Waiting for cluster demo to be Available"},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonPending, msg: []string{"Waiting for cluster demo"}},
			failed:   wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonPending, msg: []string{"Waiting for cluster demo"}},
		},
		{
			name:     "running",
			scope:    scope{},
			complete: wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonRunning, msg: []string{"nightly-snapshot", "member demo-abcde"}},
			failed:   wantCond{status: metav1.ConditionFalse, reason: etcdv1.ReasonRunning, msg: []string{"nightly-snapshot"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := testBackup("nightly")
			b.Generation = 3
			b.Status.Member = "demo-abcde"
			s := tt.scope
			s.backup = b
			setBackupConditions(&s)
			checkCond(t, b.Status.Conditions, etcdv1.ConditionComplete, 3, &tt.complete)
			checkCond(t, b.Status.Conditions, etcdv1.ConditionFailed, 3, &tt.failed)
		})
	}
}
