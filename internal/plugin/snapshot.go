package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

func snapshotCommand(run runner) *cobra.Command {
	var member string
	cmd := &cobra.Command{
		Use:   "snapshot CLUSTER FILE",
		Short: "Save a snapshot of the cluster's data to a local file, checked",
		Long: `Stream a snapshot of one Ready member's database (etcd's Snapshot call, what
"etcdctl snapshot save" does) through a port-forward into FILE, by default from a member
that does not lead. The snapshot is written to FILE.part and renamed to FILE only once etcd's
own checksum at its end matches what came: FILE is never a partial snapshot. The plugin
prints its size and sha256. FILE must not exist.

"etcdutl snapshot restore FILE" makes a data directory of it; to restore it into a new
EtcdCluster, put it where spec.bootstrap.restore.source reads (S3 or a PVC) with its sha256.
Backups the operator should keep and prune are EtcdBackups: see "backup". Read-only for the
cluster.`,
		Example: `  kubectl raftsman snapshot sample sample.db
  etcdutl snapshot status sample.db -w table`,
		Args: exactArgs("CLUSTER", "FILE"),
		RunE: run(func(ctx context.Context, e *env, args []string) error {
			return runSnapshot(ctx, e, args[0], args[1], member)
		}),
	}
	cmd.Flags().StringVar(&member, "member", "", "Take the snapshot from this member (by default a Ready member that does not lead)")
	return cmd
}

func runSnapshot(ctx context.Context, e *env, name, file, member string) error {
	if _, err := os.Stat(file); err == nil {
		return fmt.Errorf("%s exists: remove it or name another file", file)
	}
	c, err := e.getCluster(ctx, name)
	if err != nil {
		return err
	}
	pods, err := targetPods(ctx, e.c, c, member)
	if err != nil {
		return err
	}
	pod := firstFollower(c, pods)
	access, err := e.etcd(ctx, c)
	if err != nil {
		return err
	}
	part := file + ".part"
	info, err := saveSnapshot(ctx, access, pod, part)
	if err != nil {
		_ = os.Remove(part)
		return fmt.Errorf("snapshot of %s from %s: %w", c.Name, pod, err)
	}
	size, sum, err := verifySnapshot(part)
	if err != nil {
		_ = os.Remove(part)
		return fmt.Errorf("snapshot of %s from %s: %w", c.Name, pod, err)
	}
	if err := os.Rename(part, file); err != nil {
		_ = os.Remove(part)
		return err
	}
	fmt.Fprintf(e.streams.Out, "snapshot of %s/%s from %s (etcd %s, revision %d) saved to %s: %s (%d bytes), sha256 %s; etcd's checksum matches\n",
		c.Namespace, c.Name, pod, orDash(info.Version), info.Revision, file, etcd.FormatBytes(size), size, sum)
	return nil
}

// firstFollower is the first of pods that does not lead, as the operator
// last saw it, else the first: a snapshot, or any call a follower serves as
// well, spares the leader.
func firstFollower(c *etcdv1.EtcdCluster, pods []string) string {
	for _, p := range pods {
		leads := false
		for _, m := range c.Status.Members {
			leads = leads || (m.Name == p && m.Leader)
		}
		if !leads {
			return p
		}
	}
	return pods[0]
}

// saveSnapshot streams the member's snapshot into a new file at path,
// synced to disk before it is closed.
func saveSnapshot(ctx context.Context, access etcdAccess, pod, path string) (snapshotInfo, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return snapshotInfo{}, err
	}
	info, err := access.Snapshot(ctx, pod, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return info, err
}

// verifySnapshot checks the sha256 etcd appends to the snapshot it
// streams (etcdutl checks the same before it restores) and returns the
// file's size and its own sha256, as the file was written to disk.
func verifySnapshot(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	size := fi.Size()
	if size <= sha256.Size {
		return 0, "", fmt.Errorf("%d bytes came: not a snapshot", size)
	}
	data, whole := sha256.New(), sha256.New()
	if _, err := io.Copy(io.MultiWriter(data, whole), io.LimitReader(f, size-sha256.Size)); err != nil {
		return 0, "", err
	}
	tail := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, tail); err != nil {
		return 0, "", err
	}
	whole.Write(tail)
	if !bytes.Equal(data.Sum(nil), tail) {
		return 0, "", errors.New("the sha256 etcd appended does not match the data: the snapshot is damaged")
	}
	return size, hex.EncodeToString(whole.Sum(nil)), nil
}
