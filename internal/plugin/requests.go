package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// The verbs of this file ask the operator to do what it does itself, with
// an annotation it acts on: each new value is one request.

type requestOptions struct {
	yes, wait bool
	timeout   time.Duration
}

func addRequestFlags(cmd *cobra.Command, o *requestOptions, timeout time.Duration) {
	addYes(cmd, &o.yes)
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the operator has done it")
	cmd.Flags().DurationVar(&o.timeout, "timeout", timeout, "How long --wait waits")
}

// request sets the annotation key of c to a new value, the time now, with
// a merge patch of the annotation alone, and returns the value.
func request(ctx context.Context, e *env, c *etcdv1.EtcdCluster, key string) (string, error) {
	value := e.now().UTC().Format(time.RFC3339)
	if c.Annotations[key] == value {
		return "", fmt.Errorf("%s=%s was set this very second: try again", key, value)
	}
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
	if err := e.c.Patch(ctx, c, patch); err != nil {
		return "", fmt.Errorf("annotate etcdcluster %s: %w", c.Name, err)
	}
	return value, nil
}

func defragCommand(run runner) *cobra.Command {
	o := requestOptions{}
	cmd := &cobra.Command{
		Use:   "defrag CLUSTER",
		Short: "Ask the operator to defragment every member now, one at a time",
		Long: `Ask the operator for a defragmentation of every member now, whatever
spec.maintenance.defrag says: the plugin sets the annotation etcd.raftsman.io/defrag to the
time, and the operator runs it as it runs its own (reason Requested), once every member is a
healthy voter and no rollout, scaling or recovery runs: followers first, the leader last after
leadership moved away, each taken out of the client Service while etcd defragments it (it
serves no request meanwhile) and put back after. status.maintenance.defrag shows where it is;
--wait waits for the end and prints what each member gave back. Needs an operator that knows
the annotation (this release or later). Asks for confirmation unless --yes.`,
		Example: `  kubectl raftsman defrag sample --wait`,
		Args:    exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runDefrag(ctx, e, args[0], o)
		}),
	}
	addRequestFlags(cmd, &o, 30*time.Minute)
	return cmd
}

func runDefrag(ctx context.Context, e *env, name string, o requestOptions) error {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	if c.Spec.Suspend {
		return fmt.Errorf("etcdcluster %s is suspended: no member runs to defragment", c.Name)
	}
	if m := c.Status.Maintenance; m != nil && m.Defrag != nil && m.Defrag.Reason == etcdv1.DefragForRequest {
		fmt.Fprintf(e.streams.Out, "a defragmentation of %s asked for at %s is under way: %s\n", c.Name, m.LastRequest, defragState(m.Defrag))
		if !o.wait {
			return nil
		}
		return waitDefrag(ctx, e, c, m.LastRequest, lastDefrags(c), o.timeout)
	}
	before := lastDefrags(c)
	what := fmt.Sprintf("Defragment every member of %s/%s, one at a time: each leaves the client Service while etcd\n"+
		"defragments it (it serves no request meanwhile), the leader last after leadership moved away.", c.Namespace, c.Name)
	if err := e.confirm(what, o.yes); err != nil {
		return err
	}
	value, err := request(ctx, e, c, etcdv1.DefragAnnotation)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s annotated %s=%s: the operator defragments the members one at a time once every member is a healthy voter; see status.maintenance\n",
		c.Namespace, c.Name, etcdv1.DefragAnnotation, value)
	if !o.wait {
		return nil
	}
	return waitDefrag(ctx, e, c, value, before, o.timeout)
}

// lastDefrags are the times of the members' last defragmentations.
func lastDefrags(c *etcdv1.EtcdCluster) map[string]metav1.Time {
	out := map[string]metav1.Time{}
	if m := c.Status.Maintenance; m != nil {
		for _, r := range m.Members {
			out[r.Name] = r.Time
		}
	}
	return out
}

