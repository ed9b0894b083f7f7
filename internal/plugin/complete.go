package plugin

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// kubectlCompleteScript is kubectl_complete-raftsman: kubectl runs an
// executable of that name, found on PATH, to complete the arguments of
// "kubectl raftsman", with those arguments; cobra's __complete answers in
// the form kubectl expects.
const kubectlCompleteScript = `#!/usr/bin/env sh
# kubectl runs this to complete "kubectl raftsman ...": the plugin answers.
exec kubectl-raftsman __complete "$@"
`

var completionShells = []string{"bash", "zsh", "fish", "powershell", "kubectl"}

func completionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion (kubectl | bash | zsh | fish | powershell)",
		Short: "Shell completion: kubectl's script for kubectl raftsman, or a shell's for kubectl-raftsman",
		Long: `kubectl completes a plugin's arguments by running the executable kubectl_complete-raftsman,
which it looks for on PATH. "completion kubectl" prints it: put it in a folder on PATH and make it
executable. With kubectl's own completion set up (kubectl completion --help), kubectl raftsman
<TAB> then completes verbs, flags, cluster names, members and backups. make build writes it next
to the plugin.

bash, zsh, fish and powershell print that shell's completion script for kubectl-raftsman run by
its own name, as cobra writes it.`,
		Example: `  kubectl raftsman completion kubectl > ~/.local/bin/kubectl_complete-raftsman
  chmod +x ~/.local/bin/kubectl_complete-raftsman
  source <(kubectl-raftsman completion bash)`,
		Args:      cobra.MatchAll(exactArgs("SHELL"), cobra.OnlyValidArgs),
		ValidArgs: completionShells,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			_, err := io.WriteString(out, kubectlCompleteScript)
			return err
		},
	}
}

// lister lists the names a flag of a verb on cluster takes.
type lister func(ctx context.Context, e *env, cluster string) ([]string, error)

// flagCompletions are the flags, per verb, that name something of the
// cluster in the verb's first argument.
var flagCompletions = map[string]map[string]lister{
	"etcdctl":        {"member": memberNames},
	"snapshot":       {"member": memberNames},
	"move-leader":    {"to": memberNames},
	"recover-quorum": {"from": memberNames},
	"restore":        {"from": backupNames},
}

// addCompletions completes the cluster of every verb that takes one, and
// the flags of flagCompletions.
func addCompletions(cmd *cobra.Command, connect func() (*env, error)) {
	for _, c := range cmd.Commands() {
		addCompletions(c, connect)
	}
	if strings.Contains(cmd.Use, "CLUSTER") && cmd.ValidArgsFunction == nil {
		file := strings.Contains(cmd.Use, "CLUSTER FILE")
		cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return complete(c, connect, "", toComplete, clusterNames)
			case file && len(args) == 1:
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
	for flag, list := range flagCompletions[cmd.Name()] {
		_ = cmd.RegisterFlagCompletionFunc(flag, func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return complete(c, connect, args[0], toComplete, list)
		})
	}
}

// complete lists names for completion; a cluster it cannot reach
// completes nothing rather than failing the shell.
func complete(cmd *cobra.Command, connect func() (*env, error), cluster, toComplete string, list lister) ([]string, cobra.ShellCompDirective) {
	e, err := connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	names, err := list(ctx, e, cluster)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, toComplete) })
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

func clusterNames(ctx context.Context, e *env, _ string) ([]string, error) {
	list := &etcdv1.EtcdClusterList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	return names, nil
}

func memberNames(ctx context.Context, e *env, cluster string) ([]string, error) {
	list := &etcdv1.EtcdMemberList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.namespace), client.MatchingLabels{etcdv1.ClusterLabel: cluster}); err != nil {
		return nil, err
	}
	var names []string
	for _, m := range list.Items {
		names = append(names, m.Name)
	}
	return names, nil
}

func backupNames(ctx context.Context, e *env, cluster string) ([]string, error) {
	list := &etcdv1.EtcdBackupList{}
	if err := e.c.List(ctx, list, client.InNamespace(e.namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, b := range list.Items {
		if b.Spec.ClusterName == cluster {
			names = append(names, b.Name)
		}
	}
	return names, nil
}
