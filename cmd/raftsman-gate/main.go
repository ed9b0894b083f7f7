// Command raftsman-gate starts etcd in a member's Pod once etcd lists the
// member (pkg/gate). It ships in the operator's image beside the operator.
package main

import (
	"os"

	"github.com/raftsman/raftsman/pkg/gate"
)

func main() {
	os.Exit(gate.Main(os.Args[1:]))
}
