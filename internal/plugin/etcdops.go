package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// reachable is a cluster as one of its Ready members answers for it.
type reachable struct {
	cluster *etcdv1.EtcdCluster
	access  etcdAccess
	pod     string
	status  memberStatus
}

// reach finds a Ready member of the cluster that answers, the leader last
// (as the operator last saw it): calls that any member serves spare it.
func reach(ctx context.Context, e *env, name string) (*reachable, error) {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	pods, err := targetPods(ctx, e.c, c, "")
	if err != nil {
		return nil, err
	}
	access, err := e.etcd(ctx, c)
	if err != nil {
		return nil, err
	}
	first := firstFollower(c, pods)
	ordered := append([]string{first}, pods...)
	var errs []string
	for i, pod := range ordered {
		if i > 0 && pod == first {
			continue
		}
		st, err := access.Status(ctx, pod)
		if err != nil {
			errs = append(errs, pod+": "+err.Error())
			continue
		}
		return &reachable{cluster: c, access: access, pod: pod, status: st}, nil
	}
	return nil, fmt.Errorf("no member of %s answered: %s", c.Name, strings.Join(errs, "; "))
}

// memberName names an etcd member ID by the cluster's status.members.
func (r *reachable) memberName(id uint64) string {
	for _, m := range r.cluster.Status.Members {
		if m.ID == etcd.FormatID(id) {
			return m.Name
		}
	}
	return etcd.FormatID(id)
}

func alarmCommand(run runner) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alarm (list | disarm)",
		Short: "etcd's alarms: list them, or disarm NOSPACE",
		Args:  cobra.ArbitraryArgs,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("alarm takes list or disarm, like: kubectl raftsman alarm list CLUSTER")
		},
	}
	list := &cobra.Command{
		Use:   "list CLUSTER",
		Short: "etcd's active alarms, asked of a Ready member",
		Long: `etcd's active alarms (what "etcdctl alarm list" shows), asked of a Ready member through a
port-forward: NOSPACE (a database reached its quota; etcd refuses writes) and CORRUPT. The
operator repairs both by itself: see status and the README's Maintenance. Read-only.`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			r, err := reach(ctx, e, args[0])
			if err != nil {
				return err
			}
			alarms, err := r.access.Alarms(ctx, r.pod)
			if err != nil {
				return fmt.Errorf("alarms of %s: %w", r.cluster.Name, err)
			}
			renderAlarms(e.streams.Out, r, alarms)
			return nil
		}),
	}
	cmd.AddCommand(list, disarmCommand(run))
	return cmd
}

func renderAlarms(out io.Writer, r *reachable, alarms []alarm) {
	if len(alarms) == 0 {
		fmt.Fprintf(out, "No alarm on %s.\n", r.cluster.Name)
		return
	}
	w := newTable(out)
	fmt.Fprintln(w, "MEMBER\tID\tALARM")
	for _, a := range alarms {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.memberName(a.MemberID), etcd.FormatID(a.MemberID), a.Type)
	}
	_ = w.Flush()
}

func disarmCommand(run runner) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "disarm CLUSTER",
		Short: "Disarm etcd's NOSPACE alarms, so that it takes writes again",
		Long: `Disarm the NOSPACE alarms (what "etcdctl alarm disarm" does): etcd takes writes again. The
operator repairs a NOSPACE alarm by itself (compaction, a defragmentation of every member, then
the disarm) and disarms only once every database came out below its quota; disarming by hand
comes before that, so make room first or the next write raises the alarm again: compact and
defrag, or raise spec.storage.size or spec.options.quotaBackendBytes. The operator's own
repair, if under way, goes on and finds the alarm gone. A CORRUPT alarm is never disarmed
here: the operator replaces the corrupt member and clears its alarm then; disarming it would
hide the corruption. Asks for confirmation unless --yes.`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runDisarm(ctx, e, args[0], yes)
		}),
	}
	addYes(cmd, &yes)
	return cmd
}

func runDisarm(ctx context.Context, e *env, name string, yes bool) error {
	r, err := reach(ctx, e, name)
	if err != nil {
		return err
	}
	alarms, err := r.access.Alarms(ctx, r.pod)
	if err != nil {
		return fmt.Errorf("alarms of %s: %w", r.cluster.Name, err)
	}
	var noSpace []alarm
	for _, a := range alarms {
		if a.Type == etcd.AlarmNoSpace {
			noSpace = append(noSpace, a)
			continue
		}
		fmt.Fprintf(e.streams.ErrOut, "note: %s on %s left alone: the operator replaces a corrupt member and clears its alarm\n", a.Type, r.memberName(a.MemberID))
	}
	if len(noSpace) == 0 {
		fmt.Fprintf(e.streams.Out, "No NOSPACE alarm on %s: nothing to disarm.\n", r.cluster.Name)
		return nil
	}
	if err := e.confirm(r.disarmText(ctx, noSpace), yes); err != nil {
		return err
	}
	for _, a := range noSpace {
		if err := r.access.DisarmAlarm(ctx, r.pod, a); err != nil {
			return fmt.Errorf("disarm NOSPACE on %s: %w", r.memberName(a.MemberID), err)
		}
		fmt.Fprintf(e.streams.Out, "NOSPACE on %s disarmed\n", r.memberName(a.MemberID))
	}
	return nil
}

