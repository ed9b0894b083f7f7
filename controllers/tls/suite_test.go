package tls_test

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// The suite runs a real kube-apiserver and a manager with the tls
// controller alone, and a fake etcd. The tests play the cluster controller:
// they set the Available condition by hand. cert-manager is not installed,
// so its source must say so.

// timeout bounds every wait for the controller.
const timeout = 20 * time.Second

// startSuite starts the API server and the manager; the reads of the
// controller's clients are counted (a pass begins with a Get of its
// cluster; the APIReader's Gets of Secrets are API reads of Secrets).
func startSuite(t *testing.T) (client.Client, *etcd.FakeFactory, *testenv.Reads) {
	t.Helper()
	cfg, scheme := testenv.Start(t)
	factory := etcd.NewFakeFactory()
	reads := &testenv.Reads{}
	opts := tls.DefaultOptions()
	// User Secrets are read again often, so that tests see fixes quickly.
	opts.UserSecretInterval = 500 * time.Millisecond
	c := testenv.StartManager(t, cfg, scheme, func(mgr ctrl.Manager) error {
		return (&tls.Reconciler{
			Client:    reads.Client(mgr.GetClient()),
			APIReader: reads.Reader(mgr.GetAPIReader()),
			Recorder:  mgr.GetEventRecorder("raftsman-" + tls.ControllerName),
			Etcd:      factory,
			Options:   opts,
		}).SetupWithManager(mgr)
	})
	return c, factory, reads
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}
