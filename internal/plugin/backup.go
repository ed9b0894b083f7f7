package plugin

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

type backupOptions struct {
	name    string
	pvc     string
	like    string
	wait    bool
	timeout time.Duration
}

func backupCommand(run runner) *cobra.Command {
	o := backupOptions{}
	cmd := &cobra.Command{
		Use:   "backup CLUSTER",
		Short: "Take a backup now: create an EtcdBackup of the cluster",
		Long: `Create an EtcdBackup of the cluster; the operator takes the snapshot. It goes to the
cluster's spec.backup.destination, or to --pvc, or to the destination of the EtcdBackup
named by --like. Retention never deletes it: only scheduled backups are pruned.`,
		Example: `  kubectl raftsman backup sample --wait
  kubectl raftsman backup sample --pvc backups:etcd --name before-upgrade`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runBackup(ctx, e, o, args[0])
		}),
	}
	cmd.Flags().StringVar(&o.name, "name", "", "Name of the EtcdBackup (default <cluster>-<UTC time>)")
	cmd.Flags().StringVar(&o.pvc, "pvc", "", "Store the snapshot on this PersistentVolumeClaim of the namespace: CLAIM or CLAIM:FOLDER")
	cmd.Flags().StringVar(&o.like, "like", "", "Store the snapshot where this EtcdBackup's went")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the backup is Complete or Failed")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long --wait waits")
	cmd.MarkFlagsMutuallyExclusive("pvc", "like")
	return cmd
}

func runBackup(ctx context.Context, e *env, o backupOptions, name string) error {
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	dest, err := backupDestination(ctx, e.c, c, o)
	if err != nil {
		return err
	}
	b := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: c.Namespace},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: c.Name, Destination: dest},
	}
	if b.Name == "" {
		b.Name = c.Name + "-" + e.now().UTC().Format("20060102-150405")
	}
	if errs := validation.IsDNS1123Label(b.Name); len(errs) > 0 {
		return fmt.Errorf("backup name %q: %s", b.Name, strings.Join(errs, "; "))
	}
	if err := e.c.Create(ctx, b); err != nil {
		return fmt.Errorf("create etcdbackup %s: %w", b.Name, err)
	}
	fmt.Fprintf(e.streams.Out, "etcdbackup %s/%s created\n", b.Namespace, b.Name)
	if !o.wait {
		return nil
	}
	return waitBackup(ctx, e, b, o.timeout)
}

// backupDestination is where a backup of c goes: --pvc, --like, or the
// cluster's schedule's destination.
func backupDestination(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster, o backupOptions) (etcdv1.BackupDestination, error) {
	switch {
	case o.pvc != "":
		claim, folder, _ := strings.Cut(o.pvc, ":")
		if claim == "" {
			return etcdv1.BackupDestination{}, fmt.Errorf("--pvc %q: name a claim, like backups or backups:etcd", o.pvc)
		}
		return etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: claim, Path: folder}}, nil
	case o.like != "":
		other := &etcdv1.EtcdBackup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: o.like}, other); err != nil {
			return etcdv1.BackupDestination{}, fmt.Errorf("--like: etcdbackup %s: %w", o.like, err)
		}
		return *other.Spec.Destination.DeepCopy(), nil
	case cl.Spec.Backup != nil:
		return *cl.Spec.Backup.Destination.DeepCopy(), nil
	}
	return etcdv1.BackupDestination{}, fmt.Errorf("etcdcluster %s has no spec.backup to take the destination from: "+
		"say where with --pvc CLAIM[:FOLDER] or --like BACKUP", cl.Name)
}

