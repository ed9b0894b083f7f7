//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/scrape"
)

// namespacedInstall is dist/install-namespaced.yaml moved to test
// namespaces: the operator in opNS watching only watched. Its
// cluster-scoped objects get a suffix, so that they do not replace those
// of the cluster-wide install.
type namespacedInstall struct {
	opNS, watched, suffix string
	objs                  []*unstructured.Unstructured
}

// exampleWatched is the watched namespace config/namespaced names.
const exampleWatched = "etcd-tenants"

func loadNamespacedInstall(t *testing.T, opNS, watched string) *namespacedInstall {
	t.Helper()
	path := filepath.Join(repoRoot, "dist/install-namespaced.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in := &namespacedInstall{opNS: opNS, watched: watched, suffix: "-" + opNS}
	ns := func(n string) string {
		switch n {
		case operatorNamespace:
			return opNS
		case exampleWatched:
			return watched
		}
		return n
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		switch u.GetKind() {
		case "":
			continue
		case "CustomResourceDefinition":
			// The same CRDs as dist/install.yaml's, which TestMain applied.
			continue
		case "Namespace":
			u.SetName(ns(u.GetName()))
		case "ClusterRole":
			u.SetName(u.GetName() + in.suffix)
			// A renamed copy of the user roles would only add the same
			// rules to view, edit and admin again.
			if strings.HasPrefix(u.GetName(), "raftsman-edit") || strings.HasPrefix(u.GetName(), "raftsman-view") {
				continue
			}
		case "ClusterRoleBinding":
			u.SetName(u.GetName() + in.suffix)
		}
		u.SetNamespace(ns(u.GetNamespace()))
		if ref, ok, _ := unstructured.NestedMap(u.Object, "roleRef"); ok && ref["kind"] == "ClusterRole" {
			_ = unstructured.SetNestedField(u.Object, ref["name"].(string)+in.suffix, "roleRef", "name")
		}
		if subjects, ok, _ := unstructured.NestedSlice(u.Object, "subjects"); ok {
			for _, s := range subjects {
				if m := s.(map[string]any); m["namespace"] != nil {
					m["namespace"] = ns(m["namespace"].(string))
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
		}
		if u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]any)
			args := c["args"].([]any)
			found := false
			for i, a := range args {
				if a == "--watch-namespaces="+exampleWatched {
					args[i], found = "--watch-namespaces="+watched, true
				}
			}
			if !found {
				t.Fatalf("the Deployment of %s has no --watch-namespaces=%s: %v", path, exampleWatched, args)
			}
			_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		}
		in.objs = append(in.objs, u)
	}
	return in
}

