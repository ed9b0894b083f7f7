// Package gate is the small binary that starts etcd in a member's Pod once
// etcd may run there (raftsman-gate join, join.go). The check-data init
// container copies it next to etcd, into an emptyDir of the Pod that etcd's
// image runs it from: it uses the standard library only, so that it is a
// few megabytes to copy and to keep on the node for each member, not the
// operator's whole binary.
//
//	raftsman-gate join --name N --peer-url U --data-dir D --peers P,... -- etcd ARGS...
//
// The operator's binary runs it too, as "raftsman agent join", and as
// raftsman-gate when an image without the small binary had it copied under
// that name.
package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Name is the small binary's file name, in the operator's image next to the
// operator's binary, and in the Pods that run it.
const Name = "raftsman-gate"

// Main runs one gate command and returns the process exit code. A failure
// is also written as the container's termination message, in the shape of
// the agent's results ({"error": ..., "reason": "Failed"}).
func Main(args []string) int {
	if len(args) == 0 || args[0] != "join" {
		fmt.Fprintln(os.Stderr, "usage: raftsman-gate join [flags] -- etcd ARGS...")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := Join(ctx, args[1:])
	if err == nil {
		return 0 // not reached once etcd is exec'd
	}
	fmt.Fprintf(os.Stderr, "gate join: %v\n", err)
	file := os.Getenv("RAFTSMAN_RESULT_FILE")
	if file == "" {
		file = "/dev/termination-log"
	}
	if b, jerr := json.Marshal(struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}{err.Error(), "Failed"}); jerr == nil {
		_ = os.WriteFile(file, b, 0o644)
	}
	return 1
}
