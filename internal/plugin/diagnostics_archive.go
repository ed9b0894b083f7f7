package plugin

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// archive is the diagnostics tar.gz: files under one folder, and a
// README.txt listing them and what could not be collected.
type archive struct {
	gz      *gzip.Writer
	tw      *tar.Writer
	dir     string
	now     time.Time
	files   []string
	missing []string
	// err is the first write error: the archive is unusable after it.
	err error
}

func newArchive(w io.Writer, dir string, now time.Time) *archive {
	gz := gzip.NewWriter(w)
	return &archive{gz: gz, tw: tar.NewWriter(gz), dir: dir, now: now}
}

// add writes one file.
func (a *archive) add(name string, data []byte) {
	if a.err != nil {
		return
	}
	h := &tar.Header{Name: path.Join(a.dir, name), Mode: 0o644, Size: int64(len(data)), ModTime: a.now, Typeflag: tar.TypeReg}
	if a.err = a.tw.WriteHeader(h); a.err == nil {
		_, a.err = a.tw.Write(data)
	}
	a.files = append(a.files, fmt.Sprintf("%-56s %10d bytes", name, len(data)))
}

// addYAML writes v as YAML, or notes why it cannot.
func (a *archive) addYAML(name string, v any) {
	data, err := yaml.Marshal(v)
	if err != nil {
		a.fail(name, err)
		return
	}
	a.add(name, data)
}

// fail notes what could not be collected and why.
func (a *archive) fail(what string, err error) {
	a.missing = append(a.missing, fmt.Sprintf("%s: %v", what, err))
}

// close writes README.txt, with header first, and ends the archive.
func (a *archive) close(header string) error {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\nFiles:\n")
	for _, f := range a.files {
		b.WriteString("  " + f + "\n")
	}
	b.WriteString("\nNot collected:\n")
	if len(a.missing) == 0 {
		b.WriteString("  nothing: everything above was collected\n")
	}
	for _, m := range a.missing {
		b.WriteString("  " + m + "\n")
	}
	a.add("README.txt", []byte(b.String()))
	if a.err != nil {
		return a.err
	}
	if err := a.tw.Close(); err != nil {
		return err
	}
	return a.gz.Close()
}
