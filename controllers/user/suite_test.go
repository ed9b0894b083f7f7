package user_test

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/controllers/user"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// The suite runs a real kube-apiserver and a manager with the tls
// controller, which keeps each cluster's CA, client certificate and
// authentication (TLSReady, AuthReady), and the user controller, both with
// a fake etcd. The tests play the cluster controller: they set Available
// by hand, which authentication waits for.

// timeout bounds every wait for the controllers.
const timeout = 20 * time.Second

func startSuite(t *testing.T) (client.Client, *etcd.FakeFactory) {
	t.Helper()
	cfg, scheme := testenv.Start(t)
	factory := etcd.NewFakeFactory()
	c := testenv.StartManager(t, cfg, scheme, func(mgr ctrl.Manager) error {
		if err := (&tls.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("raftsman-" + tls.ControllerName),
			Etcd:      factory,
			Options:   tls.DefaultOptions(),
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&user.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("raftsman-" + user.ControllerName),
			Etcd:      factory,
			Options:   user.DefaultOptions(),
		}).SetupWithManager(mgr)
	})
	return c, factory
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}
