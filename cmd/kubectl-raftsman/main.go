// kubectl-raftsman is the kubectl plugin for Raftsman's etcd clusters: put it
// on PATH and run kubectl raftsman status <cluster>.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/raftsman/raftsman/internal/plugin"
)

func main() {
	// The context ends on Ctrl-C, so that temporary files and port-forwards
	// are cleaned up before the plugin exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Main(ctx, os.Args[1:], plugin.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