func (in *namespacedInstall) apply(ctx context.Context, k *kube) error {
	for _, u := range in.objs {
		if err := k.c.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("raftsman-e2e"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// remove deletes what apply made; the operator's namespace takes its
// Deployment, account, Role and binding with it.
func (in *namespacedInstall) remove(ctx context.Context, k *kube) {
	for _, u := range in.objs {
		_ = k.c.Delete(ctx, u.DeepCopy())
	}
}

// operatorPod is the ready Pod of the namespaced operator.
func (in *namespacedInstall) operatorPod(ctx context.Context, k *kube) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(in.opNS), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no ready operator Pod in %s", in.opNS)
}

// can asks the API server whether the service account may do verb on
// resource in ns (all namespaces for ""), as its token would.
func (k *kube) can(ctx context.Context, t *testing.T, saNS, sa string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               fmt.Sprintf("system:serviceaccount:%s:%s", saNS, sa),
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	if err := k.c.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestNamespacedInstall: the install of dist/install-namespaced.yaml,
// watching namespace A only, manages a cluster in A (Available, data
// written and read back) and never touches one in B; its service account
// may read Secrets and create Pods in A and not in B. The cluster-wide
// operator is scaled to 0 meanwhile, so nothing else acts on B.
func TestNamespacedInstall(t *testing.T) {
	serial(t, "it scales the cluster-wide operator to 0 while a namespaced install runs")
	f := features.New("namespaced install").
		Assess("an operator watching A manages A's cluster and cannot touch B", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			nsA := namespaceOf(ctx)
			suffix := utilrand.String(5)
			opNS, nsB := "e2e-op-"+suffix, "e2e-b-"+suffix
			in := loadNamespacedInstall(t, opNS, nsA)

			// Cleanups run last first: clusters, then the namespaced
			// install, then the cluster-wide operator back.
			k.setOperator(ctx, t, 0, 1)
			t.Cleanup(func() { k.setOperator(context.Background(), t, 1, 1) })
			t.Cleanup(func() {
				ctx := context.Background()
				if t.Failed() {
					in.dumpLogs(ctx, t, k)
				}
				in.remove(ctx, k)
				_ = k.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}})
				waitFor(ctx, t, 2*time.Minute, "the namespaced install's namespace to go", func() (bool, error) {
					err := k.c.Get(ctx, client.ObjectKey{Name: opNS}, &corev1.Namespace{})
					return ignoreNotFound(err) == nil && err != nil, err
				})
			})
			if err := k.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
			}}}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := in.apply(ctx, k); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 2*time.Minute, "the namespaced operator to be ready", func() (bool, error) {
				_, err := in.operatorPod(ctx, k)
				return err == nil, err
			})
			t.Logf("namespaced operator in %s ready %.1fs after apply, watching %s", opNS, time.Since(start).Seconds(), nsA)

			// B's cluster first: by the time A's is Available, the
			// operator had every chance to act on B's.
			other := newCluster(nsB, "other", 1)
			if err := k.c.Create(ctx, other); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k.c.Delete(context.Background(), other) })
			mine := newCluster(nsA, "mine", 1)
			start = time.Now()
			if err := k.c.Create(ctx, mine); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				_ = k.c.Delete(ctx, mine)
				// While the namespaced operator still runs, so that it
				// handles the finalizer.
				if err := poll(ctx, 2*time.Minute, func() (bool, error) {
					err := k.c.Get(ctx, client.ObjectKeyFromObject(mine), &etcdv1.EtcdCluster{})
					return err != nil && ignoreNotFound(err) == nil, err
				}); err != nil {
					t.Errorf("cluster %s/%s not deleted by the namespaced operator: %v", nsA, mine.Name, err)
				}
			})
			keyA := client.ObjectKeyFromObject(mine)
			waitConverged(ctx, t, k, keyA, 1, 3*time.Minute)
			t.Logf("cluster in %s Available %.1fs after create", nsA, time.Since(start).Seconds())
			cli := etcdClient(ctx, t, k, keyA)
			want := putKeys(ctx, t, cli, "ns/", 50)
			sameData(t, want, readAll(ctx, t, cli, "ns/"))

			// A few more seconds for anything queued on B to show.
			time.Sleep(5 * time.Second)
			got := &etcdv1.EtcdCluster{}
			if err := k.c.Get(ctx, client.ObjectKeyFromObject(other), got); err != nil {
				t.Fatal(err)
			}
			if len(got.Finalizers) > 0 || got.Labels[etcdv1.ShardLabel] != "" || len(got.Status.Conditions) > 0 || got.Status.ObservedGeneration != 0 {
				t.Errorf("cluster %s/%s was touched: finalizers %v labels %v status %+v", nsB, other.Name, got.Finalizers, got.Labels, got.Status)
			}
			members := &etcdv1.EtcdMemberList{}
			if err := k.c.List(ctx, members, client.InNamespace(nsB)); err != nil {
				t.Fatal(err)
			}
			pods := &corev1.PodList{}
			if err := k.c.List(ctx, pods, client.InNamespace(nsB)); err != nil {
				t.Fatal(err)
			}
			secrets := &corev1.SecretList{}
			if err := k.c.List(ctx, secrets, client.InNamespace(nsB), client.HasLabels{etcdv1.ManagedByLabel}); err != nil {
				t.Fatal(err)
			}
			if n := len(members.Items) + len(pods.Items) + len(secrets.Items); n > 0 {
				t.Errorf("%s has %d members, %d Pods, %d operator Secrets; want none", nsB, len(members.Items), len(pods.Items), len(secrets.Items))
			}
			t.Logf("cluster %s/%s untouched %.0fs after its creation", nsB, other.Name, time.Since(start).Seconds())

			// What the namespaced operator's account may do, and where.
			type check struct {
				attrs authorizationv1.ResourceAttributes
				want  bool
			}
			for _, c := range []check{
				{authorizationv1.ResourceAttributes{Namespace: nsA, Verb: "get", Resource: "secrets"}, true},
				{authorizationv1.ResourceAttributes{Namespace: nsA, Verb: "create", Resource: "pods"}, true},
				{authorizationv1.ResourceAttributes{Namespace: nsA, Verb: "create", Group: "etcd.raftsman.io", Resource: "etcdmembers"}, true},
				{authorizationv1.ResourceAttributes{Namespace: nsB, Verb: "get", Resource: "secrets"}, false},
				{authorizationv1.ResourceAttributes{Namespace: nsB, Verb: "create", Resource: "pods"}, false},
				{authorizationv1.ResourceAttributes{Namespace: nsB, Verb: "list", Group: "etcd.raftsman.io", Resource: "etcdclusters"}, false},
				{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false},
				{authorizationv1.ResourceAttributes{Namespace: opNS, Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}, true},
				{authorizationv1.ResourceAttributes{Namespace: nsA, Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}, false},
				{authorizationv1.ResourceAttributes{Namespace: opNS, Verb: "get", Resource: "secrets"}, false},
				{authorizationv1.ResourceAttributes{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"}, true},
			} {
				if got := k.can(ctx, t, opNS, "raftsman", c.attrs); got != c.want {
					t.Errorf("%s %s/%s in %q: allowed %v, want %v", c.attrs.Verb, c.attrs.Group, c.attrs.Resource, c.attrs.Namespace, got, c.want)
				}
			}

			// Its metrics: read with the metrics reader's account (the
			// reviews go through raftsman-cluster-scope), A's cluster
			// only.
			p, err := in.operatorPod(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 30*time.Second, "A's Available series on the namespaced operator's /metrics", func() (bool, error) {
				out, err := scrape.Operator(ctx, k.cs, p, operatorNamespace, metricsReader)
				if err != nil {
					return false, err
				}
				if strings.Contains(out, fmt.Sprintf(`namespace=%q`, nsB)) {
					t.Errorf("series of %s on the namespaced operator", nsB)
				}
				return strings.Contains(out, fmt.Sprintf(`raftsman_etcdcluster_status_condition{name=%q,namespace=%q,reason="QuorumHealthy",status="True",type="Available"} 1`, mine.Name, nsA)), nil
			})

			// No request of the operator was refused: its RBAC covers what
			// it does in A and its own namespace.
			logs, err := k.cs.CoreV1().Pods(opNS).GetLogs(p.Name, &corev1.PodLogOptions{}).Do(ctx).Raw()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(logs), "\n") {
				if strings.Contains(strings.ToLower(line), "forbidden") {
					t.Errorf("operator log: %s", line)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

func (in *namespacedInstall) dumpLogs(ctx context.Context, t *testing.T, k *kube) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(in.opNS)); err != nil {
		return
	}
	for _, p := range pods.Items {
		logs, err := k.cs.CoreV1().Pods(in.opNS).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](80)}).Do(ctx).Raw()
		if err == nil {
			t.Logf("namespaced operator %s logs:\n%s", p.Name, logs)
		}
	}
}
