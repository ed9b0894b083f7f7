package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raftsman/raftsman/pkg/objstore"
)

// The tests of Main set RAFTSMAN_RESULT_FILE with t.Setenv, which Main
// reads from the process environment, so they do not run in parallel.

const snapshotKey = "ns/demo/nightly.db"

var snapshotData = []byte("not really a bbolt file, but the agent only streams it")

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// runMain runs Main with a fresh result file and returns its exit code and
// the Result it wrote.
func runMain(t *testing.T, args ...string) (int, Result) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "termination-log")
	t.Setenv("RAFTSMAN_RESULT_FILE", file)
	code := Main(args)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("Main(%q) wrote no result: %v", args, err)
	}
	res, err := ParseResult(string(b))
	if err != nil {
		t.Fatalf("Main(%q) wrote an unreadable result: %v", args, err)
	}
	return code, res
}

// putSnapshot stores snapshotData under snapshotKey in a new folder.
func putSnapshot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	info, err := objstore.NewDir(dir).Put(context.Background(), snapshotKey, bytes.NewReader(snapshotData))
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if info.SHA256 != sum(snapshotData) {
		t.Fatalf("put recorded sha256 %s, want %s", info.SHA256, sum(snapshotData))
	}
	return dir
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the --dir folder.
		setup      func(t *testing.T) string
		extra      []string
		wantCode   int
		wantReason string
		wantErrHas string
	}{
		{name: "recorded checksum", setup: putSnapshot},
		{name: "given checksum", setup: putSnapshot, extra: []string{"--sha256=" + sum(snapshotData)}},
		{
			name: "altered after put",
			setup: func(t *testing.T) string {
				dir := putSnapshot(t)
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(snapshotKey)), []byte("tampered"), 0o600); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			wantCode: 1, wantReason: ReasonChecksumMismatch, wantErrHas: "was recorded",
		},
		{
			name: "given checksum differs", setup: putSnapshot, extra: []string{"--sha256=" + strings.Repeat("0", 64)},
			wantCode: 1, wantReason: ReasonChecksumMismatch, wantErrHas: strings.Repeat("0", 64),
		},
		{
			name:     "missing key",
			setup:    func(t *testing.T) string { return t.TempDir() },
			wantCode: 1, wantReason: ReasonNotFound, wantErrHas: "no snapshot at file://",
		},
		{
			name: "no sidecar",
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				p := filepath.Join(dir, filepath.FromSlash(snapshotKey))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, snapshotData, 0o600); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			wantCode: 1, wantReason: ReasonNoChecksum, wantErrHas: "no sha256 is recorded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			code, res := runMain(t, append([]string{"verify", "--dir=" + dir, "--key=" + snapshotKey}, tt.extra...)...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (result %+v)", code, tt.wantCode, res)
			}
			if res.Key != snapshotKey || res.URI != "file://"+filepath.ToSlash(dir)+"/"+snapshotKey {
				t.Errorf("key %q uri %q", res.Key, res.URI)
			}
			if tt.wantCode == 0 {
				if res.Error != "" || res.Reason != "" || res.SHA256 != sum(snapshotData) || res.Size != int64(len(snapshotData)) {
					t.Errorf("result = %+v, want success with sha256 %s and size %d", res, sum(snapshotData), len(snapshotData))
				}
				return
			}
			if res.Reason != tt.wantReason || !strings.Contains(res.Error, tt.wantErrHas) {
				t.Errorf("result = %+v, want reason %s and an error containing %q", res, tt.wantReason, tt.wantErrHas)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	dir := putSnapshot(t)
	p := filepath.Join(dir, filepath.FromSlash(snapshotKey))
	code, res := runMain(t, "delete", "--dir="+dir, "--key="+snapshotKey)
	if code != 0 || res.Error != "" {
		t.Fatalf("delete: code %d result %+v", code, res)
	}
	if res.Key != snapshotKey || !strings.HasSuffix(res.URI, "/"+snapshotKey) {
		t.Errorf("key %q uri %q", res.Key, res.URI)
	}
	for _, f := range []string{p, p + ".sha256"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s still exists (stat error %v)", filepath.Base(f), err)
		}
	}
	// Deleting what is gone succeeds.
	if code, res := runMain(t, "delete", "--dir="+dir, "--key="+snapshotKey); code != 0 || res.Error != "" {
		t.Errorf("second delete: code %d result %+v", code, res)
	}
}

func TestDestinationErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		errHas  string
		wantRes string
	}{
		{name: "no destination", args: []string{"verify", "--key=" + snapshotKey}, errHas: "no destination"},
		{name: "two destinations", args: []string{"delete", "--key=" + snapshotKey, "--dir=/nowhere", "--s3-endpoint=http://127.0.0.1:1"}, errHas: "not both"},
		{name: "unknown flag", args: []string{"verify", "--bogus"}, errHas: "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, res := runMain(t, tt.args...)
			if code != 1 || res.Reason != ReasonFailed || !strings.Contains(res.Error, tt.errHas) {
				t.Errorf("code %d result %+v; want 1, reason %s, error containing %q", code, res, ReasonFailed, tt.errHas)
			}
		})
	}
}

func TestInstall(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "raftsman")
	code, res := runMain(t, "install", "--to="+to)
	if code != 0 || res.Error != "" {
		t.Fatalf("install: code %d result %+v", code, res)
	}
	got, err := os.Stat(to)
	if err != nil {
		t.Fatal(err)
	}
	if got.Size() != want.Size() {
		t.Errorf("installed %d bytes, the binary has %d", got.Size(), want.Size())
	}
	if got.Mode().Perm()&0o100 == 0 {
		t.Errorf("installed binary mode %v is not executable", got.Mode())
	}

	code, res = runMain(t, "install", "--to="+filepath.Join(t.TempDir(), "missing", "raftsman"))
	if code != 1 || res.Error == "" {
		t.Errorf("install into a missing folder: code %d result %+v, want a failure", code, res)
	}
}

