package objstore

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the test server die with the test binary.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
