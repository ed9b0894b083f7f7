package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestRelabelMovesClustersWithTheirObjects: after a change of the shard
// count every cluster, and everything made for it, carries its new shard;
// clusters already right and new unlabelled ones are left alone.
func TestRelabelMovesClustersWithTheirObjects(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	labels := func(cluster string, shard *string) map[string]string {
		l := map[string]string{etcdv1.ClusterLabel: cluster}
		if shard != nil {
			l[etcdv1.ShardLabel] = *shard
		}
		return l
	}
	var objs []client.Object
	const from, to = 2, 5
	var moving []string
	for i := range 20 {
		name := fmt.Sprintf("c%d", i)
		old := Label(Of("ns", name, from))
		if Label(Of("ns", name, to)) != old {
			moving = append(moving, name)
		}
		meta := metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels(name, &old)}
		objs = append(objs,
			&etcdv1.EtcdCluster{ObjectMeta: meta},
			&etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name + "-m", Namespace: "ns", Labels: labels(name, &old)}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-m", Namespace: "ns", Labels: labels(name, &old)}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-ca", Namespace: "ns", Labels: labels(name, &old)}},
		)
	}
	objs = append(objs, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns", Labels: labels("new", nil)}})
	if len(moving) == 0 {
		t.Fatal("no cluster moves between 2 and 5 shards; pick other names")
	}
	var order []string // kinds and names of the patches, in order
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			order = append(order, obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName())
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}).Build()

	moved, err := Relabel(context.Background(), c, to, nil)
	if err != nil {
		t.Fatal(err)
	}
	if moved != len(moving) {
		t.Errorf("moved %d clusters, want %d", moved, len(moving))
	}
	for i := range 20 {
		name := fmt.Sprintf("c%d", i)
		want := Label(Of("ns", name, to))
		for _, o := range []client.Object{&etcdv1.EtcdCluster{}, &etcdv1.EtcdMember{}, &corev1.Pod{}, &corev1.Secret{}} {
			key := client.ObjectKey{Namespace: "ns", Name: name}
			switch o.(type) {
			case *etcdv1.EtcdMember, *corev1.Pod:
				key.Name = name + "-m"
			case *corev1.Secret:
				key.Name = name + "-ca"
			}
			if err := c.Get(context.Background(), key, o); err != nil {
				t.Fatal(err)
			}
			if got := o.GetLabels()[etcdv1.ShardLabel]; got != want {
				t.Errorf("%T %s: shard %q, want %q", o, key.Name, got, want)
			}
		}
	}
	// A cluster moves after its objects: its new holder never sees it
	// without them.
	for _, name := range moving {
		at := slices.Index(order, "EtcdCluster/"+name)
		for _, child := range []string{"EtcdMember/" + name + "-m", "Pod/" + name + "-m", "Secret/" + name + "-ca"} {
			if i := slices.Index(order, child); i < 0 || i > at {
				t.Errorf("%s moved at %d, its cluster at %d: children must go first", child, i, at)
			}
		}
	}
	fresh := &etcdv1.EtcdCluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "new"}, fresh); err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.Labels[etcdv1.ShardLabel]; ok {
		t.Errorf("Relabel labelled a new cluster; the labeler does that")
	}
	// Running it again changes nothing.
	if moved, err := Relabel(context.Background(), c, to, nil); err != nil || moved != 0 {
		t.Errorf("second pass moved %d (%v), want 0", moved, err)
	}
}

// TestRelabelOnlyInWatchedNamespaces: an operator limited to some
// namespaces lists only there (it has no right to list elsewhere) and moves
// no cluster of another namespace.
func TestRelabelOnlyInWatchedNamespaces(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const from, to = 2, 5
	name := ""
	for i := range 20 {
		n := fmt.Sprintf("c%d", i)
		moves := func(ns string) bool { return Label(Of(ns, n, to)) != Label(Of(ns, n, from)) }
		if moves("a") && moves("b") && moves("c") {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("no name moves in every namespace between 2 and 5 shards; pick other names")
	}
	var objs []client.Object
	for _, ns := range []string{"a", "b", "c"} {
		l := map[string]string{etcdv1.ClusterLabel: name, etcdv1.ShardLabel: Label(Of(ns, name, from))}
		objs = append(objs, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}})
	}
	var listed []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lo := (&client.ListOptions{}).ApplyOptions(opts)
			listed = append(listed, lo.Namespace)
			return cl.List(ctx, list, opts...)
		},
	}).Build()
	moved, err := Relabel(context.Background(), c, to, []string{"a", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if moved != 2 {
		t.Errorf("moved %d clusters, want 2 (those of a and c)", moved)
	}
	if slices.Contains(listed, "") || slices.Contains(listed, "b") {
		t.Errorf("listed in namespaces %q; want only a and c", listed)
	}
	for _, ns := range []string{"a", "b"} {
		cl := &etcdv1.EtcdCluster{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
			t.Fatal(err)
		}
		want := Label(Of(ns, name, to))
		if ns == "b" {
			want = Label(Of(ns, name, from))
		}
		if got := cl.Labels[etcdv1.ShardLabel]; got != want {
			t.Errorf("cluster in %s: shard %q, want %q", ns, got, want)
		}
	}
}
