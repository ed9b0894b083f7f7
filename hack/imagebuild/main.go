// Command imagebuild packs static binaries into a single-layer container image
// and writes it as an image tarball (the format `docker save` writes and
// `ctr images import` reads). The local cluster has no registry, so every image
// it runs is built this way from binaries built on the machine.
//
// The output is reproducible: every file, directory and the image config carry
// one fixed timestamp, entries are sorted and owned by 0:0, so the same inputs
// give the same image digest.
//
// With -oci it writes an OCI image layout archive instead (what `skopeo copy
// oci-archive:` and `crane push` read and `ctr images import` also takes),
// with OCI media types, and prints the manifest's digest: the digest the image
// has in any registry it is copied to as is. Releases are built this way.
//
// Example:
//
//	imagebuild -tag quay.io/coreos/etcd:v3.6.16 \
//	  -file /usr/local/bin/etcd=_output/bin/etcd-v3.6.16/etcd \
//	  -dir /tmp:1777 -entrypoint /usr/local/bin/etcd -o etcd.tar
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the timestamp of every entry and of the config: fixed so that
// rebuilding from the same binaries yields the same digest.
var epoch = time.Unix(0, 0).UTC()

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// entry is one path in the layer.
type entry struct {
	typ    byte   // tar.TypeReg, tar.TypeDir or tar.TypeSymlink
	mode   int64  // permission bits
	src    string // for regular files: the file to copy
	target string // for symlinks
}

func main() {
	var tags, files, dirs, links, envs multi
	var entrypoint, cmd, user, workdir, out string
	var oci bool
	flag.Var(&tags, "tag", "image reference to tag the image with (repeatable), e.g. quay.io/coreos/etcd:v3.6.16")
	flag.Var(&files, "file", "DEST=SRC: copy file SRC to absolute path DEST in the image, keeping its permission bits (repeatable)")
	flag.Var(&dirs, "dir", "DEST[:MODE]: create directory DEST with octal MODE, default 0755 (repeatable)")
	flag.Var(&links, "symlink", "DEST=TARGET: create symlink DEST pointing to TARGET (repeatable)")
	flag.Var(&envs, "env", "KEY=VALUE environment variable of the image (repeatable)")
	flag.StringVar(&entrypoint, "entrypoint", "", "entrypoint, split on spaces")
	flag.StringVar(&cmd, "cmd", "", "default command arguments, split on spaces")
	flag.StringVar(&user, "user", "", "user (uid or uid:gid) the image runs as")
	flag.StringVar(&workdir, "workdir", "", "working directory")
	flag.StringVar(&out, "o", "", "output tarball")
	flag.BoolVar(&oci, "oci", false, "write an OCI image layout archive with OCI media types, and print the manifest digest")
	flag.Parse()
	if len(tags) == 0 || out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: imagebuild -tag REF [-tag REF...] -o OUT.tar [-oci] [-file DEST=SRC...] [-dir DEST[:MODE]...] [-symlink DEST=TARGET...] [-env K=V...] [-entrypoint CMD] [-cmd ARGS] [-user UID]")
		os.Exit(2)
	}
	if err := run(tags, files, dirs, links, envs, entrypoint, cmd, user, workdir, out, oci); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(tags, files, dirs, links, envs []string, entrypoint, cmd, user, workdir, out string, oci bool) error {
	entries, err := layerEntries(files, dirs, links)
	if err != nil {
		return err
	}
	layerData, err := writeLayer(entries)
	if err != nil {
		return err
	}
	img, err := newImage(layerData, oci)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture = runtime.GOARCH
	cf.OS = "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Env = envs
	cf.Config.Entrypoint = strings.Fields(entrypoint)
	cf.Config.Cmd = strings.Fields(cmd)
	cf.Config.User = user
	cf.Config.WorkingDir = workdir
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	return writeImage(out, img, layerData, tags, oci)
}

// layout is the layer's entries by absolute path.
type layout map[string]entry

// add adds the entry at p, which only a directory may give twice.
func (l layout) add(p string, e entry) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("path %q in the image must be absolute", p)
	}
	p = path.Clean(p)
	if p == "/" {
		return fmt.Errorf("cannot add /")
	}
	if old, ok := l[p]; ok && !(old.typ == tar.TypeDir && e.typ == tar.TypeDir) {
		return fmt.Errorf("path %q given twice", p)
	}
	l[p] = e
	return nil
}

// layerEntries are the entries the flags ask for, and every parent
// directory of theirs, so that the layer is self-contained.
func layerEntries(files, dirs, links []string) (map[string]entry, error) {
	l := layout{}
	if err := l.addFiles(files); err != nil {
		return nil, err
	}
	if err := l.addDirs(dirs); err != nil {
		return nil, err
	}
	for _, link := range links {
		dest, target, ok := strings.Cut(link, "=")
		if !ok {
			return nil, fmt.Errorf("-symlink %q: want DEST=TARGET", link)
		}
		if err := l.add(dest, entry{typ: tar.TypeSymlink, mode: 0o777, target: target}); err != nil {
			return nil, err
		}
	}
	for p := range l {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := l[d]; !ok {
				l[d] = entry{typ: tar.TypeDir, mode: 0o755}
			}
		}
	}
	return l, nil
}

