// Package agent is what the operator's binary does as "raftsman agent": the
// data side of backups and restores, run in short-lived Pods (and in the
// init containers of a restored member) so that the operator itself never
// streams a snapshot nor reads a tenant's storage credentials.
//
//	raftsman agent snapshot --endpoint URL --key K [tls flags] [destination]
//	raftsman agent verify   --key K [--sha256 H] [destination]
//	raftsman agent delete   --key K [destination]
//	raftsman agent install  --to PATH
//	raftsman agent restore  --key K --sha256 H --data-dir D ... [destination]
//	raftsman agent check-data --data-dir D --marker F --member M --uid U [--first-pod]
//	raftsman agent join ... (pkg/gate: what raftsman-gate join does)
//
// Every command writes a Result as JSON to its result file (the Pod's
// termination message) and exits non-zero on failure.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"

	// The agent runs in images without a CA bundle (the operator's, etcd's):
	// these roots let it reach a public https S3 endpoint all the same.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/raftsman/raftsman/pkg/gate"
	"github.com/raftsman/raftsman/pkg/objstore"
	"github.com/raftsman/raftsman/pkg/resources"
)

// Result is what a command reports to its controller.
type Result struct {
	// Error is set when the command failed; Reason then names the kind of
	// failure (ChecksumMismatch, NotFound, ...).
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`

	Key         string `json:"key,omitempty"`
	URI         string `json:"uri,omitempty"`
	Size        int64  `json:"size,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	Revision    int64  `json:"revision,omitempty"`
	Member      string `json:"member,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Skipped: restore found a data directory and left it alone.
	Skipped bool `json:"skipped,omitempty"`
}

// Reasons of failed results.
const (
	ReasonChecksumMismatch = "ChecksumMismatch"
	ReasonNotFound         = "NotFound"
	ReasonNoChecksum       = "NoChecksum"
	ReasonFailed           = "Failed"
)

// failure is an error with a Reason for the Result.
type failure struct {
	reason string
	err    error
}

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// destination are the flags every storage-touching command shares: where
// the store is, and the key of the snapshot in it.
type destination struct {
	endpoint, bucket, prefix, region, caFile, dir, key string
	pathStyle                                          bool
	partSize                                           int64
}

func (d *destination) register(fs *flag.FlagSet) {
	fs.StringVar(&d.endpoint, "s3-endpoint", "", "S3 endpoint URL")
	fs.StringVar(&d.bucket, "s3-bucket", "", "S3 bucket")
	fs.StringVar(&d.prefix, "s3-prefix", "", "prefix put before every key")
	fs.StringVar(&d.region, "s3-region", "us-east-1", "S3 region")
	fs.StringVar(&d.caFile, "s3-ca-file", "", "PEM CA bundle for an https endpoint")
	fs.BoolVar(&d.pathStyle, "s3-path-style", false, "path-style bucket addressing")
	fs.Int64Var(&d.partSize, "s3-part-size", 16<<20, "size of each uploaded part: the most memory an upload holds")
	fs.StringVar(&d.dir, "dir", "", "folder of a mounted volume instead of S3")
	fs.StringVar(&d.key, "key", "", "key of the snapshot")
}

// open returns the store and the full key of the snapshot in it, and
// names the snapshot in res.
func (d *destination) open(res *Result) (objstore.Store, string, error) {
	store, full, err := d.store(d.key)
	if err == nil {
		res.Key, res.URI = d.key, store.URI(full)
	}
	return store, full, err
}

func (d *destination) store(key string) (objstore.Store, string, error) {
	switch {
	case d.dir != "" && d.endpoint != "":
		return nil, "", errors.New("give either --dir or --s3-endpoint, not both")
	case d.dir != "":
		return objstore.NewDir(d.dir), key, nil
	case d.endpoint != "":
		s, err := objstore.NewS3(objstore.S3Config{
			Endpoint: d.endpoint, Bucket: d.bucket, Region: d.region, PathStyle: d.pathStyle, PartSize: d.partSize, CAFile: d.caFile,
			AccessKeyID: os.Getenv(resources.EnvAccessKeyID), SecretAccessKey: os.Getenv(resources.EnvSecretAccessKey),
		})
		if err != nil {
			return nil, "", err
		}
		return s, path.Join(d.prefix, key), nil
	}
	return nil, "", errors.New("no destination: give --dir or --s3-endpoint")
}

// Main runs one agent command and returns the process exit code.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: raftsman agent snapshot|verify|delete|install|restore [flags]")
		return 2
	}
	commands := map[string]func(context.Context, []string, *Result) error{
		"snapshot": snapshot, "verify": verify, "delete": remove, "install": install, "restore": restore,
		"check-data": checkData, "join": func(ctx context.Context, args []string, _ *Result) error { return gate.Join(ctx, args) },
	}
	run, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown agent command %q\n", args[0])
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	res := &Result{}
	resultFile := os.Getenv("RAFTSMAN_RESULT_FILE")
	if resultFile == "" {
		resultFile = "/dev/termination-log"
	}
	err := run(ctx, args[1:], res)
	if err != nil {
		res.Error, res.Reason = err.Error(), ReasonFailed
		var f failure
		if errors.As(err, &f) {
			res.Reason = f.reason
		}
	}
	writeResult(resultFile, res)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func writeResult(file string, res *Result) {
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	// The termination log is missing outside a Pod; stdout has the result.
	_ = os.WriteFile(file, b, 0o644)
}

// ParseResult reads a Result from a Pod's termination message.
func ParseResult(msg string) (Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return Result{}, fmt.Errorf("read the agent's result %q: %w", msg, err)
	}
	return r, nil
}

func install(_ context.Context, args []string, _ *Result) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	to := fs.String("to", "", "where to copy this binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return copySelf(*to)
}

// copySelf copies this binary to to, executable: into a volume that an
// image without it (etcd's) runs it from.
func copySelf(to string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	return copyFile(self, to)
}

// installGate copies the gate (pkg/gate) to to: the small binary next to
// this one in the operator's image, or, in an image without it, this
// binary, which runs as the gate under the gate's name.
func installGate(to string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	return installGateFrom(self, to)
}

// installGateFrom is installGate for the binary at self.
func installGateFrom(self, to string) error {
	small := filepath.Join(filepath.Dir(self), gate.Name)
	if st, err := os.Stat(small); err == nil && st.Mode().IsRegular() {
		return copyFile(small, to)
	}
	return copyFile(self, to)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("open %s: %w", from, err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("create %s: %w", to, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	return out.Close()
}

func remove(ctx context.Context, args []string, res *Result) error {
	fs := flag.NewFlagSet("delete", flag.ContinueOnError)
	var d destination
	d.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, full, err := d.open(res)
	if err != nil {
		return err
	}
	return store.Delete(ctx, full)
}
