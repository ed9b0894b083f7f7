package main

import (
	"reflect"
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

// The objects of both installs of installs(), and the Deployment of both
// (%s: the namespaced install's flag).
const commonYAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec: {group: example.com}
---
apiVersion: v1
kind: Namespace
metadata: {name: op-system}
---
apiVersion: v1
kind: Service
metadata: {name: op, namespace: op-system, labels: {app.kubernetes.io/name: op}}
spec: {selector: {app.kubernetes.io/name: op}}
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
const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: op, namespace: op-system, labels: {app.kubernetes.io/name: op}}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: op}}
  template:
    metadata: {labels: {app.kubernetes.io/name: op, tier: control}}
    spec:
      serviceAccountName: op
      containers:
      - name: manager
        image: op:dev
        imagePullPolicy: IfNotPresent
        resources: {}
        args: ["--leader-elect", "--shards=1"%s]
`

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
	binding := func(kind, ns string) string {
		return `
apiVersion: rbac.authorization.k8s.io/v1
kind: ` + kind + `
metadata: {name: op-manager, namespace: ` + ns + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-manager}
subjects: [{kind: ServiceAccount, name: op, namespace: op-system}]
`
	}
	cluster = objs(commonYAML + "---" + strings.Replace(deploymentYAML, "%s", "", 1) + "---" + binding("ClusterRoleBinding", "''"))
	namespaced = objs(commonYAML + "---" + strings.Replace(deploymentYAML, "%s", `, "--watch-namespaces=a,b"`, 1) +
		"---" + binding("RoleBinding", "a") + "---" + binding("RoleBinding", "b"))
	return cluster, namespaced
}

const chartYAML = "name: op\nkubeVersion: '>= 1.30.0-0'\ndescription: An operator.\n"

func TestGenerate(t *testing.T) {
	t.Parallel()
	cluster, namespaced := installs(t)
	files, err := generate(&sources{cluster: cluster, namespaced: namespaced, chart: []byte(chartYAML)})
	if err != nil {
		t.Fatal(err)
	}
	const labels = `{{- include "raftsman.labels" $ | nindent 4 }}`
	const sa = `{{ include "raftsman.serviceAccountName" $ }}`
	for path, want := range map[string][]string{
		"templates/clusterrolebinding-manager.yaml": {"{{- if not $.Values.watchNamespaces }}", `name: {{ include "raftsman.fullname" $ }}-manager`, "name: " + sa, labels},
		"templates/rolebinding-manager.yaml":        {"{{- range $ns := $.Values.watchNamespaces }}", "namespace: {{ $ns }}", "namespace: {{ $.Release.Namespace }}", "name: " + sa},
		"templates/deployment.yaml": {"--shards={{ $.Values.shards }}", `--watch-namespaces={{ join "," . }}`, `image: {{ include "raftsman.image" $ }}`,
			labels, `app.kubernetes.io/name: {{ include "raftsman.name" $ }}`, "serviceAccountName: " + sa,
			// An own label gives way to one of podLabels, so that no key is there twice.
			`{{- include "raftsman.labels" $ | nindent 8 }}` + "\n        " + `{{- if not (hasKey ($.Values.podLabels | default dict) "tier") }}` +
				"\n        tier: control\n        {{- end }}\n        {{- with $.Values.podLabels }}",
			"{{- with $.Values.podAnnotations }}", "{{- with $.Values.priorityClassName }}", "{{- with $.Values.topologySpreadConstraints }}"},
		"templates/service.yaml":        {labels, `app.kubernetes.io/name: {{ include "raftsman.name" $ }}`},
		"templates/serviceaccount.yaml": {"{{- if $.Values.serviceAccount.create }}", "name: " + sa, "{{- with $.Values.serviceAccount.annotations }}"},
		"templates/crd-things.example.com.yaml": {"{{- if $.Values.crds.enabled }}", "helm.sh/resource-policy: keep", labels,
			"name: things.example.com"},
		"templates/namespace.yaml": {"{{- if $.Values.createNamespace }}", labels + "\n    {{- with $.Values.namespaceLabels }}"},
		"values.yaml":              {"repository: op\n", "tag: dev\n", "shards: 1\n", "e.g. [a, b]"},
		"values.schema.json":       {`"$schema": "http://json-schema.org/draft-07/schema#"`},
		"README.md":                {"# op\n", "An operator.", "`>= 1.30.0-0`", "| `image.repository` | string | `\"op\"` | The image's repository. |"},
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
		"an object changed in the namespaced install": changeKind("ClusterRole", func(o object) {
			o["rules"] = []any{map[string]any{"verbs": []any{"get"}}}
		}),
		"a flag added to the namespaced install": changeKind("Deployment", func(o object) {
			c, _ := container(o)
			c["args"] = append([]any{"--other"}, c["args"].([]any)...)
		}),
		"an object of another namespace only in the namespaced install": func(_, ns []object) []object {
			return append(ns, object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "elsewhere"}})
		},
		"a label the chart sets, in config/": changeKind("ClusterRole", func(o object) {
			o["metadata"].(map[string]any)["labels"] = map[string]any{"app.kubernetes.io/instance": "x"}
		}),
		"app.kubernetes.io/name other than the Deployment's": changeKind("ServiceAccount", func(o object) {
			o["metadata"].(map[string]any)["labels"] = map[string]any{"app.kubernetes.io/name": "other"}
		}),
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
		namespaced = change(cluster, namespaced)
		// The objects of both installs, changed alike, so that only the change is refused.
		if strings.Contains(name, "label") {
			cluster = change(nil, cluster)
		}
		if _, err := generate(&sources{cluster: cluster, namespaced: namespaced, chart: []byte(chartYAML)}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	cluster, namespaced := installs(t)
	grafana := []object{{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "op-dashboard"}}}
	if _, err := generate(&sources{cluster: cluster, namespaced: namespaced, grafana: grafana, chart: []byte(chartYAML)}); err == nil {
		t.Error("a Secret in config/grafana: no error")
	}
	cluster, namespaced = installs(t)
	if _, err := generate(&sources{cluster: cluster, namespaced: namespaced, chart: []byte("name: op\n")}); err == nil {
		t.Error("a Chart.yaml without kubeVersion: no error")
	}
}

