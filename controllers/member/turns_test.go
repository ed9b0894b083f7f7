package member

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/resources"
)

// TestWaitForTurn: while no member of the cluster is Ready, a member that
// ran before starts once the Pods of the members before it (name order)
// run; a Ready member anywhere, a fenced or never-run member before it, or
// the bound on the wait lets it start at once.
func TestWaitForTurn(t *testing.T) {
	t.Parallel()
	member := func(name string, change func(*etcdv1.EtcdMember)) *etcdv1.EtcdMember {
		m := &etcdv1.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1, Labels: resources.ClusterLabels("demo")},
			Spec:       etcdv1.EtcdMemberSpec{ClusterName: "demo"},
			Status:     etcdv1.EtcdMemberStatus{PodName: name},
		}
		if change != nil {
			change(m)
		}
		return m
	}
	ready := func(m *etcdv1.EtcdMember) {
		m.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonPodReady, ObservedGeneration: 1}}
	}
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name    string
		objs    []client.Object
		waited  time.Duration // how long demo-c has waited already
		wantFor string
	}{
		{name: "the members before have no Pod", objs: []client.Object{member("demo-a", nil), member("demo-b", nil)}, wantFor: "demo-a"},
		{name: "the first one's Pod does not run yet", objs: []client.Object{member("demo-a", nil), member("demo-b", nil), pod("demo-a", corev1.PodPending)}, wantFor: "demo-a"},
		{name: "the first runs, the second has no Pod", objs: []client.Object{member("demo-a", nil), member("demo-b", nil), pod("demo-a", corev1.PodRunning)}, wantFor: "demo-b"},
		{name: "the members before run", objs: []client.Object{member("demo-a", nil), member("demo-b", nil), pod("demo-a", corev1.PodRunning), pod("demo-b", corev1.PodRunning)}},
		{name: "a member is Ready: no resume, no wait", objs: []client.Object{member("demo-a", nil), member("demo-d", ready)}},
		{name: "a fenced member does not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Spec.Fenced = true })}},
		{name: "a member that never ran does not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Status.PodName = "" })}},
		{name: "members after it do not count", objs: []client.Object{member("demo-d", nil), member("demo-e", nil)}},
		{name: "another cluster's members do not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Labels = resources.ClusterLabels("other") })}},
		{name: "waited long enough", objs: []client.Object{member("demo-a", nil)}, waited: turnWait},
		{name: "waited, not long enough", objs: []client.Object{member("demo-a", nil)}, waited: turnWait - time.Second, wantFor: "demo-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := etcdv1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			c := member("demo-c", nil)
			cl := fake.NewClientBuilder().WithTypeConverters(testenv.TypeConverters(t)...).WithScheme(s).WithObjects(append(tt.objs, c)...).Build()
			r := &Reconciler{Client: cl}
			if tt.waited > 0 {
				r.turns.since = map[types.UID]time.Time{c.UID: time.Now().Add(-tt.waited)}
			}
			got, err := r.waitForTurn(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantFor {
				t.Errorf("waits for %q, want %q", got, tt.wantFor)
			}
			if _, waiting := r.turns.since[c.UID]; waiting != (tt.wantFor != "") {
				t.Errorf("recorded as waiting: %v, want %v", waiting, tt.wantFor != "")
			}
		})
	}
}
