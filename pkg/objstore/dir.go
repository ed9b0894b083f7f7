package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Backups hold every key of an etcd cluster, so only the owner may read them.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// dirStore keeps each object as a file under root; a key's "/" separators
// become subdirectories. Its checksum sits beside it in key+".sha256", in the
// format of sha256sum(1).
type dirStore struct {
	root string
}

// NewDir returns a Store that keeps objects as files under the directory
// root (an absolute path, typically a mounted volume), creating
// subdirectories as keys need them. Each object's SHA-256 is kept in a
// sidecar file key+".sha256" that sha256sum -c understands.
func NewDir(root string) Store {
	return &dirStore{root: root}
}

func (d *dirStore) URI(key string) string {
	return "file://" + path.Join(filepath.ToSlash(d.root), key)
}

func (d *dirStore) path(key string) string {
	return filepath.Join(d.root, filepath.FromSlash(key))
}

// notExist reports whether err means that a path, or one of its parents, is missing.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func (d *dirStore) Put(ctx context.Context, key string, r io.Reader) (info Info, err error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("put: %w", err)
	}
	uri := d.URI(key)
	p := d.path(key)
	dir, base := filepath.Split(p)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	f, err := os.CreateTemp(dir, base+partialMarker+"*")
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()

	hr := newHashingReader(ctx, r)
	// Hide the file's ReadFrom so that the large buffer is used.
	if _, err := io.CopyBuffer(struct{ io.Writer }{f}, hr, make([]byte, 1<<20)); err != nil {
		if ferr := hr.failure(); ferr != nil {
			err = ferr
		}
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	if err := ctx.Err(); err != nil {
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("put %s: sync: %w", uri, err)
	}
	if err := f.Close(); err != nil {
		return Info{}, fmt.Errorf("put %s: close: %w", uri, err)
	}
	sum := hr.sum()
	// The checksum lands first, so a complete object always has one.
	if err := writeFileAtomic(p+sha256Suffix, []byte(sum+"  "+base+"\n")); err != nil {
		return Info{}, fmt.Errorf("put %s: checksum: %w", uri, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(p + sha256Suffix)
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	_ = syncDir(dir)
	fi, err := os.Stat(p)
	if err != nil {
		return Info{}, fmt.Errorf("put %s: %w", uri, err)
	}
	return Info{Key: key, Size: hr.n, SHA256: sum, LastModified: fi.ModTime()}, nil
}

// writeFileAtomic writes data to a temporary file beside name, syncs it and
// renames it over name.
func writeFileAtomic(name string, data []byte) error {
	dir, base := filepath.Split(name)
	f, err := os.CreateTemp(dir, base+partialMarker+"*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// readSum returns the checksum recorded for the file p, or "".
func readSum(p string) string {
	b, err := os.ReadFile(p + sha256Suffix)
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || !validSHA256(fields[0]) {
		return ""
	}
	return strings.ToLower(fields[0])
}

func (d *dirStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("get: %w", err)
	}
	uri := d.URI(key)
	p := d.path(key)
	f, err := os.Open(p)
	if notExist(err) {
		return nil, Info{}, fmt.Errorf("get %s: %w", uri, ErrNotFound)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("get %s: %w", uri, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("get %s: %w", uri, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, Info{}, fmt.Errorf("get %s: %w", uri, ErrNotFound)
	}
	return f, Info{Key: key, Size: fi.Size(), SHA256: readSum(p), LastModified: fi.ModTime()}, nil
}

func (d *dirStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("stat: %w", err)
	}
	uri := d.URI(key)
	p := d.path(key)
	fi, err := os.Stat(p)
	if notExist(err) || (err == nil && !fi.Mode().IsRegular()) {
		return Info{}, fmt.Errorf("stat %s: %w", uri, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", uri, err)
	}
	return Info{Key: key, Size: fi.Size(), SHA256: readSum(p), LastModified: fi.ModTime()}, nil
}

func (d *dirStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	uri := d.URI(key)
	p := d.path(key)
	fi, err := os.Lstat(p)
	if err == nil && fi.IsDir() {
		return nil // a directory of other keys, not an object
	}
	for _, name := range []string{p, p + sha256Suffix} {
		if err := os.Remove(name); err != nil && !notExist(err) {
			return fmt.Errorf("delete %s: %w", uri, err)
		}
	}
	return nil
}

func (d *dirStore) List(ctx context.Context, prefix string) ([]Info, error) {
	// Walk only the directory that holds every key with this prefix.
	start := d.root
	if i := strings.LastIndex(prefix, "/"); i > 0 {
		if err := checkKey(prefix[:i]); err != nil {
			return nil, fmt.Errorf("list %s: bad prefix: %w", d.URI(prefix), err)
		}
		start = d.path(prefix[:i])
	}
	var out []Info
	err := filepath.WalkDir(start, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if p == start && notExist(err) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !de.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || hidden(key) {
			return nil
		}
		fi, err := de.Info()
		if notExist(err) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		out = append(out, Info{Key: key, Size: fi.Size(), SHA256: readSum(p), LastModified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.URI(prefix), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
