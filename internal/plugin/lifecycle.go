package plugin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/resources"
)

// suspendCommand is suspend (on true) or resume: both set spec.suspend.
func suspendCommand(run runner, suspend bool) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "suspend CLUSTER",
		Short: "Stop every member's Pod and keep the data: set spec.suspend",
		Long: `Set spec.suspend: the operator ends a membership change under way, takes a final
backup when spec.backup is set, then stops every member's Pod. EtcdMembers and volumes
stay, so resume brings back the same members with their data. --wait waits for the
Suspended condition.`,
		Args: exactArgs("CLUSTER"),
	}
	if !suspend {
		cmd.Use = "resume CLUSTER"
		cmd.Short = "Start a suspended cluster's members again: clear spec.suspend"
		cmd.Long = `Clear spec.suspend: the same members start again, with their data, IDs and the
cluster's ID. --wait waits until the cluster is Available.`
	}
	cmd.RunE = run(func(ctx context.Context, e *env, args []string) error {
		return runSuspend(ctx, e, args[0], suspend, wait, timeout)
	})
	cmd.Flags().BoolVar(&wait, "wait", false, "Wait until the operator has done it")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "How long --wait waits")
	return cmd
}

func runSuspend(ctx context.Context, e *env, name string, suspend, wait bool, timeout time.Duration) error {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	if c.Spec.Suspend == suspend {
		fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s already has spec.suspend %v\n", c.Namespace, c.Name, suspend)
	} else {
		// A merge patch of the one field: it needs no lock, and a spec
		// changed meanwhile by someone else is kept.
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Suspend = suspend
		if err := e.c.Patch(ctx, c, patch); err != nil {
			return fmt.Errorf("patch etcdcluster %s: %w", c.Name, err)
		}
		fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s spec.suspend set to %v\n", c.Namespace, c.Name, suspend)
	}
	if !wait {
		return nil
	}
	if suspend {
		return waitCondition(ctx, e, c, etcdv1.ConditionSuspended, timeout)
	}
	return waitCondition(ctx, e, c, etcdv1.ConditionAvailable, timeout)
}

func moveLeaderCommand(run runner) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "move-leader CLUSTER --to MEMBER",
		Short: "Hand raft leadership to another voting member",
		Long: `Hand raft leadership to MEMBER with etcd's MoveLeader call, sent to the current
leader through a port-forward: what "etcdctl move-leader" does. It changes no
membership. It is refused while the operator changes the cluster (Progressing True,
a rolling change, a suspend), as the operator moves the leader itself then. The
operator has no say in who leads otherwise, so it does not move it back.`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runMoveLeader(ctx, e, args[0], to)
		}),
	}
	cmd.Flags().StringVar(&to, "to", "", "The member to lead, by name (required)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func runMoveLeader(ctx context.Context, e *env, name, to string) error {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	if err := settled(c); err != nil {
		return err
	}
	var names []string
	var target *etcdv1.ClusterMemberStatus
	for i, m := range c.Status.Members {
		names = append(names, m.Name)
		if m.Name == to {
			target = &c.Status.Members[i]
		}
	}
	switch {
	case target == nil:
		return fmt.Errorf("%s is not a member of %s; its members are %v", to, c.Name, names)
	case target.Role != etcdv1.RoleVoter:
		return fmt.Errorf("%s is a %s: only a voting member can lead", to, target.Role)
	}
	id, err := etcd.ParseID(target.ID)
	if err != nil {
		return err
	}
	access, err := e.etcd(ctx, c)
	if err != nil {
		return err
	}
	// The target's own answer says who leads now; status may be older.
	st, err := access.Status(ctx, to)
	if err != nil {
		return fmt.Errorf("ask %s who leads: %w", to, err)
	}
	if st.Leader == id {
		fmt.Fprintf(e.streams.Out, "%s already leads %s\n", to, c.Name)
		return nil
	}
	leader := ""
	for _, m := range c.Status.Members {
		if m.ID == etcd.FormatID(st.Leader) {
			leader = m.Name
		}
	}
	if leader == "" {
		return fmt.Errorf("the leader %s is not in status.members of %s yet; try again", etcd.FormatID(st.Leader), c.Name)
	}
	if err := access.MoveLeader(ctx, leader, id); err != nil {
		return fmt.Errorf("move leadership from %s to %s: %w", leader, to, err)
	}
	fmt.Fprintf(e.streams.Out, "leadership of %s moved from %s to %s\n", c.Name, leader, to)
	return nil
}

