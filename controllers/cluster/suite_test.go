package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// The suite runs a real kube-apiserver and etcd and a manager with the cluster
// controller alone, talking to the in-memory fake etcd of pkg/etcd. The tests
// play the member controller (they set Ready by hand) and etcd itself (they
// bootstrap the fake, start learners, make members sick). Every test has a
// namespace of its own, hence a fake etcd of its own, and may run in parallel.

const (
	// timeout bounds every wait for the controller: far more than it needs,
	// so that a slow machine does not make the suite flaky.
	timeout = 20 * time.Second
	poll    = 50 * time.Millisecond
)

// startSuite starts the API server and the manager and stops both when t
// ends. Call it once per package, from the single TestEnv function: a
// TestMain would clash with the unit tests of the package.
//
// Without KUBEBUILDER_ASSETS the suite is skipped so that a plain `go test`
// works; on CI (CI=true) that is a failure instead.
func startSuite(t *testing.T) (client.Client, *etcd.FakeFactory) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEBUILDER_ASSETS is not set: run make envtest-assets and set it to _output/envtest")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: run make envtest to run the envtest suites")
	}
	if testing.Verbose() {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// go test -count=N runs the suite N times in one process, each
		// with a manager of its own that registers the same controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	factory := etcd.NewFakeFactory()
	opts := cluster.DefaultOptions()
	// Short intervals: the fake answers at once, and the tests wait for
	// the controller's next pass after each change they make to etcd.
	opts.RetryInterval = 100 * time.Millisecond
	opts.HealthInterval = 500 * time.Millisecond
	opts.EtcdTimeout = 2 * time.Second
	if err := (&cluster.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("raftsman-" + cluster.ControllerName),
		Etcd:     factory,
		Options:  opts,
	}).SetupWithManager(mgr); err != nil {
		t.Fatalf("set up the cluster controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// Cleanups run last-in first-out: the manager stops before the API server.
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	// The tests read straight from the API server, not from a cache that
	// may lag behind what they wait for.
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c, factory
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// eventually calls check until it returns nil and fails t with check's last
// error when it still fails after timeout.
func eventually(t *testing.T, what string, check func() error) {
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
