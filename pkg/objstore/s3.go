package objstore

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// DefaultPartSize is the S3 multipart part size when S3Config.PartSize
	// is 0. A Put holds one part in memory at a time.
	DefaultPartSize = 16 << 20
	// MinPartSize is the smallest part size S3 accepts.
	MinPartSize = 5 << 20
	// MaxPartSize is the largest part size S3 accepts.
	MaxPartSize = 5 << 30

	// sha256Meta is the user metadata key ("x-amz-meta-sha256") holding
	// an object's checksum.
	sha256Meta = "sha256"
	// copyLimit is the largest object a single CopyObject may copy.
	copyLimit = 5 << 30
	// cleanupTimeout bounds what a Put still does once its context may be
	// cancelled: removing its temporary data, describing a committed object.
	cleanupTimeout = time.Minute
)

// S3Config locates a bucket of an S3-compatible service.
type S3Config struct {
	// Endpoint is the service's URL with its scheme, http or https, and no
	// path, like https://s3.eu-west-1.amazonaws.com or http://minio:9000.
	Endpoint string
	// Bucket holds the objects; it must exist.
	Bucket string
	// Region is the bucket's region; "" lets the client ask the service.
	Region string
	// AccessKeyID and SecretAccessKey are static credentials. When both are
	// empty, credentials come from the AWS environment variables or, failing
	// those, from the pod's or instance's IAM role.
	AccessKeyID, SecretAccessKey string
	// PathStyle forces path-style requests (endpoint/bucket/key), which most
	// self-hosted services need; otherwise the client chooses, using
	// virtual-hosted requests for AWS.
	PathStyle bool
	// PartSize is the multipart part size in bytes, between MinPartSize and
	// MaxPartSize; 0 means DefaultPartSize. Objects of up to 10,000 parts
	// can be stored.
	PartSize int64
	// CAFile optionally names a PEM bundle of CAs trusted for https,
	// in addition to the system's.
	CAFile string
}

// s3Store keeps objects in one bucket. A Put uploads to a temporary key
// and then copies it server-side to its key, recording the checksum as
// user metadata, so the object appears complete or not at all.
type s3Store struct {
	client   *minio.Client
	bucket   string
	partSize int64
	// copyLimit is the largest object copied with one CopyObject; larger
	// ones are copied in parts. A field so that tests can lower it.
	copyLimit int64
}

// NewS3 returns a Store that keeps objects in an S3 bucket. It checks the
// configuration but does not contact the service.
func NewS3(cfg S3Config) (Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %q: %w", cfg.Endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("s3 endpoint %q: want http://host[:port] or https://host[:port]", cfg.Endpoint)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("s3 endpoint %q: must not have a path, query or user", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	partSize := cfg.PartSize
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	if partSize < MinPartSize || partSize > MaxPartSize {
		return nil, fmt.Errorf("s3: part size %d out of range [%d, %d]", partSize, MinPartSize, MaxPartSize)
	}
	secure := u.Scheme == "https"
	transport, err := s3Transport(secure, cfg.CAFile)
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.IAM{Client: &http.Client{Transport: transport}},
		})
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
		Transport:    transport,
	})
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	return &s3Store{client: client, bucket: cfg.Bucket, partSize: partSize, copyLimit: copyLimit}, nil
}

// s3Transport is minio's transport, trusting the CAs of caFile besides the
// system's when one is given.
func s3Transport(secure bool, caFile string) (*http.Transport, error) {
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	if caFile == "" {
		return transport, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("s3 CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3 CA file %s: no PEM certificates", caFile)
	}
	transport.TLSClientConfig.RootCAs = pool
	return transport, nil
}

func (s *s3Store) URI(key string) string {
	return "s3://" + s.bucket + "/" + key
}

// mapErr turns the service's "no such key" into ErrNotFound.
func mapErr(err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code == minio.NoSuchKey {
		return ErrNotFound
	}
	return err
}

func infoOf(key string, oi minio.ObjectInfo) Info {
	sum := ""
	for k, v := range oi.UserMetadata {
		if strings.EqualFold(k, sha256Meta) {
			sum = strings.ToLower(v)
		}
	}
	if sum == "" {
		sum = strings.ToLower(oi.Metadata.Get("X-Amz-Meta-" + sha256Meta))
	}
	if !validSHA256(sum) {
		sum = ""
	}
	return Info{Key: key, Size: oi.Size, SHA256: sum, LastModified: oi.LastModified}
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("put: %w", err)
	}
	uri := s.URI(key)
	tmp := temporaryKey(key)
	hr := newHashingReader(ctx, r)
	// Size -1: a multipart upload of PartSize parts, one buffered at a time.
	up, err := s.client.PutObject(ctx, s.bucket, tmp, hr, -1, minio.PutObjectOptions{
		PartSize:    uint64(s.partSize),
		ContentType: "application/octet-stream",
	})
	if err == nil {
		err = hr.failure() // a cancelled context may look like EOF to the upload
	}
	if err == nil && up.Size != hr.n {
		err = fmt.Errorf("uploaded %d bytes, read %d", up.Size, hr.n)
	}
	if err != nil {
		s.discard(ctx, tmp, true)
		if ferr := hr.failure(); ferr != nil {
			err = ferr
		}
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}

	sum := hr.sum()
	dst := minio.CopyDestOptions{
		Bucket:          s.bucket,
		Object:          key,
		UserMetadata:    map[string]string{sha256Meta: sum},
		ReplaceMetadata: true,
	}
	src := minio.CopySrcOptions{Bucket: s.bucket, Object: tmp, MatchETag: up.ETag}
	if hr.n <= s.copyLimit {
		_, err = s.client.CopyObject(ctx, dst, src)
	} else {
		// Copied in parts of up to 5 GiB; the metadata goes with the new upload.
		_, err = s.client.ComposeObject(ctx, dst, src)
	}
	s.discard(ctx, tmp, false)
	if err != nil {
		return Info{}, fmt.Errorf("put %s: copy from temporary object: %w", uri, err)
	}

	// The copy committed the object: a cancellation now is too late to matter.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	oi, err := s.client.StatObject(sctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, fmt.Errorf("put %s: stat: %w", uri, err)
	}
	info := infoOf(key, oi)
	if info.Size != hr.n || info.SHA256 != sum {
		return Info{}, fmt.Errorf("put %s: stored object has size %d and sha256 %q, want %d and %q",
			uri, info.Size, info.SHA256, hr.n, sum)
	}
	return info, nil
}

// discard removes the temporary object tmp and, after a failed upload, any
// unfinished multipart upload to it; best effort, even when ctx is already
// cancelled.
func (s *s3Store) discard(ctx context.Context, tmp string, upload bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if upload {
		_ = s.client.RemoveIncompleteUpload(ctx, s.bucket, tmp)
	}
	_ = s.client.RemoveObject(ctx, s.bucket, tmp, minio.RemoveObjectOptions{})
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("get: %w", err)
	}
	// One GET: its headers describe exactly the bytes that follow, and its
	// error body tells a missing key from a missing bucket.
	body, oi, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, fmt.Errorf("get %s: %w", s.URI(key), mapErr(err))
	}
	return body, infoOf(key, oi), nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("stat: %w", err)
	}
	oi, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", s.URI(key), mapErr(err))
	}
	return infoOf(key, oi), nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(mapErr(err), ErrNotFound) {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	return nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]Info, error) {
	var out []Info
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("list %s: %w", s.URI(prefix), oi.Err)
		}
		if hidden(oi.Key) || strings.HasSuffix(oi.Key, "/") {
			continue
		}
		out = append(out, infoOf(oi.Key, oi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
