// Package objstore stores etcd backups: whole objects, written once as a
// stream and read back as a stream, in S3-compatible storage or in a
// directory (for example a mounted PersistentVolumeClaim).
//
// An object becomes visible under its key only once all of its bytes are
// stored and its SHA-256 is recorded next to it, so a reader never sees a
// half-written backup.
package objstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrNotFound is returned (wrapped) when no complete object exists under a key.
var ErrNotFound = errors.New("object not found")

// ErrInvalidKey is returned (wrapped) for a key that a Store refuses: empty,
// absolute, not UTF-8, with empty, "." or ".." segments, or with a segment
// that could be mistaken for a temporary object or a checksum sidecar
// (containing ".partial-" or ending in ".sha256").
var ErrInvalidKey = errors.New("invalid object key")

// Info describes a stored object.
type Info struct {
	// Key is the object's key in its store.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of the object's bytes, recorded when it was
	// stored; "" when the store does not know it.
	SHA256 string
	// LastModified is when the object was completed.
	LastModified time.Time
}

// Store keeps whole objects under "/"-separated keys.
type Store interface {
	// Put streams r to key. The object appears under key only once every
	// byte of r is stored and its size and SHA-256 are recorded. If r fails
	// or ctx is cancelled, Put returns an error and nothing exists under key.
	// The data is staged under a temporary key that is removed on success
	// and, best effort, on failure. Memory use does not grow with the size
	// of the stream.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// Get opens key for reading. Info carries Size and the recorded SHA256
	// ("" if none). The caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes key.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes key and its recorded checksum; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the complete objects whose key starts with prefix, sorted
	// by key. Temporary objects of unfinished Puts and checksum sidecars are
	// never listed. SHA256 may be "" in List results where the store can only
	// tell it object by object (S3); Stat and Get always report it.
	List(ctx context.Context, prefix string) ([]Info, error)
	// URI names key for humans and status fields: s3://bucket/key or
	// file://<root>/key.
	URI(key string) string
}

const (
	// partialMarker separates a key from the random suffix of its temporary key.
	partialMarker = ".partial-"
	// sha256Suffix names the checksum sidecar of a key in a Dir store.
	sha256Suffix = ".sha256"
)

// checkKey reports whether key is acceptable to every Store.
func checkKey(key string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why)
	}
	switch {
	case key == "":
		return bad("empty")
	case strings.HasPrefix(key, "/"):
		return bad("absolute")
	case !utf8.ValidString(key):
		return bad("not UTF-8")
	case strings.ContainsRune(key, 0):
		return bad("contains NUL")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad(`"." or ".." path segment`)
		case strings.Contains(seg, partialMarker):
			return bad("contains " + partialMarker)
		case strings.HasSuffix(seg, sha256Suffix):
			return bad("ends in " + sha256Suffix)
		}
	}
	return nil
}

// hidden reports whether a stored name is a temporary object or a sidecar,
// which List never returns.
func hidden(key string) bool {
	base := key[strings.LastIndex(key, "/")+1:]
	return strings.Contains(base, partialMarker) || strings.HasSuffix(base, sha256Suffix)
}

// temporaryKey returns key with a fresh random ".partial-" suffix.
func temporaryKey(key string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails, see crypto/rand.Read
	return key + partialMarker + hex.EncodeToString(b[:])
}

// hashingReader counts and hashes what is read through it, remembers the
// first error of the underlying reader and stops once ctx is done.
type hashingReader struct {
	ctx context.Context
	r   io.Reader
	h   hash.Hash
	n   int64
	err error // first error from r other than io.EOF
}

func newHashingReader(ctx context.Context, r io.Reader) *hashingReader {
	return &hashingReader{ctx: ctx, r: r, h: sha256.New()}
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	if hr.err != nil {
		return 0, hr.err
	}
	if err := hr.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	hr.n += int64(n)
	if err != nil && err != io.EOF {
		hr.err = err
	}
	return n, err
}

// sum returns the hex SHA-256 of everything read so far.
func (hr *hashingReader) sum() string { return hex.EncodeToString(hr.h.Sum(nil)) }

// failure returns why reading stopped early: the source's error or the
// context's, or nil.
func (hr *hashingReader) failure() error {
	if hr.err != nil {
		return fmt.Errorf("reading source: %w", hr.err)
	}
	return hr.ctx.Err()
}

// validSHA256 reports whether s looks like a hex SHA-256.
func validSHA256(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
