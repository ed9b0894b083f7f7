package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// startEnv starts a kube-apiserver and etcd with the CRDs of config/crd/bases
// installed, and stops them when t ends. Call it once per package, from the
// package's single TestEnv function: a TestMain would clash with the unit
// tests of the package, and every subtest shares the one API server.
//
// Without KUBEBUILDER_ASSETS the suite is skipped, so that a plain
// `go test ./...` works; on CI (CI=true) a missing binary is a failure, not a
// silently green run.
func startEnv(t *testing.T) client.Client {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEBUILDER_ASSETS is not set: run make envtest-assets and set it to _output/envtest")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: run make envtest to run the envtest suites")
	}
	// envtest logs through controller-runtime, which otherwise warns with a
	// stack trace that no logger was set.
	ctrl.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// newNamespace creates a namespace of its own for one test. envtest runs no
// namespace controller, so it is never deleted; the API server goes at the
// end of the suite anyway.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}
