package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The S3 tests run against a real versitygw, started by TestMain when
// RAFTSMAN_VERSITYGW names its binary:
//
//	RAFTSMAN_VERSITYGW=$(hack/s3/versitygw.sh build) go test ./pkg/objstore/
const (
	versitygwEnv = "RAFTSMAN_VERSITYGW"
	testAccess   = "raftsman"
	testSecret   = "raftsman-secret"
	testBucket   = "raftsman-test"
)

// s3Endpoint is the running test server's URL, "" when there is none.
var s3Endpoint string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin := os.Getenv(versitygwEnv)
	if bin == "" {
		return m.Run()
	}
	stop, err := startVersitygw(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "objstore tests:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startVersitygw runs bin with the posix backend on a fresh directory and a
// free loopback port, creates the test bucket and returns how to stop it.
func startVersitygw(bin string) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "objstore-versitygw-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", addr, "--health", "/health", "--quiet", "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+testAccess, "ROOT_SECRET_ACCESS_KEY="+testSecret)
	cmd.Stdout, cmd.Stderr = logf, logf
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		os.RemoveAll(dir)
	}
	fail := func(err error) (func(), error) {
		stop()
		return nil, err
	}

	s3Endpoint = "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s3Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logf.Name())
			return fail(fmt.Errorf("versitygw exited: %s", log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("versitygw did not answer on %s", addr))
		}
	}
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(testAccess, testSecret, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return fail(err)
	}
	if err := client.MakeBucket(context.Background(), testBucket, minio.MakeBucketOptions{}); err != nil {
		return fail(fmt.Errorf("creating bucket: %w", err))
	}
	return stop, nil
}

// s3Fixture returns a Store on the test bucket with the given part size,
// or skips the test without a server.
func s3Fixture(t *testing.T, partSize int64) (*s3Store, *minio.Client) {
	t.Helper()
	// Read here, inside the test, so that go test's cache notices the
	// variable and the binary.
	bin := os.Getenv(versitygwEnv)
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatal(err)
		}
	}
	if bin == "" || s3Endpoint == "" {
		t.Skipf("no S3 server: set %s to a versitygw binary, e.g. %s=$(hack/s3/versitygw.sh build) go test ./pkg/objstore/", versitygwEnv, versitygwEnv)
	}
	st, err := NewS3(S3Config{
		Endpoint:        s3Endpoint,
		Bucket:          testBucket,
		Region:          "us-east-1",
		AccessKeyID:     testAccess,
		SecretAccessKey: testSecret,
		PathStyle:       true,
		PartSize:        partSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*s3Store)
	return s, s.client
}

// rawS3 lists every object in the bucket and every unfinished multipart upload.
func rawS3(client *minio.Client) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		ctx := context.Background()
		var names []string
		for oi := range client.ListObjects(ctx, testBucket, minio.ListObjectsOptions{Recursive: true}) {
			if oi.Err != nil {
				t.Fatal(oi.Err)
			}
			names = append(names, oi.Key)
		}
		for up := range client.ListIncompleteUploads(ctx, testBucket, "", true) {
			if up.Err != nil {
				t.Fatal(up.Err)
			}
			names = append(names, "upload:"+up.Key)
		}
		return names
	}
}