// changeKind returns a change of the objects of kind k by f.
func changeKind(k string, f func(object)) func(_, objs []object) []object {
	return func(_, objs []object) []object {
		for _, o := range objs {
			if kind(o) == k {
				f(o)
			}
		}
		return objs
	}
}

// TestValueRows: the README's rows follow values.yaml's keys and comments
// and the schema's types; a value without a comment or a type, or a type
// without a value, is an error.
func TestValueRows(t *testing.T) {
	t.Parallel()
	const schema = `{"type": "object", "additionalProperties": false, "properties": {
		"global": {"type": "object"},
		"image": {"type": "object", "additionalProperties": false, "properties": {
			"pullPolicy": {"type": "string", "enum": ["Always", "Never"]}}},
		"labels": {"$ref": "#/definitions/labels"},
		"args": {"type": "array", "items": {"type": "string"}},
		"replicas": {"type": ["integer", "string"]}},
		"definitions": {"labels": {"type": "object", "additionalProperties": {"type": "string"},
			"properties": {"helm.sh/chart": false}}}}`
	const values = `# Header.

# The image.
image:
  # Its pull policy,
  # on two lines.
  pullPolicy: Always
# Labels | pipes.
labels: {a: b}
# Flags <here>.
args: ["--x"]
# How many.
replicas: 1
`
	rows, err := valueRows([]byte(values), []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"image", "object", "", "The image."},
		{"image.pullPolicy", "string: Always, Never", `"Always"`, "Its pull policy, on two lines."},
		{"labels", "map of string", `{"a":"b"}`, "Labels | pipes."},
		{"args", "list of string", `["--x"]`, "Flags <here>."},
		{"replicas", "integer or string", "1", "How many."},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n%v\nwant\n%v", rows, want)
	}
	if tbl := table(rows); !strings.Contains(tbl, "| `labels` | map of string | `{\"a\":\"b\"}` | Labels \\| pipes. |") ||
		!strings.Contains(tbl, "Flags &lt;here&gt;.") {
		t.Errorf("table:\n%s", tbl)
	}
	for name, v := range map[string]string{
		"no comment":        strings.Replace(values, "# How many.\n", "", 1),
		"no type":           values + "# More.\nmore: 1\n",
		"no value":          strings.Replace(values, "# How many.\nreplicas: 1\n", "", 1),
		"no nested value":   strings.Replace(values, "  # Its pull policy,\n  # on two lines.\n  pullPolicy: Always\n", "  {}\n", 1),
		"no nested comment": strings.Replace(values, "  # Its pull policy,\n  # on two lines.\n", "", 1),
	} {
		if _, err := valueRows([]byte(v), []byte(schema)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
