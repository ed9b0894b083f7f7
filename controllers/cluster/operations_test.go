package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// TestDecisions checks which operations have something to do for a view.
func TestDecisions(t *testing.T) {
	t.Parallel()
	deciders := map[opKind]func(*view) decision{
		opRecovery: decideRecovery, opRemoval: decideRemoval, opHealing: decideHealing, opVersion: decideVersion,
		opScaling: decideScaling, opReplacement: decideReplacement, opRollout: decideRollout, opMaintenance: decideMaintenance,
	}
	fast := func(v *view) { v.cluster.Spec.Storage.StorageClassName = ptr.To("fast") }
	settled := []viewMember{leaderVoter, healthyVoter, healthyVoter}
	for _, tt := range []struct {
		name    string
		members []viewMember
		desired int
		change  func(*view)
		act     []opKind
	}{
		{name: "settled at its size", members: settled, desired: 3, act: []opKind{opVersion, opRollout, opMaintenance}},
		{name: "one member too few", members: settled, desired: 5, act: []opKind{opVersion, opScaling, opRollout, opMaintenance}},
		{name: "one member too many", members: settled, desired: 1, act: []opKind{opVersion, opScaling, opRollout, opMaintenance}},
		{name: "a learner", members: []viewMember{leaderVoter, healthyVoter, learnerMember}, desired: 3, act: []opKind{opVersion, opScaling, opRollout, opMaintenance}},
		{name: "a member not yet added", members: []viewMember{leaderVoter, healthyVoter, {memberID: ""}}, desired: 3, act: []opKind{opVersion, opScaling, opRollout, opMaintenance}},
		{
			name: "a member being deleted", members: []viewMember{leaderVoter, healthyVoter, healthyVoter, {inEtcd: true, healthy: true, deleting: true}}, desired: 3,
			change: func(v *view) { v.members[3].Finalizers = []string{etcdv1.MemberFinalizer} },
			act:    []opKind{opRemoval, opVersion, opRollout, opMaintenance},
		},
		{name: "a member whose data is lost", members: []viewMember{leaderVoter, healthyVoter, {readyReason: etcdv1.ReasonDataLost}}, desired: 3, act: []opKind{opHealing, opVersion, opScaling, opRollout, opMaintenance}},
		{name: "a member removed behind the operator's back", members: []viewMember{leaderVoter, healthyVoter, {memberID: "3"}}, desired: 3, act: []opKind{opHealing, opVersion, opScaling, opRollout, opMaintenance}},
		{
			name: "a CORRUPT alarm", members: settled, desired: 3,
			change: func(v *view) { v.alarmsKnown, v.alarms = true, []etcd.Alarm{{MemberID: 2, Type: etcd.AlarmCorrupt}} },
			act:    []opKind{opHealing, opVersion, opRollout, opMaintenance},
		},
		{
			name: "a NOSPACE alarm is maintenance's", members: settled, desired: 3,
			change: func(v *view) { v.alarmsKnown, v.alarms = true, []etcd.Alarm{{MemberID: 2, Type: etcd.AlarmNoSpace}} },
			act:    []opKind{opVersion, opRollout, opMaintenance},
		},
		{
			name: "quorum lost", members: []viewMember{unhealthyVoter, unhealthyVoter, unhealthyVoter}, desired: 3,
			change: func(v *view) { v.formed, v.quorumLost = false, true },
			act:    []opKind{opRecovery},
		},
		{
			name: "a recovery regrowing", members: []viewMember{leaderVoter}, desired: 3,
			change: func(v *view) {
				v.cluster.Status.Recovery = &etcdv1.RecoveryStatus{Phase: etcdv1.RecoveryRegrowing, Member: "m0"}
			},
			act: []opKind{opRecovery, opVersion, opScaling, opRollout, opMaintenance},
		},
		{
			name: "a recovery done", members: settled, desired: 3,
			change: func(v *view) { v.cluster.Status.Recovery = &etcdv1.RecoveryStatus{Phase: etcdv1.RecoveryDone} },
			act:    []opKind{opVersion, opRollout, opMaintenance},
		},
		{
			name: "a recovery asked for with the quorum there", members: settled, desired: 3,
			change: func(v *view) { v.cluster.Annotations = map[string]string{etcdv1.RecoverQuorumAnnotation: "m1"} },
			act:    []opKind{opRecovery, opVersion, opRollout, opMaintenance},
		},
		{
			name: "being suspended", members: settled, desired: 3,
			change: func(v *view) { v.suspending = true },
			act:    []opKind{opVersion},
		},
		{name: "another StorageClass", members: settled, desired: 3, change: fast, act: []opKind{opVersion, opReplacement, opRollout, opMaintenance}},
		{
			name: "a smaller volume", members: settled, desired: 3,
			change: func(v *view) {
				v.cluster.Spec.Storage.Size = ptr.To(resource.MustParse("512Mi"))
				v.members[1].Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
			},
			act: []opKind{opVersion, opReplacement, opRollout, opMaintenance},
		},
		{
			name: "a larger volume grows online", members: settled, desired: 3,
			change: func(v *view) {
				v.cluster.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
				v.members[1].Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
			},
			act: []opKind{opVersion, opRollout, opMaintenance},
		},
		{
			name: "a replacement under way, its learner", members: []viewMember{leaderVoter, healthyVoter, healthyVoter, learnerMember}, desired: 4,
			change: func(v *view) {
				fast(v)
				v.members[3].Spec.Storage.StorageClassName = ptr.To("fast")
				v.members[3].Annotations = map[string]string{etcdv1.ReplacesAnnotation: "m1"}
			},
			act: []opKind{opVersion, opScaling, opReplacement, opRollout, opMaintenance},
		},
		{
			name: "a replacement while suspending", members: settled, desired: 3,
			change: func(v *view) { fast(v); v.suspending = true },
			act:    []opKind{opVersion},
		},
		{
			name: "not formed, no quorum lost", members: []viewMember{{}, {}, {}}, desired: 3,
			change: func(v *view) { v.formed = false },
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(tt.members...)
			v.desired = tt.desired
			if tt.change != nil {
				tt.change(v)
			}
			for op, decide := range deciders {
				d := decide(v)
				want := false
				for _, k := range tt.act {
					want = want || k == op
				}
				if d.act != want {
					t.Errorf("%s: act %t (%s), want %t", op, d.act, d.why, want)
				}
				if d.why == "" {
					t.Errorf("%s: no reason given", op)
				}
			}
		})
	}
}

