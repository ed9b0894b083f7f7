package controllers_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/internal/manifest"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/shard"
)

// TestEnvWatchNamespaces runs a replica with --watch-namespaces=A as the
// operator's service account, with only the generated roles bound the way
// config/namespaced binds them (raftsman-manager by a RoleBinding in A). A's
// cluster gets its shard label and its member; B's clusters, one new and
// one with a shard label of another shard count, are left as they are. A
// request the roles do not allow would keep a cache from syncing or fail
// the relabelling, and A's cluster would not converge.
func TestEnvWatchNamespaces(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "raftsman-system"}}); err != nil {
		t.Fatal(err)
	}
	nsA := testenv.NewNamespace(t, admin, "watched-", nil)
	nsB := testenv.NewNamespace(t, admin, "other-", nil)
	for _, f := range []string{"role.yaml", "own_namespace_binding.yaml", "cluster_scope_binding.yaml"} {
		if err := manifest.ApplyFile(ctx, admin, "../config/rbac/"+f, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "raftsman-manager", Namespace: nsA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "raftsman-manager"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "raftsman", Namespace: "raftsman-system"}},
	}); err != nil {
		t.Fatal(err)
	}

	const shards = 3
	newCluster := func(ns, name string, labels map[string]string) *etcdv1.EtcdCluster {
		cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](1)}}
		if err := admin.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	// A label of another shard count: Relabel would move it, were it to
	// look in B.
	stale := shard.Label((shard.Of(nsB, "stale", shards) + 1) % shards)
	newCluster(nsB, "stale", map[string]string{etcdv1.ShardLabel: stale})

	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:raftsman-system:raftsman",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:raftsman-system", "system:authenticated"}}
	so := controllers.ShardOptions{Shards: shards, Leases: true, Namespace: "raftsman-system", Identity: "only",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		WatchNamespaces: []string{nsA}}
	root, err := ctrl.NewManager(as, ctrl.Options{
		Scheme:     scheme,
		Cache:      controllers.RootCacheOptions(so),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := controllers.Options{Etcd: etcd.NewFakeFactory(), TLS: tls.DefaultOptions()}
	opts.Cluster = clusterOptions()
	if err := controllers.SetupShards(root, opts, so); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := root.Start(runCtx); err != nil {
			t.Errorf("replica: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	fresh := newCluster(nsB, "fresh", nil)
	mine := newCluster(nsA, "mine", nil)
	want := shard.Label(shard.Of(nsA, mine.Name, shards))
	testenv.Eventually(t, 60*time.Second, "A's cluster labelled, with its member", func() error {
		cl := &etcdv1.EtcdCluster{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(mine), cl); err != nil {
			return err
		}
		if cl.Labels[etcdv1.ShardLabel] != want {
			return fmt.Errorf("shard label %q, want %q", cl.Labels[etcdv1.ShardLabel], want)
		}
		ms := &etcdv1.EtcdMemberList{}
		if err := admin.List(ctx, ms, client.InNamespace(nsA)); err != nil {
			return err
		}
		if len(ms.Items) != 1 {
			return fmt.Errorf("%d members; conditions %v", len(ms.Items), cl.Status.Conditions)
		}
		return nil
	})

	for _, c := range []struct {
		name, label string
	}{{fresh.Name, ""}, {"stale", stale}} {
		cl := &etcdv1.EtcdCluster{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: nsB, Name: c.name}, cl); err != nil {
			t.Fatal(err)
		}
		if cl.Labels[etcdv1.ShardLabel] != c.label || len(cl.Finalizers) > 0 || len(cl.Status.Conditions) > 0 {
			t.Errorf("%s/%s was touched: labels %v finalizers %v conditions %v", nsB, c.name, cl.Labels, cl.Finalizers, cl.Status.Conditions)
		}
	}
	ms := &etcdv1.EtcdMemberList{}
	if err := admin.List(ctx, ms, client.InNamespace(nsB)); err != nil {
		t.Fatal(err)
	}
	if len(ms.Items) > 0 {
		t.Errorf("%d members in %s, want none", len(ms.Items), nsB)
	}
}
