// Package chart tests the Helm chart charts/raftsman against the kustomize
// installs it is generated from (hack/chartgen): rendered with its defaults it
// is dist/install.yaml, object by object, but for the labels of a Helm release
// and the CRDs' resource policy (features_test.go tests those); with
// watchNamespaces, it is dist/install-namespaced.yaml; its Prometheus objects
// and dashboards are config/prometheus and config/grafana. features_test.go
// tests what the chart adds: labels, the values' schema, kubeVersion, the
// helm test, the CRDs' upgrade path, the README. The tests need helm (make
// helm) and skip without it; the comparisons with config/ need kubectl too.
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var (
	root  = func() string { d, _ := filepath.Abs("../.."); return d }()
	chart = filepath.Join(root, "charts/raftsman")
)

// The release and namespace that render the names of dist/install.yaml.
const (
	release   = "raftsman"
	namespace = "raftsman-system"
)

// tool is the path of a binary built by hack/cluster/build.sh: the variable
// env when set, else _output/bin/<name>-<version>/<bin> with the version of
// hack/cluster/versions.sh. The test skips when it is missing.
func tool(t *testing.T, env, name, versionVar, bin string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(root, "_output/bin", name+"-"+versionOf(t, versionVar), bin)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no %s (%v): make helm builds it, make cluster-build kubectl", bin, err)
	}
	return p
}

func helm(t *testing.T) string { return tool(t, "HELM", "helm", "HELM_VERSION", "helm") }

func kubectl(t *testing.T) string {
	return tool(t, "KUBECTL", "kubernetes", "KUBE_VERSION", "kubectl")
}

func run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// kubeVersion is the Kubernetes of the local cluster (hack/cluster/versions.sh),
// which helm template is told it renders for: our helm's default, without the
// Kubernetes version a release build of helm bakes in, is 1.20, which the
// chart's kubeVersion refuses.
func kubeVersion(t *testing.T) string {
	t.Helper()
	return versionOf(t, "KUBE_VERSION")
}

func versionOf(t *testing.T, versionVar string) string {
	t.Helper()
	versions, err := os.ReadFile(filepath.Join(root, "hack/cluster/versions.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(versionVar + `=\$\{` + versionVar + `:-([^}]+)\}`).FindSubmatch(versions)
	if m == nil {
		t.Fatalf("no %s in hack/cluster/versions.sh", versionVar)
	}
	return string(m[1])
}

// template runs helm template on the chart; its output holds the release's
// objects and its test hooks.
func template(t *testing.T, rel, ns string, set ...string) objects {
	t.Helper()
	args := []string{"template", rel, chart, "--namespace", ns, "--kube-version", kubeVersion(t)}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return parse(t, run(t, helm(t), args...))
}

// render is what helm install creates: the objects of helm template less
// its test hooks (helm test creates those).
func render(t *testing.T, rel, ns string, set ...string) objects {
	t.Helper()
	objs, _ := template(t, rel, ns, set...).hooks()
	return objs
}

// hooks splits the objects into the release's and its hooks.
func (a objects) hooks() (release, hooks objects) {
	release, hooks = objects{}, objects{}
	for k, o := range a {
		if annotations(o)["helm.sh/hook"] != nil {
			hooks[k] = o
		} else {
			release[k] = o
		}
	}
	return release, hooks
}

func annotations(o object) map[string]any {
	md, _ := o["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	return a
}

type object = map[string]any

// objects by group/kind/namespace/name.
type objects map[string]object

func key(o object) string {
	group, _, _ := strings.Cut(fmt.Sprint(o["apiVersion"]), "/")
	md, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%s/%s/%v/%v", group, o["kind"], md["namespace"], md["name"])
}

func parse(t *testing.T, data []byte) objects {
	t.Helper()
	objs := objects{}
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
			t.Fatalf("%v\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		if _, dup := objs[key(o)]; dup {
			t.Fatalf("%s twice", key(o))
		}
		objs[key(o)] = o
	}
}

func load(t *testing.T, path string) objects {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, data)
}

func kustomize(t *testing.T, dir string) objects {
	t.Helper()
	return parse(t, run(t, kubectl(t), "kustomize", filepath.Join(root, dir)))
}

// minus is what a has and b has not.
func (a objects) minus(b objects) objects {
	d := objects{}
	for k, o := range a {
		if _, ok := b[k]; !ok {
			d[k] = o
		}
	}
	return d
}

func (a objects) without(kind string) objects {
	d := objects{}
	for k, o := range a {
		if o["kind"] != kind {
			d[k] = o
		}
	}
	return d
}

func (a objects) keys() []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The labels the chart puts on every object and Pod (templates/_helpers.tpl).
var helmLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
	"app.kubernetes.io/managed-by", "helm.sh/chart"}

