package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestReaderSetListsEveryShard: a list gathers every cache's objects, a
// cache that cannot answer is left out, and a removed cache no longer counts.
func TestReaderSetListsEveryShard(t *testing.T) {
	t.Parallel()
	pod := func(name string) client.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	a := fake.NewClientBuilder().WithObjects(pod("a1"), pod("a2")).Build()
	b := fake.NewClientBuilder().WithObjects(pod("b1")).Build()
	syncing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("failed waiting for Informer to sync")
		},
	}).Build()
	set := &ReaderSet{}
	set.Add(a)
	removeB := set.Add(b)
	set.Add(syncing)

	list := &corev1.PodList{}
	if err := set.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Errorf("%d pods listed, want 3 from the two caches that answer", len(list.Items))
	}
	if err := set.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "b1"}, &corev1.Pod{}); err != nil {
		t.Errorf("get b1: %v", err)
	}
	removeB()
	if err := set.List(context.Background(), list); err != nil || len(list.Items) != 2 {
		t.Errorf("after removing a cache: %d pods (%v), want 2", len(list.Items), err)
	}
}
