package plugin

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestCompletion: cobra's __complete, which kubectl_complete-raftsman
// runs, lists clusters, members, backups and flag values; completion
// writes the scripts.
func TestCompletion(t *testing.T) {
	t.Parallel()
	other := cluster()
	other.Name = "other"
	backups := []client.Object{
		backup("nightly", "sample", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", ""),
		backup("elsewhere", "other", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", ""),
	}
	runVerbCases(t, []verbCase{
		{name: "clusters", args: []string{"__complete", "status", ""}, extra: []client.Object{other}, wantOut: []string{"other\nsample\n:4\n"}},
		{name: "clusters by prefix", args: []string{"__complete", "defrag", "s"}, extra: []client.Object{other}, wantOut: []string{"sample\n:4\n"}, notOut: []string{"other"}},
		{name: "nothing after the cluster", args: []string{"__complete", "members", "sample", ""}, wantOut: []string{":4\n"}, notOut: []string{"sample"}},
		{name: "a file after the cluster", args: []string{"__complete", "snapshot", "sample", ""}, wantOut: []string{":0\n"}},
		{name: "members of --to", args: []string{"__complete", "move-leader", "sample", "--to", ""},
			wantOut: []string{"sample-aaaaa\nsample-bbbbb\nsample-ccccc\n:4\n"}},
		{name: "members of --member", args: []string{"__complete", "etcdctl", "sample", "--member", "sample-b"}, wantOut: []string{"sample-bbbbb\n:4\n"}},
		{name: "backups of the cluster", args: []string{"__complete", "restore", "sample", "--from", ""}, extra: backups,
			wantOut: []string{"nightly\n:4\n"}, notOut: []string{"elsewhere"}},
		{name: "output formats", args: []string{"__complete", "status", "sample", "-o", ""}, wantOut: []string{"json\nyaml\n:4\n"}},
		{name: "alarm's verbs", args: []string{"__complete", "alarm", ""}, wantOut: []string{"disarm\t", "list\t"}},
		{name: "kubectl's script", args: []string{"completion", "kubectl"}, wantOut: []string{"#!/usr/bin/env sh\n", "exec kubectl-raftsman __complete \"$@\"\n"}},
		{name: "bash", args: []string{"completion", "bash"}, wantOut: []string{"bash completion V2 for kubectl-raftsman"}},
		{name: "zsh", args: []string{"completion", "zsh"}, wantOut: []string{"#compdef kubectl-raftsman"}},
		{name: "another shell", args: []string{"completion", "tcsh"}, wantErr: `invalid argument "tcsh"`},
	})
}