// asInstalled is a rendered object less what the chart adds to an object of
// the kustomize installs, want: the labels of helmLabels that want does not
// have with the same value (on the object and its Pod template), and the
// resource policy of a CRD. features_test.go tests those.
func asInstalled(got, want object) object {
	b, _ := yaml.Marshal(got)
	var o object
	_ = yaml.Unmarshal(b, &o)
	strip := func(md, wantMD map[string]any) {
		labels, _ := md["labels"].(map[string]any)
		wantLabels, _ := wantMD["labels"].(map[string]any)
		for _, k := range helmLabels {
			if v, ok := wantLabels[k]; !ok || v != labels[k] {
				delete(labels, k)
			}
		}
		if labels != nil && len(labels) == 0 {
			delete(md, "labels")
		}
	}
	strip(o["metadata"].(map[string]any), want["metadata"].(map[string]any))
	if tmpl := podTemplate(o); tmpl != nil && podTemplate(want) != nil {
		wantMD, _ := podTemplate(want)["metadata"].(map[string]any)
		if md, ok := tmpl["metadata"].(map[string]any); ok {
			strip(md, wantMD)
		}
	}
	if o["kind"] == "CustomResourceDefinition" {
		if a := annotations(o); a["helm.sh/resource-policy"] == "keep" {
			delete(a, "helm.sh/resource-policy")
		}
	}
	return o
}

// podTemplate is a Deployment's spec.template.
func podTemplate(o object) map[string]any {
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	return tmpl
}

// same fails the test unless got and want hold the same objects, but for
// what the chart adds (asInstalled).
func same(t *testing.T, what string, got, want objects) {
	t.Helper()
	if extra := got.minus(want); len(extra) > 0 {
		t.Errorf("%s: the chart renders objects that are not there: %v", what, extra.keys())
	}
	if missing := want.minus(got); len(missing) > 0 {
		t.Errorf("%s: the chart does not render %v", what, missing.keys())
	}
	for _, k := range got.keys() {
		if w, ok := want[k]; ok && !reflect.DeepEqual(asInstalled(got[k], w), w) {
			g, _ := yaml.Marshal(got[k])
			ww, _ := yaml.Marshal(w)
			t.Errorf("%s: %s differs\n--- chart\n%s\n--- want\n%s", what, k, g, ww)
		}
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	for _, set := range [][]string{
		nil,
		{"watchNamespaces={a,b}", "prometheus.podMonitors.enabled=true", "prometheus.rules.enabled=true",
			"dashboards.enabled=true", "createNamespace=true", "extraArgs={--ca-lifetime=43800h}"},
	} {
		args := []string{"lint", "--strict", chart, "--kube-version", kubeVersion(t)}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		run(t, helm(t), args...)
	}
}

// TestDefaultsAreTheInstall: release raftsman in raftsman-system with the
// defaults is dist/install.yaml less its Namespace, which Helm makes with
// --create-namespace; with createNamespace it is all of dist/install.yaml.
func TestDefaultsAreTheInstall(t *testing.T) {
	t.Parallel()
	install := load(t, "dist/install.yaml")
	same(t, "defaults", render(t, release, namespace), install.without("Namespace"))
	same(t, "createNamespace", render(t, release, namespace, "createNamespace=true"), install)
}

// TestWatchNamespacesIsTheNamespacedInstall: with the namespaces that
// config/namespaced watches, the chart is dist/install-namespaced.yaml.
func TestWatchNamespacesIsTheNamespacedInstall(t *testing.T) {
	t.Parallel()
	install := load(t, "dist/install-namespaced.yaml")
	var watched string
	for _, o := range install {
		if o["kind"] == "Deployment" {
			args := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any)
			for _, a := range args {
				if s := a.(string); strings.HasPrefix(s, "--watch-namespaces=") {
					watched = strings.TrimPrefix(s, "--watch-namespaces=")
				}
			}
		}
	}
	if watched == "" {
		t.Fatal("dist/install-namespaced.yaml has no --watch-namespaces")
	}
	got := render(t, release, namespace, "createNamespace=true", "watchNamespaces={"+watched+"}")
	same(t, "watchNamespaces="+watched, got, install)
}

