package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/objstore"
)

// snapshot streams a snapshot of one member to the destination. Nothing is
// buffered beyond one upload part: a database of any size costs the same
// memory.
func snapshot(ctx context.Context, args []string, res *Result) error {
	fs := flag.NewFlagSet("snapshot", flag.ContinueOnError)
	var d destination
	d.register(fs)
	endpoint := fs.String("endpoint", "", "client URL of the member to snapshot")
	cert := fs.String("cert", "", "client certificate file")
	keyFile := fs.String("key-file", "", "client key file")
	ca := fs.String("cacert", "", "CA file of the members' serving certificates")
	timeout := fs.Duration("dial-timeout", 10*time.Second, "timeout to reach the member")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, full, err := d.open(res)
	if err != nil {
		return err
	}

	cfg := clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: *timeout, Logger: zap.NewNop()}
	if cfg.TLS, err = clientTLS(*ca, *cert, *keyFile); err != nil {
		return err
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *endpoint, err)
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, *timeout)
	st, err := cli.Status(sctx, *endpoint)
	cancel()
	if err != nil {
		return fmt.Errorf("status of %s: %w", *endpoint, err)
	}
	res.Member, res.EtcdVersion = etcd.FormatID(st.Header.MemberId), st.Version
	// The snapshot starts after this answer, so it holds at least this
	// revision; etcd may also say so in the snapshot stream's header.
	res.Revision = st.Header.Revision

	snap, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return fmt.Errorf("start the snapshot on %s: %w", *endpoint, err)
	}
	defer snap.Snapshot.Close()
	if snap.Header != nil && snap.Header.Revision > res.Revision {
		res.Revision = snap.Header.Revision
	}
	return storeChecked(ctx, store, full, snap.Snapshot, res)
}

// storeChecked stores the snapshot stream at key full, then reads back what
// the store says it holds: only a snapshot whose size and checksum are the
// streamed ones counts as complete.
func storeChecked(ctx context.Context, store objstore.Store, full string, r io.Reader, res *Result) error {
	info, err := store.Put(ctx, full, r)
	if err != nil {
		return fmt.Errorf("store the snapshot at %s: %w", res.URI, err)
	}
	res.Size, res.SHA256 = info.Size, info.SHA256
	got, err := store.Stat(ctx, full)
	if err != nil {
		return fmt.Errorf("check the stored snapshot: %w", err)
	}
	if got.Size != info.Size || got.SHA256 != info.SHA256 {
		return failure{ReasonChecksumMismatch, fmt.Errorf("the store holds %d bytes with sha256 %q, but %d bytes with sha256 %s were sent", got.Size, got.SHA256, info.Size, info.SHA256)}
	}
	return nil
}

// clientTLS is the TLS of the agent's etcd client: none without a CA file,
// with a client certificate when one is given.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	var err error
	creds := etcd.Credentials{}
	if creds.CAPEM, err = os.ReadFile(caFile); err != nil {
		return nil, fmt.Errorf("read the CA: %w", err)
	}
	if certFile != "" {
		if creds.CertPEM, err = os.ReadFile(certFile); err != nil {
			return nil, fmt.Errorf("read the client certificate: %w", err)
		}
		if creds.KeyPEM, err = os.ReadFile(keyFile); err != nil {
			return nil, fmt.Errorf("read the client key: %w", err)
		}
	}
	return creds.TLSConfig()
}

// verify reads a snapshot whole and compares its sha256 with the expected
// one, or with the one recorded next to it.
func verify(ctx context.Context, args []string, res *Result) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	var d destination
	d.register(fs)
	want := fs.String("sha256", "", "expected sha256 (hex); the recorded one when empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, full, err := d.open(res)
	if err != nil {
		return err
	}
	_, err = check(ctx, store, full, *want, io.Discard, res)
	return err
}

// check streams the object at key into w and fails unless its sha256 is
// want (or, when want is empty, the store's record of it).
func check(ctx context.Context, store objstore.Store, key, want string, w io.Writer, res *Result) (string, error) {
	r, info, err := store.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return "", failure{ReasonNotFound, fmt.Errorf("no snapshot at %s", store.URI(key))}
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", store.URI(key), err)
	}
	defer r.Close()
	if want == "" {
		want = info.SHA256
	}
	if want == "" {
		return "", failure{ReasonNoChecksum, fmt.Errorf("no sha256 is recorded for %s: give spec.bootstrap.restore.source.sha256", store.URI(key))}
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), r)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", store.URI(key), err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	res.Size, res.SHA256 = n, got
	if got != want {
		return "", failure{ReasonChecksumMismatch, fmt.Errorf("the snapshot at %s has sha256 %s, but %s was recorded: it is damaged or not the one backed up", store.URI(key), got, want)}
	}
	return got, nil
}

// restore makes a member's data directory from a snapshot, unless the
// directory exists already (a Pod starting again after the restore). The
// snapshot is checked before etcdutl reads it, and the data directory
// appears by a rename once etcdutl finished, never half made.
func restore(ctx context.Context, args []string, res *Result) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	var d destination
	d.register(fs)
	want := fs.String("sha256", "", "expected sha256 (hex)")
	dataDir := fs.String("data-dir", "", "etcd's data directory")
	staging := fs.String("staging", "", "work folder on the data volume")
	name := fs.String("name", "", "member name")
	initialCluster := fs.String("initial-cluster", "", "etcd --initial-cluster")
	token := fs.String("initial-cluster-token", "", "etcd --initial-cluster-token")
	peerURLs := fs.String("initial-advertise-peer-urls", "", "etcd --initial-advertise-peer-urls")
	etcdutl := fs.String("etcdutl", "etcdutl", "etcdutl binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *want == "" {
		return failure{ReasonNoChecksum, errors.New("restore needs --sha256")}
	}
	if _, err := os.Stat(filepath.Join(*dataDir, "member")); err == nil {
		res.Skipped = true
		fmt.Println("The data directory exists: nothing to restore")
		return nil
	}
	store, full, err := d.open(res)
	if err != nil {
		return err
	}
	// The staged copy is as large as the snapshot: never leave it behind.
	defer os.RemoveAll(*staging)
	file, err := stageChecked(ctx, store, full, *want, *staging, res)
	if err != nil {
		return err
	}
	made := filepath.Join(*staging, "data")
	cmd := exec.CommandContext(ctx, *etcdutl, "snapshot", "restore", file,
		"--data-dir="+made, "--name="+*name, "--initial-cluster="+*initialCluster,
		"--initial-cluster-token="+*token, "--initial-advertise-peer-urls="+*peerURLs)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("etcdutl snapshot restore: %w", err)
	}
	if err := os.RemoveAll(*dataDir); err != nil {
		return fmt.Errorf("clear %s: %w", *dataDir, err)
	}
	if err := os.Rename(made, *dataDir); err != nil {
		return fmt.Errorf("move the restored data to %s: %w", *dataDir, err)
	}
	return nil
}

// stageChecked copies the snapshot at key full into a fresh staging folder
// and checks its sha256 on the way; it returns the copy's path.
func stageChecked(ctx context.Context, store objstore.Store, full, want, staging string, res *Result) (string, error) {
	if err := os.RemoveAll(staging); err != nil {
		return "", fmt.Errorf("clear %s: %w", staging, err)
	}
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", staging, err)
	}
	file := filepath.Join(staging, "snapshot.db")
	f, err := os.Create(file)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", file, err)
	}
	_, err = check(ctx, store, full, want, f, res)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", file, cerr)
	}
	return file, err
}
