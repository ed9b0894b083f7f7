// Command chartgen writes the Helm chart charts/raftsman from the kustomize
// installs, so that the chart and dist/install.yaml have one source: config/.
// `make dist` runs it after rendering dist/; `make verify-generated` fails when
// the committed chart differs from what it writes.
//
// It reads the cluster-wide install (config/default), the namespaced one
// (config/namespaced), the Prometheus objects (config/prometheus), when the
// folder exists, the Grafana dashboards' ConfigMaps (config/grafana), and the
// chart's hand-written Chart.yaml, and writes:
//   - templates/: one file per object, with the values below put in, the
//     CRDs among them (behind crds.enabled, with helm.sh/resource-policy:
//     keep), so that helm upgrade upgrades them;
//   - values.yaml: the defaults, taken from the installs (image, replicas,
//     shards, resources), with the comments of values.yaml.tmpl;
//   - values.schema.json: hack/chartgen/values.schema.json as it is, the
//     values' types, written by hand;
//   - README.md: README.md.tmpl with a table of the values: each one's
//     comment in values.yaml, type in the schema, and default. Every value
//     must have a comment and a type, and the schema no key values.yaml lacks.
//
// What the templates change, and nothing else:
//   - the operator's namespace becomes the release's; object names starting with
//     the Deployment's name ("raftsman") start with the chart's fullname instead,
//     and so do the references to them, so that releases in other namespaces share
//     no cluster-scoped object. Release "raftsman" in raftsman-system renders the
//     names and namespaces of dist/install.yaml.
//   - the Deployment: replicas, image, pull policy, --shards, resources, and
//     --watch-namespaces, extra flags, pull secrets, the service account, Pod
//     labels and annotations and scheduling when set.
//   - labels: every object gets the chart's (app.kubernetes.io/name, instance,
//     version, managed-by, helm.sh/chart), and the selectors of the
//     operator's Pods by app.kubernetes.io/name select the chart's name;
//     PodMonitors, the PrometheusRule, dashboards and the Namespace get the
//     labels of a value too.
//   - watchNamespaces: objects only config/default has (the ClusterRoleBinding)
//     are rendered when it is empty; those only config/namespaced has, one per
//     watched namespace (the RoleBindings), for each namespace in it.
//   - the Namespace, the Prometheus objects and the dashboards each behind a value.
//
// The two installs must differ only as it expects (objects in one and not the
// other, and the --watch-namespaces flag); anything else is an error, so that a
// change to config/ that the chart cannot follow is noticed at `make dist`.
// Inputs are kustomization folders (rendered with -kubectl) or rendered files.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	var in inputs
	var out string
	flag.StringVar(&in.kubectl, "kubectl", "kubectl", "kubectl, to render the inputs that are kustomization folders")
	flag.StringVar(&in.cluster, "default", "config/default", "the cluster-wide install: a kustomization folder or a rendered file")
	flag.StringVar(&in.namespaced, "namespaced", "config/namespaced", "the install limited to some namespaces: a kustomization folder or a rendered file")
	flag.StringVar(&in.prometheus, "prometheus", "config/prometheus", "the Prometheus Operator objects: a kustomization folder or a rendered file; empty for none")
	flag.StringVar(&in.grafana, "grafana", "config/grafana", "the dashboards' ConfigMaps: a kustomization folder, or a folder of YAML files; ignored when missing")
	flag.StringVar(&out, "out", "charts/raftsman", "the chart's folder")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: chartgen [-kubectl PATH] [-default IN] [-namespaced IN] [-prometheus IN] [-grafana DIR] [-out DIR]")
		os.Exit(2)
	}
	if err := run(in, out); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

type inputs struct {
	kubectl, cluster, namespaced, prometheus, grafana string
}

func run(in inputs, out string) error {
	src := &sources{}
	var err error
	if src.cluster, err = load(in.cluster, in.kubectl); err != nil {
		return err
	}
	if src.namespaced, err = load(in.namespaced, in.kubectl); err != nil {
		return err
	}
	if in.prometheus != "" {
		if src.prometheus, err = load(in.prometheus, in.kubectl); err != nil {
			return err
		}
	}
	if src.grafana, err = loadDashboards(in.grafana, in.kubectl); err != nil {
		return err
	}
	if src.chart, err = os.ReadFile(filepath.Join(out, "Chart.yaml")); err != nil {
		return err
	}
	files, err := generate(src)
	if err != nil {
		return err
	}
	return write(out, files)
}

// load reads the objects of a rendered file, or renders a kustomization folder.
func load(path, kubectl string) ([]object, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var data []byte
	if st.IsDir() {
		cmd := exec.Command(kubectl, "kustomize", path)
		cmd.Stderr = os.Stderr
		if data, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", path, err)
		}
	} else if data, err = os.ReadFile(path); err != nil {
		return nil, err
	}
	objs, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// loadDashboards reads the dashboards' folder: rendered when it holds a
// kustomization, else every *.yaml file in it, in name order. A missing folder
// has none.
func loadDashboards(dir, kubectl string) ([]object, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err == nil {
		return load(dir, kubectl)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var objs []object
	for _, p := range paths {
		o, err := load(p, kubectl)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

func parse(data []byte) ([]object, error) {
	var objs []object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(j)) == "null" {
			continue
		}
		o, err := decodeJSON(j)
		if err != nil {
			return nil, err
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
}

// generatedMarker starts every file chartgen writes; files in templates/ and
// crds/ that start with it and were not written this time are removed.
const generatedMarker = "Code generated by hack/chartgen"

// write puts files (path relative to the chart) under dir, and removes the
// generated files of earlier runs that are no longer generated, and crds/
// when that leaves it empty.
func write(dir string, files map[string][]byte) error {
	for _, sub := range []string{"templates", "crds"} {
		old, err := filepath.Glob(filepath.Join(dir, sub, "*"))
		if err != nil {
			return err
		}
		for _, p := range old {
			rel, _ := filepath.Rel(dir, p)
			if _, ok := files[rel]; ok {
				continue
			}
			data, err := os.ReadFile(p)
			if err == nil && bytes.Contains(firstLine(data), []byte(generatedMarker)) {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
		}
	}
	// Earlier charts had the CRDs in crds/.
	if left, err := os.ReadDir(filepath.Join(dir, "crds")); err == nil && len(left) == 0 {
		if err := os.Remove(filepath.Join(dir, "crds")); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}
