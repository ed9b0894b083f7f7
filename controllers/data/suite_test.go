package data_test

import (
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/controllers/data"
	"github.com/raftsman/raftsman/internal/testenv"
)

// The suite runs a real kube-apiserver and etcd and a manager with the data
// controller alone; the tests play the cluster controller (they write the
// cluster's Progressing condition and status.clusterID by hand), the backup
// controller (they mark EtcdBackups Complete) and the kubelet (there is
// none: the tests end the agent Pods themselves, with the agent's result as
// termination message). Every test has a namespace of its own and may run
// in parallel.

const (
	// timeout bounds every wait for the controller: far more than it needs,
	// so that a slow machine does not make the suite flaky.
	timeout = 20 * time.Second
	// quiet is how long an absence is watched before it is believed.
	quiet = 2 * time.Second
)

// options are the data controller's settings in the suite.
var options = data.Options{
	AgentImage:       "raftsman:test",
	CheckDeadline:    time.Hour,
	StartingDeadline: 10 * time.Minute,
	Workers:          2,
}

// startSuite starts the API server and a manager with the data controller
// and stops both when t ends. Call it once, from TestEnvDataController (see
// testenv.Start): SetupWithManager registers the controller's metrics
// collector in the process-wide registry.
func startSuite(t *testing.T) client.Client {
	t.Helper()
	cfg, scheme := testenv.Start(t)
	return testenv.StartManager(t, cfg, scheme, func(mgr ctrl.Manager) error {
		return (&data.Reconciler{
			Client:   mgr.GetClient(),
			Recorder: mgr.GetEventRecorder("raftsman-" + data.ControllerName),
			Options:  options,
		}).SetupWithManager(mgr)
	})
}

// newNamespace creates a namespace for one test. Its Pods must meet the
// restricted Pod Security Standard, which the API server's PodSecurity
// admission enforces: an agent Pod that does not is refused.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	return testenv.NewNamespace(t, c, "data-",
		map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
}

// eventually waits for check to return nil (see testenv.Eventually).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

// consistently fails t as soon as check fails within the quiet period (see
// testenv.Consistently).
func consistently(t *testing.T, what string, check func() error) {
	t.Helper()
	testenv.Consistently(t, quiet, what, check)
}
