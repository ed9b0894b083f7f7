//go:build !linux

package objstore

import "os/exec"

// setParentDeathSignal is a no-op where the kernel has no parent death signal.
func setParentDeathSignal(*exec.Cmd) {}