// addFiles adds the -file flags: regular files, with their permission bits.
func (l layout) addFiles(files []string) error {
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("-file %q: want DEST=SRC", f)
		}
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("-file %q: %s is not a regular file", f, src)
		}
		if err := l.add(dest, entry{typ: tar.TypeReg, mode: int64(st.Mode().Perm()), src: src}); err != nil {
			return err
		}
	}
	return nil
}

// addDirs adds the -dir flags, 0755 unless they say otherwise.
func (l layout) addDirs(dirs []string) error {
	for _, d := range dirs {
		dest, m, hasMode := strings.Cut(d, ":")
		mode := int64(0o755)
		if hasMode {
			v, err := strconv.ParseInt(m, 8, 32)
			if err != nil {
				return fmt.Errorf("-dir %q: bad mode: %v", d, err)
			}
			mode = v
		}
		if err := l.add(dest, entry{typ: tar.TypeDir, mode: mode}); err != nil {
			return err
		}
	}
	return nil
}

// newImage is the image of one layer, with OCI media types when oci.
func newImage(layerData []byte, oci bool) (v1.Image, error) {
	base, layerOpts := empty.Image, []tarball.LayerOption(nil)
	if oci {
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
		layerOpts = append(layerOpts, tarball.WithMediaType(types.OCILayer))
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	}, layerOpts...)
	if err != nil {
		return nil, err
	}
	return mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "imagebuild"},
	})
}

// writeImage writes img under every tag to out, an image tarball or with
// oci an OCI layout archive (then it prints the manifest's digest).
func writeImage(out string, img v1.Image, layerData []byte, tags []string, oci bool) error {
	refs := map[name.Reference]v1.Image{}
	var ociTags []name.Tag
	for _, t := range tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("-tag %q: %v", t, err)
		}
		refs[tag] = img
		ociTags = append(ociTags, tag)
	}
	// Write next to the target and rename, so a reader never sees half a file.
	tmp := out + ".tmp"
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	var err error
	if oci {
		err = writeOCIArchive(tmp, img, layerData, ociTags)
	} else {
		err = tarball.MultiRefWriteToFile(tmp, refs)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	if oci {
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Println(d)
	}
	return nil
}

// writeOCIArchive writes img as a tar of an OCI image layout: oci-layout,
// index.json with one entry per tag, and the blobs. Every entry has the fixed
// timestamp, so the archive is as reproducible as the image. The layer's bytes
// are those the image's digests were computed from.
func writeOCIArchive(path string, img v1.Image, layerData []byte, tags []name.Tag) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	indexJSON, err := ociIndex(img, manifest, tags)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	blobs := [][]byte{config, layerData, manifest}
	sort.Slice(blobs, func(i, j int) bool { return sha(blobs[i]).Hex < sha(blobs[j]).Hex })
	for _, b := range blobs {
		if err := tarFile(tw, "blobs/sha256/"+sha(b).Hex, b); err != nil {
			return err
		}
	}
	if err := tarFile(tw, "index.json", indexJSON); err != nil {
		return err
	}
	if err := tarFile(tw, "oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// ociIndex is the index.json of an OCI layout: the manifest once per tag.
func ociIndex(img v1.Image, manifest []byte, tags []name.Tag) ([]byte, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	desc := v1.Descriptor{MediaType: mt, Size: int64(len(manifest)), Digest: sha(manifest)}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for _, t := range tags {
		d := desc
		// ref.name is the tag (what `oci-archive:FILE:TAG` selects);
		// containerd names the image it imports by the full reference.
		d.Annotations = map[string]string{
			"org.opencontainers.image.ref.name": t.TagStr(),
			"io.containerd.image.name":          t.Name(),
		}
		index.Manifests = append(index.Manifests, d)
	}
	return json.Marshal(index)
}

// tarFile writes a regular file of an OCI layout archive.
func tarFile(tw *tar.Writer, n string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

func sha(b []byte) v1.Hash {
	h, _, _ := v1.SHA256(bytes.NewReader(b))
	return h
}

// writeLayer returns the gzip-compressed tar of the entries, sorted by path.
// It compresses once, here: ggcr recognises gzip input and reuses it as is.
func writeLayer(entries map[string]entry) ([]byte, error) {
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		e := entries[p]
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    e.mode,
			ModTime: epoch,
			Format:  tar.FormatPAX,
		}
		switch e.typ {
		case tar.TypeDir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
		case tar.TypeSymlink:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.target
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			data, err := os.ReadFile(e.src)
			if err != nil {
				return nil, err
			}
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(data))
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
