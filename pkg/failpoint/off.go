//go:build !failpoints

package failpoint

// Hit does nothing in normal builds.
func Hit(string) {}

// Enabled says whether this build has failpoints.
const Enabled = false
