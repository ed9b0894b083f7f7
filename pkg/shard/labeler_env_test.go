package shard_test

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/shard"
)

// TestEnvLabelerAddsTheFinalizer runs the labeler against a real API
// server: a new cluster gets its shard label and the cluster controller's
// finalizer in one write, beside the labels and finalizers it had; a
// cluster being deleted gets its label and no finalizer.
func TestEnvLabelerAddsTheFinalizer(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := testenv.NewNamespace(t, c, "labeler-", nil)
	l := &shard.Labeler{Client: c, Shards: 4}
	for _, tt := range []struct {
		name     string
		deleting bool
		want     []string
	}{
		{name: "new", want: []string{"example.com/keep", etcdv1.ClusterFinalizer}},
		{name: "deleting", deleting: true, want: []string{"example.com/keep"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cl := &etcdv1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: ns, Labels: map[string]string{"team": "a"}, Finalizers: []string{"example.com/keep"}},
				Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16"},
			}
			if err := c.Create(ctx, cl); err != nil {
				t.Fatal(err)
			}
			if tt.deleting {
				if err := c.Delete(ctx, cl); err != nil {
					t.Fatal(err)
				}
			}
			before := cl.ResourceVersion
			if _, err := l.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: tt.name}}); err != nil {
				t.Fatal(err)
			}
			got := &etcdv1.EtcdCluster{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(cl), got); err != nil {
				t.Fatal(err)
			}
			if got.Labels[etcdv1.ShardLabel] != shard.Label(shard.Of(ns, tt.name, 4)) || got.Labels["team"] != "a" {
				t.Errorf("labels %v, want the shard label beside team=a", got.Labels)
			}
			if !slices.Equal(got.Finalizers, tt.want) {
				t.Errorf("finalizers %v, want %v", got.Finalizers, tt.want)
			}
			if tt.deleting {
				return
			}
			// Labelled already: nothing more is written.
			rv := got.ResourceVersion
			if rv == before {
				t.Fatal("the label was not written")
			}
			if _, err := l.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: tt.name}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(cl), got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != rv {
				t.Errorf("a labelled cluster was written again")
			}
		})
	}
}
