package member

import (
	"context"
	"slices"
	"testing"

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

// TestPeersBefore: while no member of the cluster is Ready, a member that
// ran before starts etcd after the members named before it (their peer
// URLs, in name order); a Ready member anywhere, fenced or never-run
// members, members after it and other clusters' members do not count.
func TestPeersBefore(t *testing.T) {
	t.Parallel()
	member := func(name string, change func(*etcdv1.EtcdMember)) *etcdv1.EtcdMember {
		m := &etcdv1.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1, Labels: resources.ClusterLabels("demo")},
			Spec:       etcdv1.EtcdMemberSpec{ClusterName: "demo", PeerURL: "https://" + name + ":2380"},
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
	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{
		{name: "the members before, in name order", objs: []client.Object{member("demo-b", nil), member("demo-a", nil)}, want: []string{"https://demo-a:2380", "https://demo-b:2380"}},
		{name: "a member is Ready: none", objs: []client.Object{member("demo-a", nil), member("demo-d", ready)}},
		{name: "a fenced member does not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Spec.Fenced = true })}},
		{name: "a member that never ran does not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Status.PodName = "" })}},
		{name: "members after it do not count", objs: []client.Object{member("demo-d", nil), member("demo-e", nil)}},
		{name: "another cluster's members do not count", objs: []client.Object{member("demo-a", func(m *etcdv1.EtcdMember) { m.Labels = resources.ClusterLabels("other") })}},
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
			got, err := (&Reconciler{Client: cl}).peersBefore(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("peersBefore = %q, want %q", got, tt.want)
			}
		})
	}
}
