package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// data returns n reproducible pseudo-random bytes for seed, without holding
// them in memory, and their hex SHA-256.
func data(seed uint64, n int64) (func() io.Reader, string) {
	open := func() io.Reader {
		var s [32]byte
		s[0] = byte(seed)
		s[1] = byte(seed >> 8)
		return io.LimitReader(rand.NewChaCha8(s), n)
	}
	h := sha256.New()
	if _, err := io.Copy(h, open()); err != nil {
		panic(err)
	}
	return open, hex.EncodeToString(h.Sum(nil))
}

var errBoom = errors.New("boom: source failed")

// failingReader passes through n bytes of r, then fails with errBoom.
type failingReader struct {
	r io.Reader
	n int64
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

// cancellingReader passes r through and calls cancel once n bytes are read.
type cancellingReader struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// fixture is one Store under test with a view of everything it left
// behind, including temporary data that List hides.
type fixture struct {
	store Store
	// raw lists every name the store's backing holds, temporary ones too.
	raw func(t *testing.T) []string
	// big is a stream length that spans several writes or parts.
	big int64
}

func readAll(t *testing.T, s Store, key string) ([]byte, Info) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return b, info
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// assertNothingLeft fails if any stored name contains ".partial-" or
// starts with prefix (when prefix is not "").
func assertNothingLeft(t *testing.T, fx fixture, prefix string) {
	t.Helper()
	for _, name := range fx.raw(t) {
		if strings.Contains(name, partialMarker) || (prefix != "" && strings.HasPrefix(name, prefix)) {
			t.Errorf("left behind: %s", name)
		}
	}
}

// testStore runs the behaviours every Store shares.
func testStore(t *testing.T, fx fixture) {
	ctx := context.Background()
	s := fx.store

	t.Run("RoundTrip", func(t *testing.T) {
		for _, tc := range []struct {
			key  string
			size int64
		}{
			{"rt/empty", 0},
			{"rt/one", 1},
			{"rt/dir/sub/snapshot.db", 100 << 10},
			{"rt/with space/ünïcode-2026-01-02T03:04:05Z.db", 3 << 10},
			{"rt/big", fx.big},
		} {
			t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
				open, want := data(uint64(tc.size), tc.size)
				info, err := s.Put(ctx, tc.key, open())
				if err != nil {
					t.Fatalf("Put: %v", err)
				}
				if info.Key != tc.key || info.Size != tc.size || info.SHA256 != want || info.LastModified.IsZero() {
					t.Errorf("Put = %+v, want key %q size %d sha256 %s", info, tc.key, tc.size, want)
				}
				got, ginfo := readAll(t, s, tc.key)
				if int64(len(got)) != tc.size || sumOf(got) != want {
					t.Errorf("Get returned %d bytes with sha256 %s, want %d and %s", len(got), sumOf(got), tc.size, want)
				}
				if ginfo.Size != tc.size || ginfo.SHA256 != want {
					t.Errorf("Get info = %+v, want size %d sha256 %s", ginfo, tc.size, want)
				}
				st, err := s.Stat(ctx, tc.key)
				if err != nil {
					t.Fatalf("Stat: %v", err)
				}
				if st.Key != tc.key || st.Size != tc.size || st.SHA256 != want || st.LastModified.IsZero() {
					t.Errorf("Stat = %+v, want size %d sha256 %s", st, tc.size, want)
				}
			})
		}
		assertNothingLeft(t, fx, "")
	})

	t.Run("Overwrite", func(t *testing.T) {
		for i, content := range []string{"first version", "second"} {
			info, err := s.Put(ctx, "ow/key", strings.NewReader(content))
			if err != nil {
				t.Fatalf("Put %d: %v", i, err)
			}
			got, ginfo := readAll(t, s, "ow/key")
			if string(got) != content || ginfo.SHA256 != sumOf([]byte(content)) || info.SHA256 != ginfo.SHA256 {
				t.Errorf("after Put %d: Get = %q %+v", i, got, ginfo)
			}
		}
	})

	t.Run("List", func(t *testing.T) {
		keys := []string{"ls/b/2", "ls/a", "ls/b/1", "ls/a.b", "ls/c/deep/er", "lsx"}
		for _, k := range keys {
			if _, err := s.Put(ctx, k, strings.NewReader(k)); err != nil {
				t.Fatalf("Put(%q): %v", k, err)
			}
		}
		// A failed Put leaves no temporary object for List to show.
		if _, err := s.Put(ctx, "ls/failed", &failingReader{r: strings.NewReader("xxxxxxxx"), n: 4}); err == nil {
			t.Fatal("Put with a failing reader succeeded")
		}
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"ls/", []string{"ls/a", "ls/a.b", "ls/b/1", "ls/b/2", "ls/c/deep/er"}},
			{"ls", []string{"ls/a", "ls/a.b", "ls/b/1", "ls/b/2", "ls/c/deep/er", "lsx"}},
			{"ls/a", []string{"ls/a", "ls/a.b"}},
			{"ls/b/", []string{"ls/b/1", "ls/b/2"}},
			{"ls/c/de", []string{"ls/c/deep/er"}},
			{"ls/nope/", nil},
			{"nope", nil},
		} {
			t.Run(tc.prefix, func(t *testing.T) {
				infos, err := s.List(ctx, tc.prefix)
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				var got []string
				for _, in := range infos {
					got = append(got, in.Key)
					if in.Size != int64(len(in.Key)) || in.LastModified.IsZero() {
						t.Errorf("List entry %+v: want size %d and a time", in, len(in.Key))
					}
					if in.SHA256 != "" && in.SHA256 != sumOf([]byte(in.Key)) {
						t.Errorf("List entry %+v: wrong sha256", in)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
				}
			})
		}
	})

	t.Run("FailingReader", func(t *testing.T) {
		for _, after := range []int64{0, 100, fx.big / 2, fx.big - 1} {
			t.Run(fmt.Sprint(after), func(t *testing.T) {
				key := fmt.Sprintf("fail/%d", after)
				open, _ := data(1, fx.big)
				_, err := s.Put(ctx, key, &failingReader{r: open(), n: after})
				if !errors.Is(err, errBoom) {
					t.Fatalf("Put = %v, want the reader's error", err)
				}
				if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
					t.Errorf("Stat after failed Put = %v, want ErrNotFound", err)
				}
				if l, err := s.List(ctx, "fail/"); err != nil || len(l) != 0 {
					t.Errorf("List after failed Put = %v, %v; want nothing", l, err)
				}
				assertNothingLeft(t, fx, "fail/")
			})
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		for _, after := range []int64{1, fx.big / 2} {
			t.Run(fmt.Sprint(after), func(t *testing.T) {
				key := fmt.Sprintf("cancel/%d", after)
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				open, _ := data(2, fx.big)
				_, err := s.Put(cctx, key, &cancellingReader{r: open(), n: after, cancel: cancel})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Put = %v, want context.Canceled", err)
				}
				if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
					t.Errorf("Stat after cancelled Put = %v, want ErrNotFound", err)
				}
				assertNothingLeft(t, fx, "cancel/")
			})
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		for _, key := range []string{
			"", "/abs", "..", "../up", "a/../b", "a/..", ".", "a/./b", "a//b", "a/",
			"a.partial-1234", "dir.partial-x/b", "a.sha256", "x.sha256/y", "bad\xffutf8", "nul\x00",
		} {
			t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
				if _, err := s.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Put = %v, want ErrInvalidKey", err)
				}
				if _, _, err := s.Get(ctx, key); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Get = %v, want ErrInvalidKey", err)
				}
				if _, err := s.Stat(ctx, key); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Stat = %v, want ErrInvalidKey", err)
				}
				if err := s.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("Delete = %v, want ErrInvalidKey", err)
				}
			})
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		for _, key := range []string{"missing", "nf/missing/deeper", "rt"} {
			if _, _, err := s.Get(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
			}
			if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
				t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
			}
			if err := s.Delete(ctx, key); err != nil {
				t.Errorf("Delete(%q) = %v, want nil", key, err)
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		const key = "del/obj"
		if _, err := s.Put(ctx, key, strings.NewReader("to be deleted")); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("Delete %d: %v", i, err)
			}
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
		}
		assertNothingLeft(t, fx, "del/obj")
	})

	t.Run("Concatenated", func(t *testing.T) {
		// A reader that returns data and EOF together, in small pieces.
		parts := []io.Reader{strings.NewReader("abc"), bytes.NewReader(nil), strings.NewReader("def")}
		info, err := s.Put(ctx, "cat/obj", io.MultiReader(parts...))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size != 6 || info.SHA256 != sumOf([]byte("abcdef")) {
			t.Errorf("Put = %+v", info)
		}
	})
}
