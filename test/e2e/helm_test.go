//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// helmBinary is $HELM, or the helm that make helm builds; the test skips
// without one.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	versions, err := os.ReadFile(filepath.Join(repoRoot, "hack/cluster/versions.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`HELM_VERSION=\$\{HELM_VERSION:-([^}]+)\}`).FindSubmatch(versions)
	if m == nil {
		t.Fatal("no HELM_VERSION in hack/cluster/versions.sh")
	}
	p := filepath.Join(repoRoot, "_output/bin/helm-"+string(m[1]), "helm")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no helm (%v): make helm builds it", err)
	}
	return p
}

// TestHelmInstall: charts/raftsman, installed with helm as a release of its
// own in a namespace of its own and watching only the test's namespace, passes
// its helm test (its operator answers through its Service) and runs a
// 3-member cluster to Available, its data written and read back; helm
// uninstall then leaves none of the release's objects, cluster-scoped ones
// included. The release leaves the CRDs to dist/install.yaml, which installed
// them (crds.enabled=false): Helm would refuse to take them over, and only
// one install may own them. As in TestNamespacedInstall, the cluster-wide operator of
// dist/install.yaml is scaled to 0 meanwhile, so that only the release's
// operator acts on the test's namespace; the release's cluster-scoped objects
// carry its name, so they replace none of dist/install.yaml's.
func TestHelmInstall(t *testing.T) {
	serial(t, "it scales the cluster-wide operator to 0 while a Helm release's operator runs")
	f := features.New("helm install").
		Assess("a release watching the test's namespace runs a cluster, and uninstalls cleanly", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			bin := helmBinary(t)
			ns := namespaceOf(ctx)
			suffix := utilrand.String(5)
			rel, opNS := "e2e-"+suffix, "e2e-helm-"+suffix
			fullname := rel + "-raftsman"
			helm := func(ctx context.Context, args ...string) string {
				t.Helper()
				cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", cfg.KubeconfigFile())...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}

			// Cleanups run last first: the cluster, then the release, then
			// the cluster-wide operator back.
			k.setOperator(ctx, t, 0, 1)
			t.Cleanup(func() { k.setOperator(context.Background(), t, 1, 1) })
			t.Cleanup(func() {
				ctx := context.Background()
				if t.Failed() {
					(&namespacedInstall{opNS: opNS}).dumpLogs(ctx, t, k)
				}
				start := time.Now()
				helm(ctx, "uninstall", rel, "--namespace", opNS, "--wait", "--timeout", "2m")
				t.Logf("helm uninstall took %.1fs", time.Since(start).Seconds())
				// Nothing of the release is left; helm leaves the namespace
				// it created, and the CRDs.
				crs := &rbacv1.ClusterRoleList{}
				crbs := &rbacv1.ClusterRoleBindingList{}
				rbs := &rbacv1.RoleBindingList{}
				for _, l := range []client.ObjectList{crs, crbs} {
					if err := k.c.List(ctx, l); err != nil {
						t.Error(err)
					}
				}
				if err := k.c.List(ctx, rbs, client.InNamespace(ns)); err != nil {
					t.Error(err)
				}
				var left []string
				for _, cr := range crs.Items {
					left = append(left, "ClusterRole/"+cr.Name)
				}
				for _, b := range crbs.Items {
					left = append(left, "ClusterRoleBinding/"+b.Name)
				}
				for _, b := range rbs.Items {
					left = append(left, "RoleBinding/"+b.Name)
				}
				for _, l := range left {
					if strings.Contains(l, "/"+fullname) {
						t.Errorf("%s is left after helm uninstall", l)
					}
				}
				_ = k.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNS}})
			})

			start := time.Now()
			helm(ctx, "install", rel, filepath.Join(repoRoot, "charts/raftsman"), "--namespace", opNS, "--create-namespace",
				"--set", "watchNamespaces={"+ns+"}", "--set", "crds.enabled=false", "--wait", "--timeout", "3m")
			t.Logf("release %s in %s ready %.1fs after helm install, watching %s", rel, opNS, time.Since(start).Seconds(), ns)
			in := &namespacedInstall{opNS: opNS}
			p, err := in.operatorPod(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if sa := p.Spec.ServiceAccountName; sa != fullname {
				t.Errorf("the release's operator runs as %s, want %s", sa, fullname)
			}
			if status := helm(ctx, "status", rel, "--namespace", opNS); !strings.Contains(status, "STATUS: deployed") {
				t.Errorf("helm status:\n%s", status)
			}
			// The chart's test Pod runs `raftsman probe` (the operator's image)
			// against the operator's /readyz and /healthz through its Service;
			// helm test fails (and helm() with it) unless both answer.
			start = time.Now()
			out := helm(ctx, "test", rel, "--namespace", opNS, "--logs", "--timeout", "2m")
			t.Logf("helm test took %.1fs", time.Since(start).Seconds())
			for _, want := range []string{"TEST SUITE:     " + fullname + "-test", "Phase:          Succeeded", "/readyz: 200 OK", "/healthz: 200 OK"} {
				if !strings.Contains(out, want) {
					t.Errorf("helm test does not say %q:\n%s", want, out)
				}
			}

			c := newCluster(ns, "helm", 3)
			start = time.Now()
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				_ = k.c.Delete(ctx, c)
				// While the release's operator still runs, so that it
				// handles the finalizer.
				if err := poll(ctx, 2*time.Minute, func() (bool, error) {
					err := k.c.Get(ctx, client.ObjectKeyFromObject(c), &etcdv1.EtcdCluster{})
					return err != nil && ignoreNotFound(err) == nil, err
				}); err != nil {
					t.Errorf("cluster %s/%s not deleted by the release's operator: %v", ns, c.Name, err)
				}
			})
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 4*time.Minute)
			t.Logf("3-member cluster Available %.1fs after create", time.Since(start).Seconds())
			cli := etcdClient(ctx, t, k, key)
			want := putKeys(ctx, t, cli, "helm/", 50)
			sameData(t, want, readAll(ctx, t, cli, "helm/"))
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
