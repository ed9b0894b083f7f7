package shard_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/shard"
)

// TestUserLabeler: an EtcdUser gets its cluster's labels, and keeps a
// label it has already.
func TestUserLabeler(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{name: "new", want: map[string]string{etcdv1.ClusterLabel: "demo", etcdv1.ShardLabel: shard.Label(shard.Of("ns", "demo", 4))}},
		{name: "labelled", labels: map[string]string{etcdv1.ShardLabel: "shard-9"},
			want: map[string]string{etcdv1.ClusterLabel: "demo", etcdv1.ShardLabel: "shard-9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := &etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Namespace: "ns", Labels: tt.labels},
				Spec: etcdv1.EtcdUserSpec{ClusterName: "demo"}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(u).Build()
			l := &shard.UserLabeler{Client: c, Shards: 4}
			if _, err := l.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "tenant-a"}}); err != nil {
				t.Fatal(err)
			}
			got := &etcdv1.EtcdUser{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
				}
			}
		})
	}
}