// settled refuses while the operator changes the cluster: it moves the
// leader itself before updating or removing it.
func settled(c *etcdv1.EtcdCluster) error {
	p := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionProgressing)
	switch {
	case c.Spec.Suspend:
		return fmt.Errorf("etcdcluster %s is suspended", c.Name)
	case c.Status.Rollout != nil:
		return fmt.Errorf("a rolling change of %s is under way (%d of %d members updated): the operator moves the leader itself; try again once it is done",
			c.Name, c.Status.Rollout.Updated, c.Status.Rollout.Total)
	case p == nil || p.ObservedGeneration != c.Generation:
		return fmt.Errorf("the operator has not yet looked at generation %d of %s (Progressing); try again", c.Generation, c.Name)
	case p.Status != "False":
		return fmt.Errorf("the operator is changing %s (Progressing %s, %s: %s); try again once it is done", c.Name, p.Status, p.Reason, p.Message)
	}
	return nil
}

// recoverQuorumCommand asks the operator to recover a cluster that lost its
// quorum from one member, or from its newest complete backup: it sets the
// etcd.raftsman.io/recover-quorum annotation, which the operator acts on
// (and removes when done).
func recoverQuorumCommand(run runner) *cobra.Command {
	var from string
	var latest, acceptLoss bool
	cmd := &cobra.Command{
		Use:   "recover-quorum CLUSTER (--from MEMBER [--accept-loss] | --latest-backup)",
		Short: "Recover a cluster that lost its quorum from one member's data or its newest backup",
		Long: `Annotate the cluster with etcd.raftsman.io/recover-quorum=MEMBER: the operator restarts
that member alone from its own data (etcd's --force-new-cluster), keeps the volumes of the
members left behind, grows the cluster back with learners and removes the annotation. It acts
only while etcd has no quorum. Pick the reachable member with the highest raft index: status
shows them. Writes only the lost members had are gone. The operator refuses a member that is a
learner or behind another reachable member; --accept-loss confirms it (annotation
etcd.raftsman.io/recover-quorum-accept-loss=MEMBER), giving up what only the others hold.

With --latest-backup (annotation value latest-backup), when no member's data is left: every
member goes with its volume kept, and a new etcd cluster starts in the same EtcdCluster from
its newest Complete EtcdBackup. Writes made after that backup are gone.`,
		Args: exactArgs("CLUSTER"),
	}
	cmd.RunE = run(func(ctx context.Context, e *env, args []string) error {
		if latest {
			if from != "" {
				return fmt.Errorf("recover-quorum takes --from MEMBER or --latest-backup, not both")
			}
			from = etcdv1.RecoverFromLatestBackup
		}
		if acceptLoss && from == etcdv1.RecoverFromLatestBackup {
			return fmt.Errorf("--accept-loss goes with --from MEMBER")
		}
		return runRecoverQuorum(ctx, e, args[0], from, acceptLoss)
	})
	cmd.Flags().StringVar(&from, "from", "", "The member to recover from")
	cmd.Flags().BoolVar(&latest, "latest-backup", false, "Restore the cluster's newest Complete EtcdBackup instead")
	cmd.Flags().BoolVar(&acceptLoss, "accept-loss", false, "Recover from the member even if it is a learner or behind another reachable member")
	return cmd
}

func runRecoverQuorum(ctx context.Context, e *env, name, from string, acceptLoss bool) error {
	if from == "" {
		return fmt.Errorf("recover-quorum needs --from MEMBER (the member to restart the cluster from) or --latest-backup")
	}
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	if from == etcdv1.RecoverFromLatestBackup {
		list := &etcdv1.EtcdBackupList{}
		if err := e.c.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
			return fmt.Errorf("list etcdbackups: %w", err)
		}
		if !slices.ContainsFunc(list.Items, func(b etcdv1.EtcdBackup) bool { return resources.Restorable(c, &b) }) {
			return fmt.Errorf("etcdcluster %s/%s has no Complete EtcdBackup to restore", c.Namespace, c.Name)
		}
	} else {
		m := &etcdv1.EtcdMember{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: from}, m); err != nil || m.Spec.ClusterName != c.Name {
			return fmt.Errorf("%s is not a member of etcdcluster %s/%s", from, c.Namespace, c.Name)
		}
	}
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[etcdv1.RecoverQuorumAnnotation] = from
	if acceptLoss {
		c.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation] = from
	}
	if err := e.c.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("annotate etcdcluster %s: %w", c.Name, err)
	}
	fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s annotated %s=%s; watch status.recovery\n", c.Namespace, c.Name, etcdv1.RecoverQuorumAnnotation, from)
	return nil
}
