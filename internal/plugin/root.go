// Package plugin is kubectl-raftsman, the kubectl plugin for Raftsman's etcd
// clusters. Its verbs are thin: they read and write the operator's objects
// (EtcdCluster, EtcdBackup) through the Kubernetes API, and read etcd's own
// status through a port-forward to a member Pod with the client certificate
// the operator keeps in the Secret named in status.tls. What the operator
// does itself (defragmentation, CA rotation, recovery) a verb asks it for
// through the API, never does beside it. The only changes a verb makes to
// etcd directly are those the operator tolerates: a leader move while it
// changes nothing, a compaction, disarming a NOSPACE alarm. No verb changes
// etcd's membership: that stays the operator's alone.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Streams are the plugin's standard input, output and error.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// env is what every verb works with: a client of the Kubernetes API, the
// namespace the user chose, and the ways to reach etcd.
type env struct {
	c         client.Client
	namespace string
	streams   Streams
	now       func() time.Time
	// etcd reaches the members of a cluster; see forward.go.
	etcd func(ctx context.Context, c *etcdv1.EtcdCluster) (etcdAccess, error)
	// forward opens a port-forward to a Pod of the namespace (etcdctl).
	forward forwardFunc
	// pollInterval is how often --wait reads the object it waits for again.
	pollInterval time.Duration
	// interactive: the standard input is a terminal, on which a verb that
	// destroys or disrupts may ask for confirmation.
	interactive bool
	// logs reads a container's log (diagnostics).
	logs logsFunc
}

// logsFunc reads the log of a container of a Pod.
type logsFunc func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) ([]byte, error)

// exitError ends the plugin with a code and no message of its own: etcdctl
// already said what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the plugin with args (without the program name) and returns its
// exit code.
func Main(ctx context.Context, args []string, s Streams) int {
	cmd := NewCommand(s)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	}
	fmt.Fprintln(s.ErrOut, "error:", err)
	return 1
}

// NewCommand is the plugin's root command, connected to the cluster the
// kubeconfig flags select.
func NewCommand(s Streams) *cobra.Command {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	root := newRoot(s, func() (*env, error) { return connect(config, s) })
	root.PersistentFlags().StringVar(&rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file")
	clientcmd.BindOverrideFlags(overrides, root.PersistentFlags(), clientcmd.RecommendedConfigOverrideFlags(""))
	return root
}

// newRoot builds the command tree; connect is called once a verb runs.
func newRoot(s Streams, connect func() (*env, error)) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-raftsman",
		Short: "Operate Raftsman etcd clusters",
		Long: `Operate Raftsman etcd clusters. Verbs read and edit the operator's objects (EtcdCluster,
EtcdBackup) and ask etcd through port-forwards to the member Pods. What the operator does itself
(defragmentation, CA rotation, recovery) is asked of it, never done beside it; membership changes
stay with the operator. Verbs that destroy or disrupt ask for confirmation unless --yes.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs kubectl-raftsman as "kubectl raftsman": help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl raftsman"},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	// completion is the plugin's own: it also writes kubectl's script.
	root.CompletionOptions.DisableDefaultCmd = true
	// Each verb runs on the env; connecting only then keeps --help and
	// argument errors free of any cluster.
	run := func(fn func(context.Context, *env, []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			e, err := connect()
			if err != nil {
				return err
			}
			return fn(cmd.Context(), e, args)
		}
	}
	root.AddCommand(
		statusCommand(run),
		etcdctlCommand(run),
		backupCommand(run),
		restoreCommand(run),
		suspendCommand(run, true),
		suspendCommand(run, false),
		moveLeaderCommand(run),
		recoverQuorumCommand(run),
		listCommand(run),
		membersCommand(run),
		snapshotCommand(run),
		alarmCommand(run),
		compactCommand(run),
		defragCommand(run),
		rotateCACommand(run),
		diagnosticsCommand(run),
		versionCommand(s, connect),
		completionCommand(root),
	)
	addCompletions(root, connect)
	return root
}

type runner func(fn func(context.Context, *env, []string) error) func(*cobra.Command, []string) error

// connect builds the env from the kubeconfig.
func connect(config clientcmd.ClientConfig, s Streams) (*env, error) {
	rc, err := config.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := config.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	fwd := &forwarder{rest: rc, cs: cs, namespace: ns}
	logs := func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
		return cs.CoreV1().Pods(namespace).GetLogs(pod, opts).DoRaw(ctx)
	}
	return &env{
		c:         c,
		namespace: ns,
		streams:   s,
		now:       time.Now,
		etcd: func(ctx context.Context, cl *etcdv1.EtcdCluster) (etcdAccess, error) {
			return newPodEtcd(ctx, c, fwd.Forward, cl)
		},
		forward:      fwd.Forward,
		pollInterval: 2 * time.Second,
		interactive:  isTerminal(s.In),
		logs:         logs,
	}, nil
}

// getCluster reads the EtcdCluster name of the env's namespace. One whose
// spec or status cannot be decoded (etcdv1.UndecodableAnnotation) comes
// with its metadata alone: no verb acts on it.
func (e *env) getCluster(ctx context.Context, name string) (*etcdv1.EtcdCluster, error) {
	c, err := e.readCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	if why := etcdv1.Undecodable(c); why != "" {
		return nil, fmt.Errorf("etcdcluster %s/%s cannot be decoded (%s): correct or delete it; kubectl raftsman diagnostics %s collects what there is",
			c.Namespace, c.Name, why, c.Name)
	}
	return c, nil
}

// readCluster reads the EtcdCluster name, decodable or not.
func (e *env) readCluster(ctx context.Context, name string) (*etcdv1.EtcdCluster, error) {
	c := &etcdv1.EtcdCluster{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: name}, c); err != nil {
		return nil, fmt.Errorf("etcdcluster %s/%s: %w", e.namespace, name, err)
	}
	return c, nil
}

// waitUntil calls done every pollInterval until it says true, fails, or
// timeout passes. --wait polls one object rather than watching: a watch
// would need a list and a resume after the API server drops it, for a
// command that waits a few minutes at most.
func (e *env) waitUntil(ctx context.Context, timeout time.Duration, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not done after %v", what, timeout)
		case <-time.After(e.pollInterval):
		}
	}
}

// exactArgs is cobra.ExactArgs with a message that names what is missing.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return fmt.Errorf("%s takes %d argument(s): %v; got %d (see %s --help)", cmd.Name(), len(names), names, len(args), cmd.CommandPath())
		}
		return nil
	}
}
