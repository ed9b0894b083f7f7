// Package testenv starts what the envtest suites share: a real kube-apiserver
// and etcd with Raftsman's CRDs installed, and a manager that runs the
// controllers under test against them. It lives apart from the suites so that
// each suite says only what is its own: which controller, which options.
package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// cacheSyncTimeout bounds the wait for the manager's cache: far more than it
// needs, so that a slow machine does not fail the suite, yet a manager that
// never syncs fails it instead of hanging until go test's own timeout.
const cacheSyncTimeout = time.Minute

// Start starts a kube-apiserver and etcd with the CRDs of config/crd/bases
// installed, and stops them when t ends. Call it once per package, from the
// package's single TestEnv function: a TestMain would clash with the unit
// tests of the package, and every subtest shares the one API server.
//
// Without KUBEBUILDER_ASSETS the suite is skipped, so that a plain
// `go test ./...` works; on CI (CI=true) a missing binary is a failure, not a
// silently green run.
func Start(t *testing.T) (*rest.Config, *runtime.Scheme) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEBUILDER_ASSETS is not set: run make envtest-assets and set it to _output/envtest")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: run make envtest to run the envtest suites")
	}
	// envtest and the manager log through controller-runtime, which
	// otherwise warns with a stack trace that no logger was set. The logs
	// help only when a test is read with -v.
	if testing.Verbose() {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	crds, err := crdDir()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{crds},
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
	return cfg, scheme
}

// StartManager starts a manager on the API server of cfg with the
// controllers that setup adds, waits until its cache has synced, and stops it
// when t ends, before the API server that Start stops. It returns a client
// that reads straight from the API server, not from a cache that may lag
// behind what the tests wait for.
func StartManager(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, setup func(ctrl.Manager) error) client.Client {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The operator's cache: Secrets as metadata only.
		Cache:    kube.CacheOptions(""),
		NewCache: kube.NewCache,
		Metrics:  metricsserver.Options{BindAddress: "0"},
		// go test -count=N runs the suite N times in one process, each
		// with a manager of its own that registers the same controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("set up the controllers: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	// A manager that fails to start never syncs: its end ends the wait.
	syncCtx, cancelSync := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancelSync()
	stopped := make(chan struct{})
	var mgrErr error
	go func() {
		defer close(stopped)
		mgrErr = mgr.Start(ctx)
		cancelSync()
	}()
	// Cleanups run last-in first-out: the manager stops before the API server.
	t.Cleanup(func() {
		cancel()
		<-stopped
		if mgrErr != nil {
			t.Errorf("manager: %v", mgrErr)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatalf("manager: cache not synced: %v", context.Cause(syncCtx))
	}

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// NewNamespace creates a namespace of its own for one test, named after
// prefix and with labels (which may be nil). envtest runs no namespace
// controller, so it is never deleted; the API server goes at the end of the
// suite anyway.
func NewNamespace(t *testing.T, c client.Client, prefix string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// crdDir finds config/crd/bases from the module root, the first directory up
// from the working directory that holds go.mod. go test runs in the
// directory of the package under test, so this works from a suite at any
// depth, and unlike the path of this source file it survives -trimpath.
func crdDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "config", "crd", "bases"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find config/crd/bases")
		}
		dir = parent
	}
}

// poll is how often Eventually and Consistently check: often enough that a
// test waits little past the change it waits for.
const poll = 50 * time.Millisecond

// Eventually calls check until it returns nil and fails t with check's last
// error when it still fails after timeout. The tests wait so for the
// controllers, which act on their own time.
func Eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %s: %v", what, timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(poll):
		}
	}
}

// Consistently fails t as soon as check fails within period. It checks that
// something does not happen, which no event can tell.
func Consistently(t *testing.T, period time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(period)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(poll):
		}
	}
}
