package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

type etcdctlOptions struct {
	binary string
	member string
}

func etcdctlCommand(run runner) *cobra.Command {
	o := etcdctlOptions{}
	cmd := &cobra.Command{
		Use:   "etcdctl CLUSTER -- ARGS...",
		Short: "Run etcdctl against a cluster, with its client certificate wired in",
		Long: `Run your etcdctl against a cluster. The plugin opens a port-forward to each Ready
member Pod (or to --member), writes the client certificate of the Secret named in
status.tls to a private temporary folder, which it removes afterwards, and runs

  etcdctl --endpoints=https://127.0.0.1:<port>,... --cacert=... --cert=... --key=... ARGS...

etcdctl's exit code is the plugin's. Commands that dial the members' own URLs
(--cluster) cannot reach them from outside the Kubernetes cluster: list the members
with "member list" and talk to the forwarded endpoints instead.`,
		Example: `  kubectl raftsman etcdctl sample -- endpoint status -w table
  kubectl raftsman etcdctl sample -- put greeting hello
  kubectl raftsman etcdctl sample --member sample-x7k2p -- get greeting --consistency=s`,
		Args: func(cmd *cobra.Command, args []string) error {
			_, _, err := splitEtcdctlArgs(args, cmd.ArgsLenAtDash())
			return err
		},
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			cluster, rest, _ := splitEtcdctlArgs(args, -1)
			return runEtcdctl(ctx, e, o, cluster, rest)
		}),
	}
	cmd.Flags().StringVar(&o.binary, "etcdctl", "etcdctl", "The etcdctl to run: a path, or a name looked up in PATH")
	cmd.Flags().StringVar(&o.member, "member", "", "Reach only this member's Pod (by default every Ready member)")
	return cmd
}

// splitEtcdctlArgs separates the cluster from etcdctl's arguments; dash is
// where "--" was (cobra's ArgsLenAtDash), -1 when absent.
func splitEtcdctlArgs(args []string, dash int) (string, []string, error) {
	switch {
	case len(args) == 0 || dash == 0:
		return "", nil, errors.New("etcdctl needs a cluster: kubectl raftsman etcdctl CLUSTER -- ARGS...")
	case dash > 1:
		return "", nil, fmt.Errorf("etcdctl takes one cluster before --, got %v: put etcdctl's arguments after --", args[:dash])
	case len(args) == 1:
		return "", nil, errors.New("say what etcdctl should do after --, like: kubectl raftsman etcdctl " + args[0] + " -- endpoint status -w table")
	}
	return args[0], args[1:], nil
}

func runEtcdctl(ctx context.Context, e *env, o etcdctlOptions, name string, args []string) error {
	bin, err := exec.LookPath(o.binary)
	if err != nil {
		return fmt.Errorf("%w: install etcdctl (it comes with every etcd release) or give its path with --etcdctl", err)
	}
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	pods, err := targetPods(ctx, e.c, c, o.member)
	if err != nil {
		return err
	}
	var dir string
	if !c.Spec.TLS.Disabled {
		if dir, err = writeClientCert(ctx, e.c, c); err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
	}
	var endpoints []string
	for _, pod := range pods {
		addr, stop, err := e.forward(ctx, pod, etcdv1.ClientPort)
		if err != nil {
			return err
		}
		defer stop()
		endpoints = append(endpoints, addr)
	}
	cmd := exec.CommandContext(ctx, bin, etcdctlArgv(endpoints, dir, args)...)
	cmd.Env = etcdctlEnv(os.Environ())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.streams.In, e.streams.Out, e.streams.ErrOut
	// On Ctrl-C the terminal signals etcdctl itself; when the context ends
	// otherwise, etcdctl gets the same chance to stop cleanly.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exitError{code: exit.ExitCode()}
	}
	return err
}

// targetPods are the Pods etcdctl reaches: member's, or every Ready
// member's (as the client Service does: a learner is never Ready).
func targetPods(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster, member string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, kube.OfCluster(cl.Namespace, cl.Name)...); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var names []string
	for i := range pods.Items {
		p := &pods.Items[i]
		m := p.Labels[etcdv1.MemberLabel]
		switch {
		case m == "":
			continue
		case member != "" && m == member:
			if s := podState(p); s != podReady && s != podRunning {
				return nil, fmt.Errorf("the Pod of member %s is %s", member, s)
			}
			return []string{p.Name}, nil
		case member == "" && podState(p) == podReady:
			names = append(names, p.Name)
		}
	}
	if member != "" {
		return nil, fmt.Errorf("member %s of %s has no Pod (see kubectl raftsman status %s)", member, cl.Name, cl.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no member Pod of %s is Ready (see kubectl raftsman status %s)", cl.Name, cl.Name)
	}
	slices.Sort(names)
	return names, nil
}

// writeClientCert writes the cluster's client certificate, key and CA to a
// new folder only the user can read, and checks that etcdctl will accept
// the members' serving certificate at 127.0.0.1.
func writeClientCert(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster) (string, error) {
	creds, err := clientCredentials(ctx, c, cl)
	if err != nil {
		return "", err
	}
	if err := servingCoversLoopback(ctx, c, cl); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "kubectl-raftsman-")
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{pki.CertKey: creds.CertPEM, pki.KeyKey: creds.KeyPEM, pki.CAKey: creds.CAPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// servingCoversLoopback: etcdctl checks the serving certificate for the
// endpoint's host and cannot be told another name. The operator's and
// cert-manager's certificates cover 127.0.0.1; yours from a secretRef need
// not. A Secret the user may not read is left for etcdctl to judge.
func servingCoversLoopback(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster) error {
	name := cl.Status.TLS.ServerSecretName
	sec := &corev1.Secret{}
	if name == "" || c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, sec) != nil {
		return nil
	}
	cert, err := firstCert(sec.Data[pki.CertKey])
	if err != nil || cert.VerifyHostname("127.0.0.1") == nil {
		return nil
	}
	return fmt.Errorf("the serving certificate in Secret %s does not cover 127.0.0.1, where etcdctl reaches the members through the port-forward: "+
		"add the IP 127.0.0.1 and the name localhost to it (the operator's and cert-manager's certificates have them)", name)
}

// etcdctlArgv is etcdctl's command line: the forwarded endpoints and, with
// TLS, the files in dir, then the user's arguments.
func etcdctlArgv(endpoints []string, dir string, args []string) []string {
	scheme := "https://"
	if dir == "" {
		scheme = "http://"
	}
	urls := make([]string, len(endpoints))
	for i, ep := range endpoints {
		urls[i] = scheme + ep
	}
	argv := []string{"--endpoints=" + strings.Join(urls, ",")}
	if dir != "" {
		argv = append(argv,
			"--cacert="+filepath.Join(dir, pki.CAKey),
			"--cert="+filepath.Join(dir, pki.CertKey),
			"--key="+filepath.Join(dir, pki.KeyKey))
	}
	return append(argv, args...)
}

// etcdctlEnv drops the variables that name other endpoints or credentials:
// etcdctl refuses a variable and the flag of the same setting together.
func etcdctlEnv(environ []string) []string {
	drop := []string{"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY",
		"ETCDCTL_DISCOVERY_SRV", "ETCDCTL_DISCOVERY_SRV_NAME", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY", "ETCDCTL_INSECURE_TRANSPORT"}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return out
}