// TestPrometheusIsConfigPrometheus: what the Prometheus values add is
// config/prometheus.
func TestPrometheusIsConfigPrometheus(t *testing.T) {
	t.Parallel()
	want := kustomize(t, "config/prometheus")
	base := render(t, release, namespace)
	got := render(t, release, namespace, "prometheus.podMonitors.enabled=true", "prometheus.rules.enabled=true").minus(base)
	same(t, "prometheus", got, want)
	rules := render(t, release, namespace, "prometheus.rules.enabled=true").minus(base)
	if len(rules) != 1 || rules[rules.keys()[0]]["kind"] != "PrometheusRule" {
		t.Errorf("prometheus.rules.enabled alone renders %v, want the PrometheusRule", rules.keys())
	}
}

// TestDashboardsAreConfigGrafana: what dashboards.enabled adds is
// config/grafana, in the namespace and with the labels asked for.
func TestDashboardsAreConfigGrafana(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(root, "config/grafana")); err != nil {
		t.Skip("no config/grafana")
	}
	var want objects
	if _, err := os.Stat(filepath.Join(root, "config/grafana/kustomization.yaml")); err == nil {
		want = kustomize(t, "config/grafana")
	} else {
		want = objects{}
		files, _ := filepath.Glob(filepath.Join(root, "config/grafana/*.yaml"))
		for _, f := range files {
			for _, o := range load(t, strings.TrimPrefix(f, root+"/")) {
				o["metadata"].(map[string]any)["namespace"] = namespace
				want[key(o)] = o
			}
		}
	}
	base := render(t, release, namespace)
	same(t, "dashboards", render(t, release, namespace, "dashboards.enabled=true").minus(base), want)

	moved := render(t, release, namespace, "dashboards.enabled=true", "dashboards.namespace=monitoring", "dashboards.labels.team=etcd").minus(base)
	if len(moved) != len(want) {
		t.Fatalf("dashboards in monitoring: %v, want %d", moved.keys(), len(want))
	}
	for k, o := range moved {
		md := o["metadata"].(map[string]any)
		if md["namespace"] != "monitoring" || md["labels"].(map[string]any)["team"] != "etcd" {
			t.Errorf("%s: namespace %v labels %v, want monitoring and team=etcd", k, md["namespace"], md["labels"])
		}
	}
}

