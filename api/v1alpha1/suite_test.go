package v1alpha1_test

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/internal/testenv"
)

// startEnv starts the API server with the CRDs installed; there is no
// manager: the suite checks what the API server itself refuses. Call it once,
// from TestEnvValidation (see testenv.Start).
func startEnv(t *testing.T) client.Client {
	t.Helper()
	cfg, scheme := testenv.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	return testenv.NewNamespace(t, c, "validation-", nil)
}
