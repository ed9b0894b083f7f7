package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

func listCommand(run runner) *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "list [-A]",
		Short: "The clusters of the namespace, or of every namespace with -A: a line each",
		Long: `A line per EtcdCluster: voters ready of the desired members, the version the members run,
the Available and Progressing conditions (with their reason when not the usual one), etcd's
alarms as the operator last saw them (status.alarms), and age. Everything comes from the
EtcdClusters alone: etcd is not asked, so it is quick on a large fleet.`,
		Example: `  kubectl raftsman list -A
  kubectl raftsman list -A -o json | jq -r '.[] | select(.alarms != null) | .namespace + "/" + .name'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			return exactArgs()(cmd, args)
		},
		RunE: run(func(ctx context.Context, e *env, _ []string) error {
			return runList(ctx, e, all, output)
		}),
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Every namespace")
	addOutput(cmd, &output)
	return cmd
}

// fleetRow is one cluster of list: its fields are kept from release to
// release in list -o json|yaml.
type fleetRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ReadyVoters of Replicas (spec.replicas).
	ReadyVoters int32  `json:"readyVoters"`
	Replicas    int32  `json:"replicas"`
	Version     string `json:"version,omitempty"`
	// Available and Progressing are True, False or Unknown (no condition
	// of the current generation), with their reasons.
	Available         string    `json:"available"`
	AvailableReason   string    `json:"availableReason,omitempty"`
	Progressing       string    `json:"progressing"`
	ProgressingReason string    `json:"progressingReason,omitempty"`
	Suspended         bool      `json:"suspended"`
	Alarms            []string  `json:"alarms,omitempty"`
	Created           time.Time `json:"created"`
	// Undecodable says why the EtcdCluster's spec or status cannot be
	// decoded; the row then holds its name alone.
	Undecodable string `json:"undecodable,omitempty"`
}

func runList(ctx context.Context, e *env, all bool, output string) error {
	list := &etcdv1.EtcdClusterList{}
	var opts []client.ListOption
	if !all {
		opts = append(opts, client.InNamespace(e.namespace))
	}
	if err := e.c.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("list etcdclusters: %w", err)
	}
	rows := make([]fleetRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, fleetRowOf(&list.Items[i]))
	}
	slices.SortFunc(rows, func(a, b fleetRow) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	if output != "" {
		return writeStructured(e.streams.Out, output, rows)
	}
	if len(rows) == 0 {
		where := "namespace " + e.namespace
		if all {
			where = "any namespace"
		}
		fmt.Fprintf(e.streams.Out, "No EtcdCluster in %s.\n", where)
		return nil
	}
	renderFleet(e.streams.Out, rows, all, e.now())
	return nil
}

func fleetRowOf(c *etcdv1.EtcdCluster) fleetRow {
	if why := etcdv1.Undecodable(c); why != "" {
		return fleetRow{Namespace: c.Namespace, Name: c.Name, Available: string(metav1.ConditionUnknown),
			Progressing: string(metav1.ConditionUnknown), Created: c.CreationTimestamp.UTC(), Undecodable: why}
	}
	r := fleetRow{Namespace: c.Namespace, Name: c.Name, ReadyVoters: c.Status.ReadyReplicas, Replicas: resources.Replicas(c),
		Version: c.Status.Version, Suspended: c.Spec.Suspend, Created: c.CreationTimestamp.UTC()}
	r.Available, r.AvailableReason = conditionState(c, etcdv1.ConditionAvailable)
	r.Progressing, r.ProgressingReason = conditionState(c, etcdv1.ConditionProgressing)
	for _, a := range c.Status.Alarms {
		who := a.Member
		if who == "" {
			who = a.MemberID
		}
		r.Alarms = append(r.Alarms, a.Type+" on "+who)
	}
	return r
}

// conditionState is a condition's status and reason for the cluster's
// generation; Unknown when the operator has not said for it.
func conditionState(c *etcdv1.EtcdCluster, typ string) (string, string) {
	cond := kube.Find(c.Status.Conditions, typ, c.Generation)
	if cond == nil {
		return string(metav1.ConditionUnknown), ""
	}
	return string(cond.Status), cond.Reason
}

// renderFleet prints a line per cluster; NAMESPACE only across namespaces.
func renderFleet(out io.Writer, rows []fleetRow, all bool, now time.Time) {
	w := newTable(out)
	head := "NAME\tREADY\tVERSION\tAVAILABLE\tPROGRESSING\tALARMS\tAGE"
	if all {
		head = "NAMESPACE\t" + head
	}
	fmt.Fprintln(w, head)
	var notes []string
	for _, r := range rows {
		if r.Undecodable != "" {
			notes = append(notes, fmt.Sprintf("%s/%s cannot be decoded: %s", r.Namespace, r.Name, r.Undecodable))
		}
		progressing := r.Progressing
		if r.Progressing != string(metav1.ConditionFalse) && r.ProgressingReason != "" {
			progressing += " (" + r.ProgressingReason + ")"
		}
		available := r.Available
		if r.Available != string(metav1.ConditionTrue) && r.AvailableReason != "" {
			available += " (" + r.AvailableReason + ")"
		}
		alarms := "none"
		if len(r.Alarms) > 0 {
			alarms = strings.Join(r.Alarms, ", ")
		}
		ready := fmt.Sprintf("%d/%d", r.ReadyVoters, r.Replicas)
		if r.Undecodable != "" {
			ready = "-"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", r.Name, ready, orDash(r.Version),
			available, progressing, alarms, duration.HumanDuration(now.Sub(r.Created)))
		if all {
			line = r.Namespace + "\t" + line
		}
		fmt.Fprintln(w, line)
	}
	_ = w.Flush()
	for _, n := range notes {
		fmt.Fprintln(out, "  "+n)
	}
}