// TestAnotherReleaseSharesNothing: a release of another name in another
// namespace names every object after itself (its test Pod too), cluster-scoped
// ones included, so it can run beside dist/install.yaml; every reference
// follows. The CRDs are the same, which is why such a release sets
// crds.enabled=false (TestCRDsAreTemplatesKept).
func TestAnotherReleaseSharesNothing(t *testing.T) {
	t.Parallel()
	const rel, ns, watched = "team-a", "team-a-system", "team-a-etcd"
	got := template(t, rel, ns, "createNamespace=true", "watchNamespaces={"+watched+"}",
		"prometheus.podMonitors.enabled=true", "prometheus.rules.enabled=true", "dashboards.enabled=true")
	install := load(t, "dist/install.yaml")
	for k, o := range got {
		if o["kind"] == "CustomResourceDefinition" {
			if _, ok := install[k]; !ok {
				t.Errorf("CRD %s is not one of dist/install.yaml", k)
			}
			continue
		}
		if _, ok := install[k]; ok {
			t.Errorf("%s is also an object of dist/install.yaml", k)
		}
		md := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if o["kind"] == "Namespace" {
			if name != ns {
				t.Errorf("Namespace %s, want %s", name, ns)
			}
			continue
		}
		if !strings.HasPrefix(name, rel+"-raftsman") {
			t.Errorf("%s: name does not start with %s-raftsman", k, rel)
		}
		if n, ok := md["namespace"]; ok && n != ns && n != watched {
			t.Errorf("%s: in namespace %v", k, n)
		}
		b, _ := yaml.Marshal(o)
		if bytes.Contains(b, []byte(namespace)) {
			t.Errorf("%s names %s:\n%s", k, namespace, b)
		}
	}
	// Every reference to an object of the release names one it renders.
	names := map[string]bool{}
	for _, o := range got {
		names[fmt.Sprintf("%v/%v", o["kind"], o["metadata"].(map[string]any)["name"])] = true
	}
	for k, o := range got {
		var refs []string
		if r, ok := o["roleRef"].(map[string]any); ok {
			refs = append(refs, fmt.Sprintf("%v/%v", r["kind"], r["name"]))
		}
		for _, s := range anySlice(o["subjects"]) {
			refs = append(refs, fmt.Sprintf("%v/%v", s.(map[string]any)["kind"], s.(map[string]any)["name"]))
		}
		if o["kind"] == "Deployment" {
			sa := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["serviceAccountName"]
			refs = append(refs, fmt.Sprintf("ServiceAccount/%v", sa))
		}
		if a, ok := o["metadata"].(map[string]any)["annotations"].(map[string]any); ok && a["kubernetes.io/service-account.name"] != nil {
			refs = append(refs, fmt.Sprintf("ServiceAccount/%v", a["kubernetes.io/service-account.name"]))
		}
		for _, r := range refs {
			if !names[r] {
				t.Errorf("%s refers to %s, which the release does not render", k, r)
			}
		}
	}
	// The operator's alerts find its PodMonitor's job.
	for _, o := range got {
		if o["kind"] == "PrometheusRule" {
			b, _ := yaml.Marshal(o)
			job := fmt.Sprintf(`job="%s/%s-raftsman-operator"`, ns, rel)
			if !bytes.Contains(b, []byte(job)) || !names["PodMonitor/"+rel+"-raftsman-operator"] {
				t.Errorf("the PrometheusRule does not select %s of a rendered PodMonitor", job)
			}
		}
	}
}