// waitDefrag waits until the operator started the run asked for with
// value and ended it, then prints each member's defragmentation: those
// recorded since before, the records of when the request was made.
func waitDefrag(ctx context.Context, e *env, c *etcdv1.EtcdCluster, value string, before map[string]metav1.Time, timeout time.Duration) error {
	last := ""
	err := e.waitUntil(ctx, timeout, "defragmentation of "+c.Name, func() (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		m := c.Status.Maintenance
		if m == nil || m.LastRequest != value {
			return false, nil
		}
		if m.Defrag == nil || m.Defrag.Reason != etcdv1.DefragForRequest {
			return true, nil
		}
		if s := defragState(m.Defrag); s != last {
			last = s
			fmt.Fprintln(e.streams.ErrOut, s)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.streams.Out, "defragmentation of %s done\n", c.Name)
	for _, m := range c.Status.Members {
		fmt.Fprintln(e.streams.Out, "  "+defragRecord(c.Status.Maintenance.Members, m.Name, before))
	}
	return nil
}

// defragState says where a run is.
func defragState(run *etcdv1.DefragRun) string {
	s := "starting"
	if run.Member != "" {
		s = strings.ToLower(run.Phase) + " " + run.Member
	}
	if len(run.Pending) > 0 {
		s += "; next " + strings.Join(run.Pending, ", ")
	}
	return s
}

// defragRecord is a member's last defragmentation if it is of a request
// and newer than its record in before. Records are compared, not the
// time of the request with the operator's: the clocks may differ.
func defragRecord(records []etcdv1.MemberDefragStatus, member string, before map[string]metav1.Time) string {
	for _, r := range records {
		if old, ok := before[r.Name]; r.Name != member || r.Reason != etcdv1.DefragForRequest || (ok && r.Time.Equal(&old)) {
			continue
		}
		return fmt.Sprintf("%s: %s -> %s (%s given back) in %s", member, etcd.FormatBytes(r.SizeBefore), etcd.FormatBytes(r.SizeAfter),
			etcd.FormatBytes(r.ReclaimedBytes), (time.Duration(r.DurationMillis) * time.Millisecond).String())
	}
	return member + ": not defragmented in this run (see the cluster's DefragFailed events)"
}

func rotateCACommand(run runner) *cobra.Command {
	o := requestOptions{}
	cmd := &cobra.Command{
		Use:   "rotate-ca CLUSTER",
		Short: "Ask the operator to replace the cluster's CA now",
		Long: `Ask the operator for a new CA now: the plugin sets the annotation etcd.raftsman.io/rotate-ca
to the time, and the tls controller does what it does when the CA is due. The new CA is trusted
next to the old one first (status.tls.caRotation), the members restart one at a time to load
both (a rolling update, the leader last), then the new CA signs and the certificates are issued
again. The old CA stays trusted until it expires: clients that copied ca.crt should take the new
one before then. --wait waits until the new CA signs. Asks for confirmation unless --yes.`,
		Example: `  kubectl raftsman rotate-ca sample --wait`,
		Args:    exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runRotateCA(ctx, e, args[0], o)
		}),
	}
	addRequestFlags(cmd, &o, 30*time.Minute)
	return cmd
}

func runRotateCA(ctx context.Context, e *env, name string, o requestOptions) error {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	if c.Spec.TLS.Disabled {
		return fmt.Errorf("etcdcluster %s runs without TLS (spec.tls.disabled): it has no CA", c.Name)
	}
	if t := c.Status.TLS; t != nil && t.CARotation != "" {
		fmt.Fprintf(e.streams.Out, "a CA rotation of %s is under way: %s\n", c.Name, t.CARotation)
		if !o.wait {
			return nil
		}
		return waitRotation(ctx, e, c, t.CARotationRequest, o.timeout)
	}
	what := fmt.Sprintf("Replace the CA of %s/%s: every member restarts once, one at a time, then the new CA signs.\n"+
		"Clients that copied ca.crt must take the new one before the old CA expires.", c.Namespace, c.Name)
	if err := e.confirm(what, o.yes); err != nil {
		return err
	}
	value, err := request(ctx, e, c, etcdv1.RotateCAAnnotation)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s annotated %s=%s: the operator rotates the CA; see status.tls.caRotation\n",
		c.Namespace, c.Name, etcdv1.RotateCAAnnotation, value)
	if !o.wait {
		return nil
	}
	return waitRotation(ctx, e, c, value, o.timeout)
}

// waitRotation waits until the rotation asked for with value is done: the
// new CA signs and TLSReady is True. An empty value is the rotation under
// way, whatever started it.
func waitRotation(ctx context.Context, e *env, c *etcdv1.EtcdCluster, value string, timeout time.Duration) error {
	last := ""
	err := e.waitUntil(ctx, timeout, "CA rotation of "+c.Name, func() (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		t := c.Status.TLS
		if t == nil || (value != "" && t.CARotationRequest != value) {
			return false, nil
		}
		if t.CARotation != "" {
			if t.CARotation != last {
				last = t.CARotation
				fmt.Fprintln(e.streams.ErrOut, last)
			}
			return false, nil
		}
		ready := kube.Find(c.Status.Conditions, etcdv1.ConditionTLSReady, c.Generation)
		return ready != nil && ready.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.streams.Out, "CA of %s rotated: the new CA signs\n", c.Name)
	return nil
}
