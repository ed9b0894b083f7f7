//go:build release

// Package release tests make release: run by make release-test (build tag
// release), not by go test ./..., since it builds the operator image.
package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const version = "v0.0.0-test"

var root = func() string { d, _ := filepath.Abs("../.."); return d }()

// release runs make release into dir and returns the files it wrote.
func release(t *testing.T, dir, repo string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("make", "-C", root, "--no-print-directory", "release",
		"VERSION="+version, "IMAGE_REPO="+repo, "RELEASE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// kubeVersion is the local cluster's Kubernetes (hack/cluster/versions.sh).
func kubeVersion(t *testing.T) string {
	t.Helper()
	versions, err := os.ReadFile(filepath.Join(root, "hack/cluster/versions.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`KUBE_VERSION=\$\{KUBE_VERSION:-([^}]+)\}`).FindSubmatch(versions)
	if m == nil {
		t.Fatal("no KUBE_VERSION in hack/cluster/versions.sh")
	}
	return string(m[1])
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// untar returns the regular files of a tar stream by name.
func untar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

// imageDigest checks the OCI archive (every blob's digest and size, the
// tag, how the image runs) and returns its manifest's digest.
func imageDigest(t *testing.T, archive []byte, ref string) string {
	t.Helper()
	files := untar(t, bytes.NewReader(archive))
	blob := func(d descriptor) []byte {
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok || sha(b) != d.Digest || len(b) != d.Size {
			t.Fatalf("blob %s: present %v, digest %s, size %d of %d", d.Digest, ok, sha(b), len(b), d.Size)
		}
		return b
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	m := index.Manifests[0]
	_, tag, _ := strings.Cut(ref, ":")
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Annotations["org.opencontainers.image.ref.name"] != version ||
		m.Annotations["io.containerd.image.name"] != ref || tag != version {
		t.Errorf("index.json's manifest: %+v, want an OCI manifest tagged %s", m, ref)
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(m), &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		Config struct {
			Entrypoint []string
			User       string
		}
	}
	if err := json.Unmarshal(blob(manifest.Config), &config); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(config.Config.Entrypoint, []string{"/raftsman"}) || config.Config.User != "65532:65532" {
		t.Errorf("the image runs %v as %q, want /raftsman as 65532:65532", config.Config.Entrypoint, config.Config.User)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	layer, err := gzip.NewReader(bytes.NewReader(blob(manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	if bin := untar(t, layer)["raftsman"]; len(bin) < 1<<20 {
		t.Errorf("the layer's /raftsman has %d bytes", len(bin))
	}
	return m.Digest
}

type object = map[string]any

func parse(t *testing.T, data []byte) map[string]object {
	t.Helper()
	objs := map[string]object{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatal(err)
		}
		if len(o) > 0 {
			md := o["metadata"].(map[string]any)
			objs[fmt.Sprintf("%v/%v/%v/%v", o["apiVersion"], o["kind"], md["namespace"], md["name"])] = o
		}
	}
}

// deploymentImage is the image of the only Deployment, which it then
// replaces by "IMAGE" in objs.
func deploymentImage(t *testing.T, objs map[string]object) string {
	t.Helper()
	image := ""
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			c := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			if image != "" {
				t.Fatal("two Deployments")
			}
			image, c["image"] = c["image"].(string), "IMAGE"
		}
	}
	return image
}

// TestRelease: make release builds the image as an OCI archive and names it
// by tag and digest in the installs and in the chart, which are dist/'s and
// charts/raftsman's but for the image. The image is reproducible: built again
// for another repository, it has the same digest.
func TestRelease(t *testing.T) {
	const repo = "ghcr.io/raftsman/raftsman"
	files := release(t, t.TempDir(), repo)
	archive := "raftsman-" + version + ".oci.tar"
	chart := "raftsman-" + strings.TrimPrefix(version, "v") + ".tgz"
	for _, f := range []string{archive, "install.yaml", "install-namespaced.yaml", chart, "SHA256SUMS"} {
		if files[f] == nil {
			t.Fatalf("make release wrote no %s; it wrote %d files", f, len(files))
		}
	}
	digest := imageDigest(t, files[archive], repo+":"+version)
	want := repo + ":" + version + "@" + digest
	t.Logf("image %s", want)

	for f, dist := range map[string]string{"install.yaml": "dist/install.yaml", "install-namespaced.yaml": "dist/install-namespaced.yaml"} {
		got := parse(t, files[f])
		if image := deploymentImage(t, got); image != want {
			t.Errorf("%s names %s, want %s", f, image, want)
		}
		data, err := os.ReadFile(filepath.Join(root, dist))
		if err != nil {
			t.Fatal(err)
		}
		d := parse(t, data)
		deploymentImage(t, d)
		if !reflect.DeepEqual(got, d) {
			t.Errorf("%s is not %s but for the image", f, dist)
		}
	}

	// The chart: its metadata, its values, and what it renders.
	z, err := gzip.NewReader(bytes.NewReader(files[chart]))
	if err != nil {
		t.Fatal(err)
	}
	ch := untar(t, z)
	var meta struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(ch["raftsman/Chart.yaml"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Version != strings.TrimPrefix(version, "v") || meta.AppVersion != version {
		t.Errorf("Chart.yaml: version %s, appVersion %s", meta.Version, meta.AppVersion)
	}
	var values struct {
		Image struct{ Repository, Tag, Digest string }
	}
	if err := yaml.Unmarshal(ch["raftsman/values.yaml"], &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != repo || values.Image.Tag != version || values.Image.Digest != digest {
		t.Errorf("values.yaml's image: %+v", values.Image)
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM is not set: run make release-test")
	}
	chartPath := filepath.Join(t.TempDir(), chart)
	if err := os.WriteFile(chartPath, files[chart], 0o644); err != nil {
		t.Fatal(err)
	}
	// The chart's kubeVersion refuses the Kubernetes our helm assumes without
	// a cluster (1.20): render for the local cluster's.
	out, err := exec.Command(helm, "template", "raftsman", chartPath, "--namespace", "raftsman-system",
		"--kube-version", kubeVersion(t)).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	if image := deploymentImage(t, parse(t, out)); image != want {
		t.Errorf("the chart renders %s, want %s", image, want)
	}

	for _, line := range strings.Split(strings.TrimSpace(string(files["SHA256SUMS"])), "\n") {
		sum, name, _ := strings.Cut(line, "  ")
		if "sha256:"+sum != sha(files[name]) {
			t.Errorf("SHA256SUMS: %s", line)
		}
	}

	// Again, for another repository: the same image, named there.
	const other = "registry.example/etcd/raftsman"
	again := release(t, t.TempDir(), other)
	if d := imageDigest(t, again[archive], other+":"+version); d != digest {
		t.Errorf("built again, the image has digest %s, first %s", d, digest)
	}
	if image := deploymentImage(t, parse(t, again["install.yaml"])); image != other+":"+version+"@"+digest {
		t.Errorf("IMAGE_REPO=%s: install.yaml names %s", other, image)
	}
}
