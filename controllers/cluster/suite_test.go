package cluster_test

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/internal/testenv"
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
)

// startSuite starts the API server and a manager with the cluster controller
// and stops both when t ends. Call it once, from TestEnvClusterController
// (see testenv.Start).
func startSuite(t *testing.T) (client.Client, *etcd.FakeFactory, *testenv.Reads) {
	t.Helper()
	cfg, scheme := testenv.Start(t)
	factory := etcd.NewFakeFactory()
	// What both controllers read past the cache, Secrets' data among it.
	reads := &testenv.Reads{}
	opts := cluster.DefaultOptions()
	// Short intervals: the fake answers at once, and the tests wait for
	// the controller's next pass after each change they make to etcd.
	opts.RetryInterval = 100 * time.Millisecond
	opts.WaitInterval, opts.UnhealthyInterval, opts.StuckInterval = 500*time.Millisecond, time.Second, 2500*time.Millisecond
	opts.HealthInterval = 500 * time.Millisecond
	// Every poll at HealthInterval: the tests change the fake etcd, which
	// sends no event, and wait for the next poll to see it.
	opts.CalmHealthInterval = opts.HealthInterval
	opts.EtcdTimeout = 2 * time.Second
	// The members the operator makes run with its --max-learners.
	factory.MaxLearners = int(opts.MaxLearners)
	c := testenv.StartManager(t, cfg, scheme, func(mgr ctrl.Manager) error {
		if err := (&cluster.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: reads.Reader(mgr.GetAPIReader()),
			Recorder:  mgr.GetEventRecorder("raftsman-" + cluster.ControllerName),
			Etcd:      factory,
			Options:   opts,
			// As the operator runs it: etcd looked at beside the workers.
			Observer: &cluster.Observer{Limit: opts.Observations, Wait: opts.ObserveWait},
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		// The real tls controller: the clusters run with the default TLS,
		// and the cluster controller waits for its TLSReady.
		return (&tls.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: reads.Reader(mgr.GetAPIReader()),
			Recorder:  mgr.GetEventRecorder("raftsman-" + tls.ControllerName),
			Etcd:      factory,
			Options:   tls.DefaultOptions(),
		}).SetupWithManager(mgr)
	})
	return c, factory, reads
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	return testenv.NewNamespace(t, c, "cluster-", nil)
}

// eventually waits for check to return nil (see testenv.Eventually).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

// consistently fails t as soon as check fails within a short quiet period
// (see testenv.Consistently).
func consistently(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Consistently(t, 2*time.Second, what, check)
}
