package kube_test

import (
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/kube"
)

// TestEnvStatusApply runs the status writes against a real API server: two
// controllers' applies keep each other's fields; a field a controller stops
// setting goes, once an earlier version's merge-patched status has been
// adopted, and stays without that (which is why the operator adopts at
// start); a finalizer added by apply keeps another's and recreates no
// object that is gone.
func TestEnvStatusApply(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := testenv.NewNamespace(t, c, "apply-", nil)
	newCluster := func(name string, finalizers ...string) *etcdv1.EtcdCluster {
		t.Helper()
		cl := &etcdv1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers},
			Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16"},
		}
		if err := c.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	get := func(cl *etcdv1.EtcdCluster) *etcdv1.EtcdCluster {
		t.Helper()
		got := &etcdv1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now(), ObservedGeneration: 1}
	}
	// legacy writes status as earlier versions did: one merge patch of
	// every controller's fields under one field manager.
	legacy := func(cl *etcdv1.EtcdCluster) *etcdv1.EtcdCluster {
		t.Helper()
		base := get(cl)
		cur := base.DeepCopy()
		cur.Status.ClusterID, cur.Status.Selector = "c0ffee", "app=etcd"
		cur.Status.TLS = &etcdv1.TLSStatus{CASecretName: "ca"}
		cur.Status.Conditions = []metav1.Condition{cond(etcdv1.ConditionAvailable), cond(etcdv1.ConditionTLSReady)}
		if err := c.Status().Patch(ctx, cur, client.MergeFrom(base), client.FieldOwner(kube.LegacyStatusManager)); err != nil {
			t.Fatal(err)
		}
		return cur
	}
	// dropSelector is the cluster controller's next pass: the selector no
	// longer set, its other fields as they were.
	dropSelector := func(cl *etcdv1.EtcdCluster) {
		t.Helper()
		base := get(cl)
		next := base.DeepCopy()
		next.Status.Selector = ""
		if _, err := kube.ApplyStatus(ctx, c, "cluster", base, next); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("two controllers keep each other's fields", func(t *testing.T) {
		cl := newCluster("two")
		base := get(cl)
		byCluster := base.DeepCopy()
		byCluster.Status.ClusterID = "c0ffee"
		byCluster.Status.Conditions = []metav1.Condition{cond(etcdv1.ConditionAvailable)}
		if _, err := kube.ApplyStatus(ctx, c, "cluster", base, byCluster); err != nil {
			t.Fatal(err)
		}
		// The tls controller's pass read the cluster before that write.
		byTLS := base.DeepCopy()
		byTLS.Status.TLS = &etcdv1.TLSStatus{CASecretName: "ca"}
		byTLS.Status.Conditions = []metav1.Condition{cond(etcdv1.ConditionTLSReady)}
		if _, err := kube.ApplyStatus(ctx, c, "tls", base, byTLS); err != nil {
			t.Fatal(err)
		}
		got := get(cl)
		if got.Status.ClusterID != "c0ffee" || got.Status.TLS == nil ||
			meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionAvailable) == nil ||
			meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionTLSReady) == nil {
			t.Fatalf("status = %+v, want both controllers' fields and conditions", got.Status)
		}
		// Nothing changed: nothing is written.
		if rv, err := kube.ApplyStatus(ctx, c, "tls", got, got.DeepCopy()); err != nil || rv != "" {
			t.Fatalf("apply of an unchanged status wrote version %q (err %v), want no write", rv, err)
		}
	})

	t.Run("a field set no more stays without adoption", func(t *testing.T) {
		cl := newCluster("legacy-kept")
		legacy(cl)
		dropSelector(cl)
		if got := get(cl); got.Status.Selector == "" {
			t.Fatal("the selector went although the earlier version's manager still owns it: this test no longer shows why adoption is needed")
		}
	})

	t.Run("adopted, a field set no more goes and the others stay", func(t *testing.T) {
		cl := newCluster("legacy-adopted")
		legacy(cl)
		n, err := kube.AdoptLegacyStatus(ctx, c, []string{ns})
		if err != nil || n < 1 {
			t.Fatalf("adopted %d objects (err %v), want at least this one", n, err)
		}
		got := get(cl)
		for _, e := range got.ManagedFields {
			if e.Manager == kube.LegacyStatusManager && e.Subresource == "status" {
				t.Fatalf("the earlier version's status entry is still there: %+v", e)
			}
		}
		if got.Status.ClusterID != "c0ffee" || got.Status.Selector != "app=etcd" || got.Status.TLS == nil || len(got.Status.Conditions) != 2 {
			t.Fatalf("adoption changed the status: %+v", got.Status)
		}
		dropSelector(cl)
		got = get(cl)
		if got.Status.Selector != "" {
			t.Fatal("the selector stayed after its owner stopped setting it")
		}
		if got.Status.ClusterID != "c0ffee" || got.Status.TLS == nil || meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionTLSReady) == nil {
			t.Fatalf("status = %+v, want the other fields kept", got.Status)
		}
		if n, err := kube.AdoptLegacyStatus(ctx, c, []string{ns}); err != nil || n != 0 {
			t.Fatalf("second adoption: %d objects (err %v), want none", n, err)
		}
	})

	t.Run("finalizer", func(t *testing.T) {
		cl := newCluster("finalizer", "example.com/keep")
		got := get(cl)
		if err := kube.AddFinalizer(ctx, c, "cluster", got, etcdv1.ClusterFinalizer); err != nil {
			t.Fatal(err)
		}
		if f := get(cl).Finalizers; !slices.Contains(f, "example.com/keep") || !slices.Contains(f, etcdv1.ClusterFinalizer) {
			t.Fatalf("finalizers = %v, want both", f)
		}
		gone := newCluster("gone")
		stale := get(gone)
		if err := c.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if err := kube.AddFinalizer(ctx, c, "cluster", stale, etcdv1.ClusterFinalizer); err == nil {
			t.Error("adding a finalizer to a cluster that is gone succeeded")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gone), &etcdv1.EtcdCluster{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get the deleted cluster: %v, want NotFound (the apply must not create it)", err)
		}
	})
}