// clearBucket removes every object, so that each test starts empty.
func clearBucket(t *testing.T, client *minio.Client) {
	t.Helper()
	ctx := context.Background()
	for oi := range client.ListObjects(ctx, testBucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		if err := client.RemoveObject(ctx, testBucket, oi.Key, minio.RemoveObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestS3(t *testing.T) {
	s, client := s3Fixture(t, MinPartSize)
	clearBucket(t, client)
	// big spans three parts of 5 MiB.
	testStore(t, fixture{store: s, raw: rawS3(client), big: 12<<20 + 12345})
}

func TestS3URI(t *testing.T) {
	st, err := NewS3(S3Config{Endpoint: "https://s3.example.com", Bucket: "backups"})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.URI("c1/snap.db"); got != "s3://backups/c1/snap.db" {
		t.Errorf("URI = %q", got)
	}
}

func TestNewS3Errors(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  S3Config
		want string
	}{
		{"no scheme", S3Config{Endpoint: "s3.example.com", Bucket: "b"}, "want http"},
		{"ftp", S3Config{Endpoint: "ftp://s3.example.com", Bucket: "b"}, "want http"},
		{"path", S3Config{Endpoint: "https://s3.example.com/x", Bucket: "b"}, "must not have a path"},
		{"no bucket", S3Config{Endpoint: "https://s3.example.com"}, "no bucket"},
		{"small parts", S3Config{Endpoint: "https://s3.example.com", Bucket: "b", PartSize: 1 << 20}, "part size"},
		{"huge parts", S3Config{Endpoint: "https://s3.example.com", Bucket: "b", PartSize: 6 << 30}, "part size"},
		{"missing CA", S3Config{Endpoint: "https://s3.example.com", Bucket: "b", CAFile: ca + ".absent"}, "CA file"},
		{"bad CA", S3Config{Endpoint: "https://s3.example.com", Bucket: "b", CAFile: ca}, "no PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewS3(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewS3 = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestS3Multipart stores a stream of several parts and checks that the
// checksum recorded by the server-side copy is the stream's.
func TestS3Multipart(t *testing.T) {
	s3Fixture(t, 0) // skips without a server
	for _, tc := range []struct {
		name      string
		copyLimit int64 // objects above it take the multipart copy path
	}{
		{"CopyObject", copyLimit},
		{"ComposeObject", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, client := s3Fixture(t, MinPartSize)
			s.copyLimit = tc.copyLimit
			ctx := context.Background()
			const size = 12 << 20
			open, want := data(12, size)
			key := "mp/" + tc.name
			info, err := s.Put(ctx, key, open())
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if info.Size != size || info.SHA256 != want {
				t.Errorf("Put = %+v, want size %d sha256 %s", info, size, want)
			}
			// The checksum is plain S3 user metadata, for any client to see.
			oi, err := client.StatObject(ctx, testBucket, key, minio.StatObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := oi.Metadata.Get("X-Amz-Meta-Sha256"); got != want {
				t.Errorf("x-amz-meta-sha256 = %q, want %s (metadata %v)", got, want, oi.Metadata)
			}
			got, ginfo := readAll(t, s, key)
			if len(got) != size || sumOf(got) != want || ginfo.SHA256 != want {
				t.Errorf("Get: %d bytes, sha256 %s, info %+v", len(got), sumOf(got), ginfo)
			}
			for _, name := range rawS3(client)(t) {
				if strings.Contains(name, partialMarker) {
					t.Errorf("left behind: %s", name)
				}
			}
		})
	}
}

// zeroReader yields n zero bytes without holding them.
type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.n {
		p = p[:z.n]
	}
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// TestS3Memory checks that a Put holds a part, not the stream, in memory.
func TestS3Memory(t *testing.T) {
	s, _ := s3Fixture(t, MinPartSize)
	const size, limit = 64 << 20, 40 << 20

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var (
		peak uint64
		wg   sync.WaitGroup
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	info, err := s.Put(context.Background(), "mem/64MiB", &zeroReader{n: size})
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != size {
		t.Errorf("Put stored %d bytes, want %d", info.Size, size)
	}
	growth := int64(peak) - int64(base)
	t.Logf("heap in use: %d MiB before, %d MiB at peak while storing %d MiB", base>>20, peak>>20, size>>20)
	if growth >= limit {
		t.Errorf("heap grew by %d MiB while storing %d MiB, want < %d MiB", growth>>20, size>>20, limit>>20)
	}
	if err := s.Delete(context.Background(), "mem/64MiB"); err != nil {
		t.Error(err)
	}
}

// TestS3NoBucket checks that a missing bucket is reported as such, not as
// a missing object. (Stat cannot tell: S3 answers HEAD with a bare 404.)
func TestS3NoBucket(t *testing.T) {
	s, _ := s3Fixture(t, 0)
	s.bucket = "no-such-bucket"
	ctx := context.Background()
	if _, _, err := s.Get(ctx, "x"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Get in a missing bucket = %v, want an error other than ErrNotFound", err)
	}
	if _, err := s.List(ctx, ""); err == nil {
		t.Error("List of a missing bucket succeeded")
	}
	if _, err := s.Put(ctx, "x", strings.NewReader("x")); err == nil {
		t.Error("Put in a missing bucket succeeded")
	}
}
