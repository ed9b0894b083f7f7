//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// The backup tests store snapshots in a real S3 server: versitygw, started
// by TestMain on all addresses of this host, reached by the tests through
// loopback and by the backup Pods through the node's address.
const (
	s3AccessKey = "raftsman"
	s3SecretKey = "raftsman-secret"
	s3Bucket    = "etcd-backups"
)

type s3Server struct {
	dir  string
	port int
}

var s3srv *s3Server

func versitygw(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot, "hack/s3/versitygw.sh")}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// startS3 builds versitygw once (cached), starts it on a free port and
// creates the bucket.
func startS3() (*s3Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "raftsman-s3-")
	if err != nil {
		return nil, err
	}
	s := &s3Server{dir: dir, port: port}
	if _, err := versitygw("up", fmt.Sprintf("0.0.0.0:%d", port), dir); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.client().MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{}); err != nil {
		s.stop()
		return nil, fmt.Errorf("create bucket: %w", err)
	}
	return s, nil
}

func (s *s3Server) stop() {
	if _, err := versitygw("down", s.dir); err == nil {
		_ = os.RemoveAll(s.dir)
	}
}

// client reaches the server through loopback.
func (s *s3Server) client() *minio.Client {
	c, err := minio.New(fmt.Sprintf("127.0.0.1:%d", s.port), &minio.Options{
		Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		panic(err)
	}
	return c
}

// destination is where Pods reach the server: the node's address.
func (s *s3Server) destination(ctx context.Context, t *testing.T, k *kube, prefix string) etcdv1.BackupDestination {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := k.c.List(ctx, nodes); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v", err)
	}
	var ip string
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	ns := namespaceOf(ctx)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns},
		StringData: map[string]string{"accessKeyID": s3AccessKey, "secretAccessKey": s3SecretKey}}
	if err := k.c.Create(ctx, sec); ignoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	return etcdv1.BackupDestination{S3: &etcdv1.S3Destination{
		Endpoint: fmt.Sprintf("http://%s:%d", ip, s.port), Bucket: s3Bucket, Prefix: prefix, Region: "us-east-1",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: sec.Name}, ForcePathStyle: true,
	}}
}

// objects lists the complete objects under prefix.
func (s *s3Server) objects(ctx context.Context, prefix string) (map[string]minio.ObjectInfo, error) {
	out := map[string]minio.ObjectInfo{}
	for o := range s.client().ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		if !strings.Contains(o.Key, ".partial-") {
			out[o.Key] = o
		}
	}
	return out, nil
}

// corrupt flips one byte in the middle of an object, keeping its size and
// its recorded checksum.
func (s *s3Server) corrupt(ctx context.Context, key string) error {
	c := s.client()
	obj, err := c.GetObject(ctx, s3Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(obj); err != nil {
		return err
	}
	st, err := obj.Stat()
	if err != nil {
		return err
	}
	data := buf.Bytes()
	data[len(data)/2] ^= 0xff
	_, err = c.PutObject(ctx, s3Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{UserMetadata: map[string]string{"sha256": st.UserMetadata["Sha256"]}})
	return err
}
