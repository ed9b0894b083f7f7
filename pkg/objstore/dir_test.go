package objstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirFixture(t *testing.T) (fixture, string) {
	root := t.TempDir()
	return fixture{
		store: NewDir(root),
		raw: func(t *testing.T) []string {
			var names []string
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(root, p)
				names = append(names, filepath.ToSlash(rel))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return names
		},
		big: 3<<20 + 12345,
	}, root
}

func TestDir(t *testing.T) {
	fx, _ := dirFixture(t)
	testStore(t, fx)
}

func TestDirLayout(t *testing.T) {
	ctx := context.Background()
	fx, root := dirFixture(t)
	s := fx.store

	info, err := s.Put(ctx, "c1/snap.db", strings.NewReader("snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "c1", "snap.db")
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "snapshot" {
		t.Fatalf("data file: %q, %v", b, err)
	}
	// The sidecar is what sha256sum(1) writes and checks.
	side, err := os.ReadFile(p + ".sha256")
	if want := info.SHA256 + "  snap.db\n"; err != nil || string(side) != want {
		t.Errorf("sidecar = %q, %v; want %q", side, err, want)
	}
	for _, name := range []string{p, p + ".sha256"} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != filePerm {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, os.FileMode(filePerm))
		}
	}

	if got, want := s.URI("c1/snap.db"), "file://"+filepath.ToSlash(root)+"/c1/snap.db"; got != want {
		t.Errorf("URI = %q, want %q", got, want)
	}
	if got := NewDir("/var/backups/").URI("a/b"); got != "file:///var/backups/a/b" {
		t.Errorf("URI = %q", got)
	}

	// Without a sidecar the checksum is unknown, not an error.
	if err := os.Remove(p + ".sha256"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Stat(ctx, "c1/snap.db"); err != nil || st.SHA256 != "" || st.Size != 8 {
		t.Errorf("Stat without sidecar = %+v, %v", st, err)
	}

	// A directory of keys is not an object.
	if _, err := s.Stat(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat(dir) = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Get(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(dir) = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "c1"); err != nil {
		t.Errorf("Delete(dir) = %v", err)
	}
	// A key below an object is missing, not an error.
	if _, err := s.Stat(ctx, "c1/snap.db/x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat below a file = %v, want ErrNotFound", err)
	}

	// Leftovers of a crashed Put stay hidden.
	for _, name := range []string{"c1/old.db.partial-123", "c1/other.db.sha256"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.List(ctx, "")
	if err != nil || len(l) != 1 || l[0].Key != "c1/snap.db" {
		t.Errorf("List = %+v, %v; want only c1/snap.db", l, err)
	}

	if _, err := s.List(ctx, "../x/"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("List(../x/) = %v, want ErrInvalidKey", err)
	}
	if l, err := NewDir(filepath.Join(root, "absent")).List(ctx, ""); err != nil || len(l) != 0 {
		t.Errorf("List of a missing root = %v, %v", l, err)
	}
}
