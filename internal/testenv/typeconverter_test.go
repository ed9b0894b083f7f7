package testenv

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestFakeMergesConditionsByType: two field managers applying a condition
// each to the fake keep both, and one that stops applying its condition
// removes only its own, as the API server does with listType map.
func TestFakeMergesConditionsByType(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithTypeConverters(TypeConverters(t)...).
		WithObjects(c).WithStatusSubresource(c).Build()
	apply := func(owner string, types ...string) {
		t.Helper()
		var conds []any
		for _, ty := range types {
			conds = append(conds, map[string]any{"type": ty, "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": etcdv1.GroupVersion.String(), "kind": "EtcdCluster",
			"metadata": map[string]any{"name": "a", "namespace": "ns"},
			"status":   map[string]any{"conditions": conds},
		}}
		if err := cl.Status().Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(owner), client.ForceOwnership); err != nil {
			t.Fatalf("apply as %s: %v", owner, err)
		}
	}
	have := func() []string {
		t.Helper()
		got := &etcdv1.EtcdCluster{}
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(c), got); err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ty := range []string{"A", "B"} {
			if meta.FindStatusCondition(got.Status.Conditions, ty) != nil {
				types = append(types, ty)
			}
		}
		return types
	}
	apply("one", "A")
	apply("two", "B")
	if got := have(); len(got) != 2 {
		t.Fatalf("after two managers applied A and B: conditions %v, want both", got)
	}
	apply("one")
	if got := have(); len(got) != 1 || got[0] != "B" {
		t.Fatalf("after manager one applied none: conditions %v, want [B]", got)
	}
}
