package testenv

import (
	"path/filepath"
	"testing"
)

// The suites rely on crdDir and ErrorIfCRDPathMissing only catches a missing
// directory, not one without the CRDs: check that it holds them.
func TestCRDDir(t *testing.T) {
	dir, err := crdDir()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) == 0 {
		t.Fatalf("no CRDs in %s", dir)
	}
}
