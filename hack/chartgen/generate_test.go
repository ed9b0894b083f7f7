package main

import (
	"strings"
	"testing"
	"text/template"
)

// TestEscapeActions: escaped text comes out of Go's template engine, which
// Helm uses, as it went in.
func TestEscapeActions(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"plain",
		"EtcdCluster {{ $labels.namespace }}/{{ $labels.name }} is {{ $value | humanizeDuration }} old",
		`"legendFormat": "{{member}} size"`,
		"a lone {{ here\nand }} there",
		"}} first, then {{",
		"{{{{ nested }}}}",
		"{{{ three",
		"x{ {{ y }} }",
		`{"a":{"b":{}}}`,
		"a {{ `raw` }} action",
		"{{",
		"}}",
		"",
	} {
		tmpl, err := template.New("x").Parse(escapeActions(s))
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, nil); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if b.String() != s {
			t.Errorf("%q came out as %q", s, b.String())
		}
	}
}

func TestSplitImage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ref, repo, tag, digest string }{
		{"raftsman:dev", "raftsman", "dev", ""},
		{"raftsman", "raftsman", "", ""},
		{"localhost:5000/raftsman", "localhost:5000/raftsman", "", ""},
		{"localhost:5000/raftsman:v1", "localhost:5000/raftsman", "v1", ""},
		{"ghcr.io/raftsman/raftsman:v1.2.3@sha256:abc", "ghcr.io/raftsman/raftsman", "v1.2.3", "sha256:abc"},
		{"ghcr.io/raftsman/raftsman@sha256:abc", "ghcr.io/raftsman/raftsman", "", "sha256:abc"},
	} {
		repo, tag, digest := splitImage(c.ref)
		if repo != c.repo || tag != c.tag || digest != c.digest {
			t.Errorf("%s: %q %q %q, want %q %q %q", c.ref, repo, tag, digest, c.repo, c.tag, c.digest)
		}
	}
}

// installs returns a small cluster-wide and namespaced install in the shape
// of config/default and config/namespaced.
func installs(t *testing.T) (cluster, namespaced []object) {
	t.Helper()
	objs := func(y string) []object {
		o, err := parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	const common = `
apiVersion: v1
kind: Namespace
metadata: {name: op-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: op-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules: []
`
	const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: op, namespace: op-system}
spec:
  replicas: 1
  template:
    spec:
      serviceAccountName: op
      containers:
      - name: manager
        image: op:dev
        imagePullPolicy: IfNotPresent
        resources: {}
        args: ["--leader-elect", "--shards=1"%s]
`
	binding := func(kind, ns string) string {
		return `
apiVersion: rbac.authorization.k8s.io/v1
kind: ` + kind + `
metadata: {name: op-manager, namespace: ` + ns + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-manager}
subjects: [{kind: ServiceAccount, name: op, namespace: op-system}]
`
	}
	cluster = objs(common + "---" + strings.Replace(deployment, "%s", "", 1) + "---" + binding("ClusterRoleBinding", "''"))
	namespaced = objs(common + "---" + strings.Replace(deployment, "%s", `, "--watch-namespaces=a,b"`, 1) +
		"---" + binding("RoleBinding", "a") + "---" + binding("RoleBinding", "b"))
	return cluster, namespaced
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	cluster, namespaced := installs(t)
	files, err := generate(&sources{cluster: cluster, namespaced: namespaced})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"templates/clusterrolebinding-manager.yaml": {"{{- if not $.Values.watchNamespaces }}", `name: {{ include "raftsman.fullname" $ }}-manager`},
		"templates/rolebinding-manager.yaml":        {"{{- range $ns := $.Values.watchNamespaces }}", "namespace: {{ $ns }}", "namespace: {{ $.Release.Namespace }}"},
		"templates/deployment.yaml":                 {"--shards={{ $.Values.shards }}", `--watch-namespaces={{ join "," . }}`, `image: {{ include "raftsman.image" $ }}`},
		"templates/namespace.yaml":                  {"{{- if $.Values.createNamespace }}"},
		"values.yaml":                               {"repository: op\n", "tag: dev\n", "shards: 1\n", "e.g. [a, b]"},
	} {
		for _, w := range want {
			if !strings.Contains(string(files[path]), w) {
				t.Errorf("%s lacks %q:\n%s", path, w, files[path])
			}
		}
	}
}

// TestGenerateRefuses: differences between the installs that the chart
// could not follow are errors, not silently dropped.
func TestGenerateRefuses(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(cluster, namespaced []object) []object{
		"an object changed in the namespaced install": func(_, ns []object) []object {
			for _, o := range ns {
				if kind(o) == "ClusterRole" {
					o["rules"] = []any{map[string]any{"verbs": []any{"get"}}}
				}
			}
			return ns
		},
		"a flag added to the namespaced install": func(_, ns []object) []object {
			for _, o := range ns {
				if kind(o) == "Deployment" {
					c, _ := container(o)
					c["args"] = append([]any{"--other"}, c["args"].([]any)...)
				}
			}
			return ns
		},
		"an object of another namespace only in the namespaced install": func(_, ns []object) []object {
			return append(ns, object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "elsewhere"}})
		},
		"different objects in two watched namespaces": func(_, ns []object) []object {
			var out []object
			for _, o := range ns {
				if kind(o) != "RoleBinding" || namespaceOf(o) != "b" {
					out = append(out, o)
				}
			}
			return out
		},
	} {
		cluster, namespaced := installs(t)
		if _, err := generate(&sources{cluster: cluster, namespaced: change(cluster, namespaced)}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	cluster, namespaced := installs(t)
	grafana := []object{{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "op-dashboard"}}}
	if _, err := generate(&sources{cluster: cluster, namespaced: namespaced, grafana: grafana}); err == nil {
		t.Error("a Secret in config/grafana: no error")
	}
}