// disarmText says what disarming does, with each alarmed member's
// database size against its quota.
func (r *reachable) disarmText(ctx context.Context, alarms []alarm) string {
	lines := []string{fmt.Sprintf("Disarm %d NOSPACE alarm(s) of %s/%s: etcd takes writes again.", len(alarms), r.cluster.Namespace, r.cluster.Name)}
	for _, a := range alarms {
		name := r.memberName(a.MemberID)
		st, err := r.access.Status(ctx, name)
		switch {
		case err != nil:
			lines = append(lines, fmt.Sprintf("  %s: its database size is unknown (%v)", name, err))
		case st.DBSizeQuota > 0 && st.DBSize >= st.DBSizeQuota:
			lines = append(lines, fmt.Sprintf("  %s: database %s, at its quota %s: the next write raises the alarm again; make room first (compact, defrag)",
				name, etcd.FormatBytes(st.DBSize), etcd.FormatBytes(st.DBSizeQuota)))
		default:
			lines = append(lines, fmt.Sprintf("  %s: database %s, %s in use", name, etcd.FormatBytes(st.DBSize), etcd.FormatBytes(st.DBSizeInUse)))
		}
	}
	return strings.Join(lines, "\n")
}

type compactOptions struct {
	revision, keep int64
	physical, yes  bool
}

func compactCommand(run runner) *cobra.Command {
	o := compactOptions{}
	cmd := &cobra.Command{
		Use:   "compact CLUSTER (--revision N | --keep N)",
		Short: "Compact etcd's key history up to a revision",
		Long: `Compact etcd's history of keys up to a revision (what "etcdctl compact" does): the values
keys had before it are gone for good, and a watch or read at an older revision gets "required
revision has been compacted". --keep N keeps the newest N revisions. The members' auto-
compaction (spec.options) does the same on its own schedule, and nothing of the operator
depends on old revisions, so it tolerates it. Compaction frees pages inside the database
file; a defragmentation gives them back to the file system: see defrag. Asks for
confirmation unless --yes.`,
		Example: `  kubectl raftsman compact sample --keep 1000
  kubectl raftsman compact sample --revision 123456 --physical --yes`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runCompact(ctx, e, args[0], o)
		}),
	}
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "Compact up to this revision")
	cmd.Flags().Int64Var(&o.keep, "keep", 0, "Compact up to the current revision minus this many")
	cmd.Flags().BoolVar(&o.physical, "physical", false, "Wait until etcd has removed the compacted revisions from its database")
	addYes(cmd, &o.yes)
	cmd.MarkFlagsOneRequired("revision", "keep")
	cmd.MarkFlagsMutuallyExclusive("revision", "keep")
	return cmd
}

func runCompact(ctx context.Context, e *env, name string, o compactOptions) error {
	if o.revision < 0 || o.keep < 0 {
		return fmt.Errorf("--revision and --keep take a positive number")
	}
	r, err := reach(ctx, e, name)
	if err != nil {
		return err
	}
	current := r.status.Revision
	to := o.revision
	if o.keep > 0 {
		to = current - o.keep
	}
	switch {
	case to > current:
		return fmt.Errorf("revision %d is in the future: %s is at revision %d", to, r.cluster.Name, current)
	case to <= 0:
		fmt.Fprintf(e.streams.Out, "%s is at revision %d: nothing to compact\n", r.cluster.Name, current)
		return nil
	}
	what := fmt.Sprintf("Compact the key history of %s/%s up to revision %d (it is at %d): older values are gone for good,\n"+
		"and watches and reads at an older revision fail.", r.cluster.Namespace, r.cluster.Name, to, current)
	if err := e.confirm(what, o.yes); err != nil {
		return err
	}
	if err := r.access.Compact(ctx, r.pod, to, o.physical); err != nil {
		if strings.Contains(err.Error(), "required revision has been compacted") {
			return fmt.Errorf("%s is compacted up to revision %d or later already: %w", r.cluster.Name, to, err)
		}
		return fmt.Errorf("compact %s: %w", r.cluster.Name, err)
	}
	fmt.Fprintf(e.streams.Out, "%s/%s compacted up to revision %d (of %d); a defragmentation gives the freed pages back: kubectl raftsman defrag %s\n",
		r.cluster.Namespace, r.cluster.Name, to, current, r.cluster.Name)
	return nil
}