// TestArbitrate checks the arbiter: operations in order, the steps of those
// with something to do, until one ends the pass; the certificates' gate
// after the recovery only.
func TestArbitrate(t *testing.T) {
	t.Parallel()
	acts := func(*view) decision { return decision{act: true, why: "test"} }
	idle := func(*view) decision { return decision{why: "test"} }
	requeue := ctrl.Result{RequeueAfter: time.Second}
	for _, tt := range []struct {
		name      string
		tlsReady  bool
		ops       []string // name:decides(a|i):result(r|z), in order; the first is the recovery
		wantRan   []string
		wantActed opKind
		wantRes   ctrl.Result
	}{
		{name: "the first to end the pass acts", tlsReady: true, ops: []string{"rec:i:z", "a:a:z", "b:i:r", "c:a:r", "d:a:r"}, wantRan: []string{"a", "c"}, wantActed: "c", wantRes: requeue},
		{name: "nothing to do", tlsReady: true, ops: []string{"rec:i:z", "a:i:r", "b:a:z"}, wantRan: []string{"b"}},
		{name: "the recovery goes before the certificates", tlsReady: false, ops: []string{"rec:a:z", "a:a:r"}, wantRan: []string{"rec"}, wantRes: ctrl.Result{RequeueAfter: DefaultOptions().HealthInterval}},
		{name: "a recovery that acts ends the pass", tlsReady: false, ops: []string{"rec:a:r", "a:a:r"}, wantRan: []string{"rec"}, wantActed: "rec", wantRes: requeue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Reconciler{Options: DefaultOptions()}
			c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 2}}
			c.Spec.TLS.Disabled = true
			if tt.tlsReady {
				kube.Set(&c.Status.Conditions, 2, etcdv1.ConditionTLSReady, true, "Disabled", "")
			}
			s := &scope{view: view{cluster: c}}
			var ran []string
			var ops []operation
			for i, spec := range tt.ops {
				parts := strings.Split(spec, ":")
				name, dec, res := parts[0], parts[1], parts[2]
				op := operation{kind: opKind(name), decide: idle, certs: i > 0}
				if dec == "a" {
					op.decide = acts
				}
				op.steps = []kube.Step[*scope]{func(context.Context, *scope) (ctrl.Result, error) {
					ran = append(ran, name)
					if res == "r" {
						return requeue, nil
					}
					return ctrl.Result{}, nil
				}}
				ops = append(ops, op)
			}
			res, err := r.arbitrate(ops)(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if res != tt.wantRes {
				t.Errorf("result %+v, want %+v", res, tt.wantRes)
			}
			if len(ran) != len(tt.wantRan) {
				t.Fatalf("ran %v, want %v", ran, tt.wantRan)
			}
			for i := range ran {
				if ran[i] != tt.wantRan[i] {
					t.Fatalf("ran %v, want %v", ran, tt.wantRan)
				}
			}
			if s.acted != tt.wantActed {
				t.Errorf("acted %q, want %q", s.acted, tt.wantActed)
			}
		})
	}
}

// TestOperationsOrder pins the arbiter's order, which operations.go explains.
func TestOperationsOrder(t *testing.T) {
	t.Parallel()
	want := []opKind{opRecovery, opRemoval, opHealing, opVersion, opScaling, opReplacement, opRollout, opMaintenance}
	ops := (&Reconciler{Options: DefaultOptions()}).operations()
	if len(ops) != len(want) {
		t.Fatalf("%d operations, want %d", len(ops), len(want))
	}
	for i, op := range ops {
		if op.kind != want[i] {
			t.Errorf("operation %d is %s, want %s", i, op.kind, want[i])
		}
		if op.certs != (op.kind != opRecovery) {
			t.Errorf("%s: waits for the certificates %t", op.kind, op.certs)
		}
	}
}