// waitBackup waits until b is Complete or Failed and says which.
func waitBackup(ctx context.Context, e *env, b *etcdv1.EtcdBackup, timeout time.Duration) error {
	var failed error
	last := ""
	err := e.waitUntil(ctx, timeout, "etcdbackup "+b.Name, func() (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		if f := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionFailed); f != nil && f.Status == metav1.ConditionTrue {
			failed = fmt.Errorf("etcdbackup %s failed (%s): %s", b.Name, f.Reason, f.Message)
			return true, nil
		}
		done := meta.FindStatusCondition(b.Status.Conditions, etcdv1.ConditionComplete)
		if done != nil && done.Status == metav1.ConditionTrue {
			return true, nil
		}
		if done != nil && done.Reason != last {
			last = done.Reason
			fmt.Fprintf(e.streams.ErrOut, "%s: %s\n", done.Reason, done.Message)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if failed != nil {
		return failed
	}
	fmt.Fprintf(e.streams.Out, "etcdbackup %s Complete: %s, revision %d, sha256 %s, from %s (etcd %s)\n  %s\n",
		b.Name, etcd.FormatBytes(b.Status.Size), b.Status.Revision, b.Status.SHA256, b.Status.Member, b.Status.EtcdVersion, b.Status.URI)
	return nil
}

type restoreOptions struct {
	from, to string
	replicas int32
	dryRun   bool
	wait     bool
	timeout  time.Duration
}

func restoreCommand(run runner) *cobra.Command {
	o := restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore CLUSTER --from BACKUP --to NEWCLUSTER",
		Short: "Create a new cluster from a backup, with the source cluster's spec",
		Long: `Create the EtcdCluster NEWCLUSTER, restored from the Complete EtcdBackup BACKUP
(spec.bootstrap.restore.backupName), with CLUSTER's spec: version, image, replicas,
storage, resources, Pod template, options, TLS, auth, backup schedule and deletion
policy. Not copied: spec.suspend, and certificate secretRefs (their certificates name
CLUSTER's Services; the operator issues NEWCLUSTER's). CLUSTER is only read.`,
		Example: `  kubectl raftsman restore sample --from sample-20260101-120000 --to sample-restored --wait
  kubectl raftsman restore sample --from nightly --to sample-2 --dry-run`,
		Args: exactArgs("CLUSTER"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runRestore(ctx, e, o, args[0])
		}),
	}
	cmd.Flags().StringVar(&o.from, "from", "", "The EtcdBackup to restore (required)")
	cmd.Flags().StringVar(&o.to, "to", "", "The EtcdCluster to create (required)")
	cmd.Flags().Int32Var(&o.replicas, "replicas", 0, "Members of the new cluster (default: CLUSTER's)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Print the new EtcdCluster instead of creating it")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "Wait until the new cluster is Available")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long --wait waits")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func runRestore(ctx context.Context, e *env, o restoreOptions, name string) error {
	src, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	b := &etcdv1.EtcdBackup{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: src.Namespace, Name: o.from}, b); err != nil {
		return fmt.Errorf("etcdbackup %s/%s: %w", src.Namespace, o.from, err)
	}
	if !meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1.ConditionComplete) {
		return fmt.Errorf("etcdbackup %s is not Complete: a cluster restores only from a complete backup", b.Name)
	}
	if b.Spec.ClusterName != src.Name {
		fmt.Fprintf(e.streams.ErrOut, "note: etcdbackup %s is of cluster %s, not %s: %s's spec is copied, %s's data restored\n",
			b.Name, b.Spec.ClusterName, src.Name, src.Name, b.Spec.ClusterName)
	}
	restored, notes := restoredCluster(src, b.Name, o.to)
	if o.replicas > 0 {
		restored.Spec.Replicas = &o.replicas
	}
	for _, n := range notes {
		fmt.Fprintln(e.streams.ErrOut, "note: "+n)
	}
	if o.dryRun {
		out, err := yaml.Marshal(restored)
		if err != nil {
			return err
		}
		_, err = e.streams.Out.Write(out)
		return err
	}
	if err := e.c.Create(ctx, restored); err != nil {
		return fmt.Errorf("create etcdcluster %s: %w", restored.Name, err)
	}
	fmt.Fprintf(e.streams.Out, "etcdcluster %s/%s created from etcdbackup %s\n", restored.Namespace, restored.Name, b.Name)
	if !o.wait {
		return nil
	}
	return waitCondition(ctx, e, restored, etcdv1.ConditionAvailable, o.timeout)
}

// restoredCluster is a new cluster named to with src's spec, restored from
// backup. notes say what was not copied.
func restoredCluster(src *etcdv1.EtcdCluster, backup, to string) (*etcdv1.EtcdCluster, []string) {
	spec := *src.Spec.DeepCopy()
	var notes []string
	spec.Suspend = false
	spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: backup}}
	if p := spec.TLS.Peer; p != nil && p.SecretRef != nil {
		notes = append(notes, fmt.Sprintf("spec.tls.peer.secretRef %s not copied: its certificate names %s's members; the operator issues %s's", p.SecretRef.Name, src.Name, to))
		spec.TLS.Peer = nil
	}
	if ref := spec.TLS.Client.SecretRef; ref != nil {
		notes = append(notes, fmt.Sprintf("spec.tls.client.secretRef %s not copied: its certificate names %s's Services; the operator issues %s's", ref.Name, src.Name, to))
		spec.TLS.Client.SecretRef = nil
	}
	if spec.Backup != nil {
		notes = append(notes, fmt.Sprintf("spec.backup copied: %s is backed up on %q too", to, spec.Backup.Schedule))
	}
	labels := maps.Clone(src.Labels)
	// The operator gives each cluster its own shard.
	delete(labels, etcdv1.ShardLabel)
	return &etcdv1.EtcdCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: etcdv1.GroupVersion.String(), Kind: "EtcdCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: to, Namespace: src.Namespace, Labels: labels},
		Spec:       spec,
	}, notes
}

// waitCondition waits until cond is True on c for its current generation.
func waitCondition(ctx context.Context, e *env, c *etcdv1.EtcdCluster, cond string, timeout time.Duration) error {
	last := ""
	err := e.waitUntil(ctx, timeout, fmt.Sprintf("etcdcluster %s %s", c.Name, cond), func() (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		got := meta.FindStatusCondition(c.Status.Conditions, cond)
		if got == nil || got.ObservedGeneration != c.Generation {
			return false, nil
		}
		if got.Status == metav1.ConditionTrue {
			return true, nil
		}
		if msg := got.Reason + ": " + got.Message; msg != last {
			last = msg
			fmt.Fprintf(e.streams.ErrOut, "%s %s\n", cond, msg)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.streams.Out, "etcdcluster %s %s\n", c.Name, cond)
	return nil
}