// fakeEtcdutl writes a script that does what etcdutl snapshot restore does
// to the file system: it makes --data-dir with a member folder, copies the
// snapshot into it, and records its arguments in the returned file.
func fakeEtcdutl(t *testing.T) (bin, argsFile string) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run a fake etcdutl")
	}
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "etcdutl"), filepath.Join(dir, "args")
	script := `#!/bin/sh
set -e
printf '%s\n' "$@" > '` + argsFile + `'
for a in "$@"; do
	case "$a" in --data-dir=*) d="${a#--data-dir=}" ;; esac
done
mkdir -p "$d/member/snap"
cp "$3" "$d/member/snap/db"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

func TestRestore(t *testing.T) {
	store := putSnapshot(t)
	etcdutl, argsFile := fakeEtcdutl(t)
	volume := t.TempDir()
	dataDir, staging := filepath.Join(volume, "data"), filepath.Join(volume, "restore")
	restoreArgs := func(sha string) []string {
		return []string{"restore", "--dir=" + store, "--key=" + snapshotKey, "--sha256=" + sha,
			"--data-dir=" + dataDir, "--staging=" + staging, "--etcdutl=" + etcdutl,
			"--name=demo-abcde", "--initial-cluster=demo-abcde=http://demo-abcde.demo-peer:2380",
			"--initial-cluster-token=uid-1", "--initial-advertise-peer-urls=http://demo-abcde.demo-peer:2380"}
	}

	// A wrong checksum: etcdutl never runs and no data directory appears.
	code, res := runMain(t, restoreArgs(strings.Repeat("1", 64))...)
	if code != 1 || res.Reason != ReasonChecksumMismatch {
		t.Errorf("wrong sha256: code %d result %+v, want ChecksumMismatch", code, res)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("wrong sha256 left a data directory (stat error %v)", err)
	}
	if _, err := os.Stat(argsFile); !os.IsNotExist(err) {
		t.Errorf("wrong sha256 ran etcdutl (stat error %v)", err)
	}

	// The right checksum restores.
	code, res = runMain(t, restoreArgs(sum(snapshotData))...)
	if code != 0 || res.Error != "" || res.Skipped {
		t.Fatalf("restore: code %d result %+v", code, res)
	}
	if res.Key != snapshotKey || res.SHA256 != sum(snapshotData) || res.Size != int64(len(snapshotData)) {
		t.Errorf("result = %+v", res)
	}
	if got, err := os.ReadFile(filepath.Join(dataDir, "member", "snap", "db")); err != nil || !bytes.Equal(got, snapshotData) {
		t.Errorf("data dir snapshot = %q, %v; want the stored snapshot", got, err)
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("staging folder left behind (stat error %v)", err)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("etcdutl did not run: %v", err)
	}
	args := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{
		"snapshot", "restore", filepath.Join(staging, "snapshot.db"), "--data-dir=" + filepath.Join(staging, "data"),
		"--name=demo-abcde", "--initial-cluster=demo-abcde=http://demo-abcde.demo-peer:2380",
		"--initial-cluster-token=uid-1", "--initial-advertise-peer-urls=http://demo-abcde.demo-peer:2380",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("etcdutl args %q lack %q", args, want)
		}
	}

	// Started again with the data directory in place: nothing is touched.
	if err := os.Remove(argsFile); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dataDir, "member", "kept")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, res = runMain(t, restoreArgs(sum(snapshotData))...)
	if code != 0 || res.Error != "" || !res.Skipped {
		t.Errorf("second restore: code %d result %+v, want Skipped", code, res)
	}
	if _, err := os.Stat(argsFile); !os.IsNotExist(err) {
		t.Errorf("second restore ran etcdutl (stat error %v)", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("second restore changed the data directory: %v", err)
	}
}

func TestRestoreFailures(t *testing.T) {
	tests := []struct {
		name       string
		args       func(store, volume string) []string
		wantReason string
		wantErrHas string
	}{
		{
			name: "no sha256",
			args: func(store, volume string) []string {
				return []string{"restore", "--dir=" + store, "--key=" + snapshotKey, "--data-dir=" + filepath.Join(volume, "data"), "--staging=" + filepath.Join(volume, "restore")}
			},
			wantReason: ReasonNoChecksum, wantErrHas: "--sha256",
		},
		{
			name: "missing snapshot",
			args: func(store, volume string) []string {
				return []string{"restore", "--dir=" + store, "--key=ns/demo/other.db", "--sha256=" + sum(snapshotData),
					"--data-dir=" + filepath.Join(volume, "data"), "--staging=" + filepath.Join(volume, "restore")}
			},
			wantReason: ReasonNotFound, wantErrHas: "other.db",
		},
		{
			name: "etcdutl fails",
			args: func(store, volume string) []string {
				return []string{"restore", "--dir=" + store, "--key=" + snapshotKey, "--sha256=" + sum(snapshotData),
					"--data-dir=" + filepath.Join(volume, "data"), "--staging=" + filepath.Join(volume, "restore"),
					"--etcdutl=" + filepath.Join(volume, "no-such-etcdutl")}
			},
			wantReason: ReasonFailed, wantErrHas: "etcdutl snapshot restore",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, volume := putSnapshot(t), t.TempDir()
			code, res := runMain(t, tt.args(store, volume)...)
			if code != 1 || res.Reason != tt.wantReason || !strings.Contains(res.Error, tt.wantErrHas) {
				t.Errorf("code %d result %+v; want 1, reason %s, error containing %q", code, res, tt.wantReason, tt.wantErrHas)
			}
			if _, err := os.Stat(filepath.Join(volume, "data")); !os.IsNotExist(err) {
				t.Errorf("a failed restore left a data directory (stat error %v)", err)
			}
		})
	}
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "no command", args: nil},
		{name: "unknown command", args: []string{"frobnicate", "--key=x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "termination-log")
			t.Setenv("RAFTSMAN_RESULT_FILE", file)
			if code := Main(tt.args); code != 2 {
				t.Errorf("Main(%q) = %d, want 2", tt.args, code)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a usage error wrote a result (stat error %v)", err)
			}
		})
	}
}

func TestParseResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msg     string
		want    Result
		wantErr bool
	}{
		{
			name: "success",
			msg:  `{"key":"k","uri":"file:///b/k","size":12,"sha256":"` + sum(snapshotData) + `","revision":9,"member":"8e9e05c52164694d","etcdVersion":"3.6.1"}`,
			want: Result{Key: "k", URI: "file:///b/k", Size: 12, SHA256: sum(snapshotData), Revision: 9, Member: "8e9e05c52164694d", EtcdVersion: "3.6.1"},
		},
		{name: "failure", msg: `{"error":"boom","reason":"NotFound"}`, want: Result{Error: "boom", Reason: ReasonNotFound}},
		{name: "skipped", msg: `{"skipped":true}`, want: Result{Skipped: true}},
		{name: "empty object", msg: `{}`, want: Result{}},
		{name: "empty", msg: "", wantErr: true},
		{name: "garbage", msg: "panic: runtime error", wantErr: true},
		{name: "truncated", msg: `{"key":"k"`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseResult(tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseResult(%q) error = %v, wantErr %v", tt.msg, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseResult(%q) = %+v, want %+v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestResultRoundTrip(t *testing.T) {
	want := Result{Error: "the snapshot at s3://b/k has sha256 x", Reason: ReasonChecksumMismatch, Key: "k", URI: "s3://b/k", Size: 1 << 40, SHA256: sum(nil), Revision: 1 << 50, Member: "m", EtcdVersion: "3.5.21", Skipped: true}
	file := filepath.Join(t.TempDir(), "termination-log")
	writeResult(file, &want)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseResult(string(b))
	if err != nil || got != want {
		t.Errorf("round trip = %+v, %v; want %+v", got, err, want)
	}
}
