//go:build !failpoints

package failpoint

import "testing"

func TestOffDoesNothing(t *testing.T) {
	if Enabled {
		t.Fatal("a normal build has failpoints")
	}
	for _, name := range All {
		Hit(name) // must not panic
	}
}
