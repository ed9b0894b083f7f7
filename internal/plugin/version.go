package plugin

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// version is the plugin's version when the build sets it, as release
// builds do: -ldflags "-X github.com/raftsman/raftsman/internal/plugin.version=v0.3.0".
// Otherwise the version and commit Go records in the binary are used.
var version string

// defaultOperatorNamespace is where the installs put the operator.
const defaultOperatorNamespace = "raftsman-system"

// operatorLabels select the operator's Deployment and Pods (not the etcd
// members' or the agents': theirs are etcd and raftsman-agent).
var operatorLabels = client.MatchingLabels{etcdv1.NameLabel: "raftsman"}

func versionCommand(s Streams, connect func() (*env, error)) *cobra.Command {
	var clientOnly bool
	var operatorNS string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The plugin's version, and the operator's when it can be found",
		Long: `The plugin's version (with the commit it was built from), then the operator's: its
Deployments labelled app.kubernetes.io/name=raftsman, looked for in every namespace when you may
list Deployments there, else in --operator-namespace, with their image and the label
app.kubernetes.io/version that the Helm chart sets. When the operator cannot be found (no
permission, another name) the plugin says so and still succeeds.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(s.Out, "kubectl-raftsman "+pluginVersion())
			if clientOnly {
				return nil
			}
			e, err := connect()
			if err != nil {
				fmt.Fprintf(s.Out, "operator: unknown (%v)\n", err)
				return nil
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			for _, l := range operatorVersions(ctx, e, operatorNS) {
				fmt.Fprintln(s.Out, l)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "The plugin's version only: do not look for the operator")
	cmd.Flags().StringVar(&operatorNS, "operator-namespace", defaultOperatorNamespace, "Where to look for the operator when Deployments of every namespace may not be listed")
	return cmd
}

// pluginVersion is the version set at build time, or the module version
// Go recorded, with the commit, whether the tree had changes, and Go's.
func pluginVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return orDevel(version)
	}
	v := version
	if v == "" {
		v = bi.Main.Version
	}
	var details []string
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		details = append(details, "commit "+rev[:min(12, len(rev))])
	}
	if settings["vcs.modified"] == "true" {
		details = append(details, "with changes")
	}
	if t := settings["vcs.time"]; t != "" {
		details = append(details, t)
	}
	details = append(details, bi.GoVersion)
	return orDevel(v) + " (" + strings.Join(details, ", ") + ")"
}

func orDevel(v string) string {
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}

// listOperator lists the operator's objects into list: in every namespace
// when allowed, else in ns. It says where it looked.
func listOperator(ctx context.Context, c client.Reader, list client.ObjectList, ns string) (string, error) {
	err := c.List(ctx, list, operatorLabels)
	if err == nil {
		return "any namespace", nil
	}
	if !apierrors.IsForbidden(err) {
		return "", err
	}
	if err := c.List(ctx, list, operatorLabels, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("not allowed in every namespace; in namespace %s: %w", ns, err)
	}
	return "namespace " + ns, nil
}

// operatorVersions are a line per Deployment of the operator, or one line
// saying why none is known.
func operatorVersions(ctx context.Context, e *env, ns string) []string {
	list := &appsv1.DeploymentList{}
	where, err := listOperator(ctx, e.c, list, ns)
	if err != nil {
		return []string{fmt.Sprintf("operator: unknown (list deployments: %v)", err)}
	}
	if len(list.Items) == 0 {
		return []string{fmt.Sprintf("operator: not found (no Deployment labelled %s=raftsman in %s)", etcdv1.NameLabel, where)}
	}
	var lines []string
	for _, d := range list.Items {
		var images []string
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		l := fmt.Sprintf("operator: %s/%s, image %s", d.Namespace, d.Name, strings.Join(images, ", "))
		if v := d.Labels["app.kubernetes.io/version"]; v != "" {
			l += ", version " + v
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		lines = append(lines, l+fmt.Sprintf(", %d of %d ready", d.Status.ReadyReplicas, replicas))
	}
	return lines
}