// TestValues: each value lands where the operator reads it.
func TestValues(t *testing.T) {
	t.Parallel()
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	spread := map[string]any{"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
	toleration := map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
	got := render(t, release, namespace,
		"image.repository=registry.example/raftsman", "image.tag=v1.2.3", "image.digest="+digest, "image.pullPolicy=Always",
		"replicas=3", "shards=4", "watchNamespaces={a,b}", "extraArgs={--ca-lifetime=43800h}",
		"resources.limits.memory=1Gi", "imagePullSecrets[0].name=pull", "nodeSelector.disk=ssd",
		"fullnameOverride=etcd-operator", "priorityClassName=system-cluster-critical",
		"podAnnotations.example\\.com/scrape=no", "affinity.nodeAffinity.x=y",
		"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
		"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
		"tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "tolerations[0].effect=NoSchedule",
		"serviceAccount.annotations.example\\.com/role=etcd")
	dep := got["apps/Deployment/"+namespace+"/etcd-operator"]
	if dep == nil {
		t.Fatalf("no Deployment etcd-operator in %v", got.keys())
	}
	spec := dep["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"image", c["image"], "registry.example/raftsman:v1.2.3@" + digest},
		{"pull policy", c["imagePullPolicy"], "Always"},
		{"replicas", spec["replicas"], float64(3)},
		{"resources", c["resources"].(map[string]any)["limits"], map[string]any{"memory": "1Gi"}},
		{"pull secrets", pod["imagePullSecrets"], []any{map[string]any{"name": "pull"}}},
		{"node selector", pod["nodeSelector"], map[string]any{"disk": "ssd"}},
		{"service account", pod["serviceAccountName"], "etcd-operator"},
		{"service account's annotations", annotations(got["v1/ServiceAccount/"+namespace+"/etcd-operator"]), map[string]any{"example.com/role": "etcd"}},
		{"priority class", pod["priorityClassName"], "system-cluster-critical"},
		{"Pod annotations", annotations(spec["template"].(map[string]any)), map[string]any{"example.com/scrape": "no"}},
		{"affinity", pod["affinity"], map[string]any{"nodeAffinity": map[string]any{"x": "y"}}},
		{"topology spread", pod["topologySpreadConstraints"], []any{spread}},
		{"tolerations", pod["tolerations"], []any{toleration}},
	} {
		if !reflect.DeepEqual(check.got, check.want) {
			t.Errorf("%s: %v, want %v", check.what, check.got, check.want)
		}
	}
	args := anySlice(c["args"])
	for _, want := range []string{"--shards=4", "--watch-namespaces=a,b", "--ca-lifetime=43800h"} {
		if !slices.Contains(args, any(want)) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	for _, ns := range []string{"a", "b"} {
		if got["rbac.authorization.k8s.io/RoleBinding/"+ns+"/etcd-operator-manager"] == nil {
			t.Errorf("no RoleBinding etcd-operator-manager in %s", ns)
		}
	}
	if got["rbac.authorization.k8s.io/ClusterRoleBinding/<nil>/etcd-operator-manager"] != nil {
		t.Error("a ClusterRoleBinding of the manager role with watchNamespaces set")
	}
}

// TestServiceAccount: with serviceAccount.create=false the chart makes no
// account, and the Deployment and every binding name serviceAccount.name.
func TestServiceAccount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		set      []string
		name     string
		rendered bool
	}{
		{nil, release, true},
		{[]string{"serviceAccount.name=etcd-admin"}, "etcd-admin", true},
		{[]string{"serviceAccount.create=false", "serviceAccount.name=etcd-admin"}, "etcd-admin", false},
	} {
		for _, watch := range []string{"", "watchNamespaces={a}"} {
			set := c.set
			if watch != "" {
				set = append(slices.Clone(set), watch)
			}
			got := render(t, release, namespace, set...)
			if _, ok := got["v1/ServiceAccount/"+namespace+"/"+c.name]; ok != c.rendered {
				t.Errorf("%v: ServiceAccount %s rendered %v, want %v", set, c.name, ok, c.rendered)
			}
			bindings := 0
			for k, o := range got {
				switch o["kind"] {
				case "Deployment":
					if sa := podTemplate(o)["spec"].(map[string]any)["serviceAccountName"]; sa != c.name {
						t.Errorf("%v: %s runs as %v, want %s", set, k, sa, c.name)
					}
				case "RoleBinding", "ClusterRoleBinding":
					for _, s := range anySlice(o["subjects"]) {
						sub := s.(map[string]any)
						if sub["kind"] == "ServiceAccount" && sub["namespace"] == namespace && !strings.Contains(fmt.Sprint(sub["name"]), "metrics-reader") {
							bindings++
							if sub["name"] != c.name {
								t.Errorf("%v: %s binds %v, want %s", set, k, sub["name"], c.name)
							}
						}
					}
				}
			}
			if bindings < 3 {
				t.Errorf("%v: %d bindings of the operator's account, want the manager's, own-namespace's and cluster-scope's", set, bindings)
			}
		}
	}
}

func anySlice(v any) []any { s, _ := v.([]any); return s }
