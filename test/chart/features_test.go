package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartMeta is charts/raftsman/Chart.yaml.
type chartMeta struct {
	Name, Version string
	AppVersion    string `json:"appVersion"`
	KubeVersion   string `json:"kubeVersion"`
}

func readChart(t *testing.T) chartMeta {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// helmFails runs helm and returns its output, failing the test if helm
// succeeds.
func helmFails(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(helm(t), args...).CombinedOutput()
	if err == nil {
		t.Errorf("helm %s succeeded", strings.Join(args, " "))
	}
	return string(out)
}

func labelsOf(o map[string]any) map[string]any {
	md, _ := o["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}

// selects tells whether every label of sel is in labels.
func selects(sel, labels map[string]any) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// TestLabels: every object, the operator's Pods and the test Pod carry the
// labels of a Helm release with their values.
func TestLabels(t *testing.T) {
	t.Parallel()
	meta := readChart(t)
	const rel, ns = "prod", "prod-system"
	got := template(t, rel, ns, "createNamespace=true", "watchNamespaces={a}", "prometheus.podMonitors.enabled=true",
		"prometheus.rules.enabled=true", "dashboards.enabled=true", "podLabels.team=etcd")
	want := map[string]any{
		"app.kubernetes.io/name":       meta.Name,
		"app.kubernetes.io/instance":   rel,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/version":    meta.AppVersion,
		"helm.sh/chart":                meta.Name + "-" + meta.Version,
	}
	kinds := map[any]bool{}
	for k, o := range got {
		kinds[o["kind"]] = true
		w := want
		if annotations(o)["helm.sh/hook"] != nil {
			// Not the operator's name, which its selectors pick.
			w = map[string]any{}
			for l, v := range want {
				w[l] = v
			}
			w["app.kubernetes.io/name"] = meta.Name + "-test"
		}
		for l, v := range w {
			if labelsOf(o)[l] != v {
				t.Errorf("%s: label %s is %v, want %v", k, l, labelsOf(o)[l], v)
			}
		}
		if tmpl := podTemplate(o); tmpl != nil {
			pl := labelsOf(tmpl)
			for l, v := range want {
				if pl[l] != v {
					t.Errorf("%s's Pods: label %s is %v, want %v", k, l, pl[l], v)
				}
			}
			if pl["team"] != "etcd" {
				t.Errorf("%s's Pods lack podLabels: %v", k, pl)
			}
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "Deployment", "Service", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "Role", "RoleBinding", "Secret", "PodMonitor", "PrometheusRule", "ConfigMap", "Pod"} {
		if !kinds[k] {
			t.Errorf("no %s rendered to check", k)
		}
	}
}

// TestNameOverride: nameOverride names the objects and sets
// app.kubernetes.io/name, and every selector of the operator's Pods follows,
// while none selects the test Pod.
func TestNameOverride(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rel, fullname string }{
		{"prod", "prod-etcd-operator"},
		{"etcd-operator-b", "etcd-operator-b"},
	} {
		got := template(t, c.rel, "ops", "nameOverride=etcd-operator", "prometheus.podMonitors.enabled=true")
		var pods, testPod map[string]any
		var selectors []map[string]any
		for k, o := range got {
			md := o["metadata"].(map[string]any)
			if kind := o["kind"]; kind != "CustomResourceDefinition" && !strings.HasPrefix(fmt.Sprint(md["name"]), c.fullname) {
				t.Errorf("%s: name does not start with %s", k, c.fullname)
			}
			spec, _ := o["spec"].(map[string]any)
			switch o["kind"] {
			case "Deployment":
				pods = labelsOf(podTemplate(o))
				selectors = append(selectors, spec["selector"].(map[string]any)["matchLabels"].(map[string]any))
			case "Service":
				selectors = append(selectors, spec["selector"].(map[string]any))
			case "PodMonitor":
				if sel := spec["selector"].(map[string]any)["matchLabels"].(map[string]any); sel["app.kubernetes.io/name"] != "etcd" {
					selectors = append(selectors, sel)
				}
			case "Pod":
				testPod = labelsOf(o)
			}
		}
		if len(selectors) != 3 || pods == nil || testPod == nil {
			t.Fatalf("%s: %d selectors of the operator's Pods, Pods %v, test Pod %v", c.rel, len(selectors), pods, testPod)
		}
		for _, sel := range selectors {
			if !reflect.DeepEqual(sel, map[string]any{"app.kubernetes.io/name": "etcd-operator"}) || !selects(sel, pods) || selects(sel, testPod) {
				t.Errorf("%s: selector %v; the operator's Pods %v, the test Pod %v", c.rel, sel, pods, testPod)
			}
		}
	}
}

// TestMonitoringLabels: the labels a Prometheus selects PodMonitors and
// PrometheusRules by (kube-prometheus-stack: release), and a dashboard label
// replacing the ConfigMaps' own.
func TestMonitoringLabels(t *testing.T) {
	t.Parallel()
	got := render(t, release, namespace, "prometheus.podMonitors.enabled=true", "prometheus.rules.enabled=true",
		"prometheus.podMonitors.labels.release=kps", "prometheus.rules.labels.release=kps-rules",
		"dashboards.enabled=true", "dashboards.labels.grafana_dashboard=yes")
	counts := map[string]int{}
	for k, o := range got {
		l := labelsOf(o)
		want := map[any]any{"PodMonitor": "kps", "PrometheusRule": "kps-rules"}[o["kind"]]
		if l["release"] != want {
			t.Errorf("%s: label release is %v, want %v", k, l["release"], want)
		}
		if o["kind"] == "ConfigMap" {
			if l["grafana_dashboard"] != "yes" {
				t.Errorf("%s: grafana_dashboard is %v, want yes", k, l["grafana_dashboard"])
			}
		}
		counts[fmt.Sprint(o["kind"])]++
	}
	if counts["PodMonitor"] != 2 || counts["PrometheusRule"] != 1 || counts["ConfigMap"] == 0 {
		t.Errorf("rendered %v", counts)
	}
}

// TestSchemaRefuses: values of the wrong type or shape, and unknown keys, are
// refused with a message naming them, by helm template (helm install
// --dry-run --client-only: the same validation as install and upgrade) and
// by helm lint.
func TestSchemaRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ set, msg string }{
		{"replicas=two", "at '/replicas': got string, want integer"},
		{"replica=3", "additional properties 'replica' not allowed"},
		{"shards=0", "at '/shards': minimum: got 0, want 1"},
		{"image.pullPolicy=Sometimes", "at '/image/pullPolicy': value must be one of 'IfNotPresent', 'Always', 'Never'"},
		{"crds.enabled=yes", "at '/crds/enabled': got string, want boolean"},
		{"watchNamespaces={Team_A}", "at '/watchNamespaces/0'"},
		{"extraArgs={ca-lifetime=1h}", "at '/extraArgs/0'"},
		{"podLabels.team=1", "at '/podLabels/team': got number, want string"},
		{`podLabels.helm\.sh/chart=x`, "at '/podLabels/helm.sh~1chart': false schema"},
		{`prometheus.rules.labels.app\.kubernetes\.io/name=x`, "at '/prometheus/rules/labels/app.kubernetes.io~1name'"},
		{"topologySpreadConstraints[0].maxSkew=1", "at '/topologySpreadConstraints/0': missing properties 'topologyKey', 'whenUnsatisfiable'"},
	} {
		for _, cmd := range [][]string{
			{"template", release, chart, "--kube-version", kubeVersion(t), "--set", c.set},
			{"lint", chart, "--set", c.set},
		} {
			if out := helmFails(t, cmd...); !strings.Contains(out, c.msg) {
				t.Errorf("helm %s --set %s: want %q in\n%s", cmd[0], c.set, c.msg, out)
			}
		}
	}
}

// TestKubeVersion: the chart's kubeVersion admits the cluster the tests run
// on and release candidates of 1.30, and refuses 1.29 with a message.
func TestKubeVersion(t *testing.T) {
	t.Parallel()
	if kv := readChart(t).KubeVersion; kv != ">= 1.30.0-0" {
		t.Errorf("kubeVersion %q", kv)
	}
	for _, v := range []string{kubeVersion(t), "v1.30.0-rc.1", "1.30.0"} {
		run(t, helm(t), "template", release, chart, "--kube-version", v)
	}
	out := helmFails(t, "template", release, chart, "--kube-version", "1.29.15")
	if want := "chart requires kubeVersion: >= 1.30.0-0 which is incompatible with Kubernetes v1.29.15"; !strings.Contains(out, want) {
		t.Errorf("want %q in\n%s", want, out)
	}
}

// TestHelmTest: helm test runs one Pod of the operator's image, which asks the
// operator's readiness and health endpoints through the release's Service,
// whose port leads to the operator's probes port and whose selector picks the
// operator's Pods and not the test Pod. It runs where the operator may run,
// under the restricted Pod Security Standard of dist/install.yaml's namespace.
func TestHelmTest(t *testing.T) {
	t.Parallel()
	objs, hooks := template(t, "prod", "ops", "image.repository=registry.example/raftsman", "image.pullPolicy=Always",
		"imagePullSecrets[0].name=pull", "nodeSelector.disk=ssd").hooks()
	if len(hooks) != 1 {
		t.Fatalf("hooks %v, want one test Pod", hooks.keys())
	}
	pod := hooks[hooks.keys()[0]]
	if pod["kind"] != "Pod" || annotations(pod)["helm.sh/hook"] != "test" {
		t.Fatalf("the hook is a %v with annotations %v", pod["kind"], annotations(pod))
	}
	dep := objs["apps/Deployment/ops/prod-raftsman"]
	if dep == nil {
		t.Fatalf("no Deployment prod-raftsman: %v", objs.keys())
	}
	operator := podTemplate(dep)["spec"].(map[string]any)
	oc := operator["containers"].([]any)[0].(map[string]any)
	spec := pod["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"image", c["image"], oc["image"]},
		{"pull policy", c["imagePullPolicy"], oc["imagePullPolicy"]},
		{"pull secrets", spec["imagePullSecrets"], operator["imagePullSecrets"]},
		{"node selector", spec["nodeSelector"], operator["nodeSelector"]},
		{"restart policy", spec["restartPolicy"], "Never"},
		{"service account token", spec["automountServiceAccountToken"], false},
		{"Pod security", spec["securityContext"], operator["securityContext"]},
		{"container security", c["securityContext"], oc["securityContext"]},
	} {
		if !reflect.DeepEqual(check.got, check.want) {
			t.Errorf("test Pod's %s: %v, want %v", check.what, check.got, check.want)
		}
	}
	args := anySlice(c["args"])
	if len(args) != 4 || args[0] != "probe" {
		t.Fatalf("test Pod's args %v, want probe, a timeout and two URLs", args)
	}
	for i, path := range []string{"/readyz", "/healthz"} {
		asksOperator(t, objs, dep, pod, fmt.Sprint(args[2+i]), path)
	}
	// helm template --skip-tests, for kubectl users: no test Pod.
	if _, hooks := parse(t, run(t, helm(t), "template", "prod", chart, "-n", "ops", "--kube-version", kubeVersion(t), "--skip-tests")).hooks(); len(hooks) > 0 {
		t.Errorf("--skip-tests renders %v", hooks.keys())
	}
}

// asksOperator checks that the test Pod's url is path on a Service of objs
// whose selector picks the Deployment dep's Pods and not the test Pod, through
// a port to the operator's container port "probes".
func asksOperator(t *testing.T, objs objects, dep, pod object, url, path string) {
	t.Helper()
	m := regexp.MustCompile(`^http://([a-z0-9-]+):(\d+)(/[a-z]+)$`).FindStringSubmatch(url)
	if m == nil || m[3] != path {
		t.Fatalf("test Pod asks %v, want http://<service>:<port>%s", url, path)
	}
	svc := objs["v1/Service/"+namespaceOf(pod)+"/"+m[1]]
	if svc == nil {
		t.Fatalf("test Pod asks %s, which is no Service of the release", m[1])
	}
	spec := svc["spec"].(map[string]any)
	sel := spec["selector"].(map[string]any)
	if !selects(sel, labelsOf(podTemplate(dep))) || selects(sel, labelsOf(pod)) {
		t.Errorf("Service %s selects %v: the operator's Pods are %v, the test Pod %v", m[1], sel, labelsOf(podTemplate(dep)), labelsOf(pod))
	}
	c := podTemplate(dep)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	named := false
	for _, p := range anySlice(c["ports"]) {
		named = named || p.(map[string]any)["name"] == "probes"
	}
	ready := c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)
	if !named || ready["port"] != "probes" || ready["path"] != "/readyz" {
		t.Errorf("the operator's container has no port probes serving its readiness probe: %v, %v", c["ports"], ready)
	}
	for _, p := range anySlice(spec["ports"]) {
		if p := p.(map[string]any); fmt.Sprint(p["port"]) == m[2] && p["targetPort"] == "probes" {
			return
		}
	}
	t.Errorf("Service %s has no port %s to the operator's port probes: %v", m[1], m[2], spec["ports"])
}

func namespaceOf(o object) string {
	md, _ := o["metadata"].(map[string]any)
	s, _ := md["namespace"].(string)
	return s
}

// TestCRDsAreTemplatesKept: the CRDs are templates of the release, which
// helm upgrade upgrades like any other (the files of a chart's crds/ Helm
// installs once and never upgrades: the chart has none), annotated
// helm.sh/resource-policy: keep, so that helm uninstall and upgrades to a
// chart without them leave them and every EtcdCluster. They are those of
// dist/install.yaml (TestDefaultsAreTheInstall compares them field by field);
// crds.enabled=false renders none and nothing else differs.
func TestCRDsAreTemplatesKept(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(chart, "crds")); !os.IsNotExist(err) {
		t.Errorf("the chart has a crds/ folder (%v), whose CRDs helm upgrade would not upgrade", err)
	}
	if out := run(t, helm(t), "show", "crds", chart); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("helm show crds prints CRDs outside the templates:\n%.300s", out)
	}
	withCRDs := render(t, release, namespace)
	want := objects{}
	for k, o := range load(t, "dist/install.yaml") {
		if o["kind"] == "CustomResourceDefinition" {
			want[k] = o
		}
	}
	if len(want) == 0 {
		t.Fatal("dist/install.yaml has no CRDs")
	}
	for k := range want {
		crd := withCRDs[k]
		if crd == nil {
			t.Errorf("%s is not rendered", k)
			continue
		}
		if a := annotations(crd); a["helm.sh/resource-policy"] != "keep" || a["helm.sh/hook"] != nil {
			t.Errorf("%s: annotations %v, want helm.sh/resource-policy: keep and no hook", k, a)
		}
	}
	without := render(t, release, namespace, "crds.enabled=false")
	if !reflect.DeepEqual(without, withCRDs.minus(want)) {
		t.Errorf("crds.enabled=false renders %v, want %v", without.keys(), withCRDs.minus(want).keys())
	}
}

// TestReadme: the chart's README (hack/chartgen writes it from values.yaml's
// comments) has a row for every value of values.yaml with its default, and
// says what the chart requires and how the CRDs are upgraded.
func TestReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	valuesYAML, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| [^|]+ \\| (`[^`]*`)? *\\| [^|]+").FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]] = strings.Trim(m[2], "`")
	}
	for k := range values {
		if _, ok := rows[k]; !ok {
			t.Errorf("README.md has no row for %s", k)
		}
	}
	for key, def := range rows {
		var v any = values
		for _, part := range strings.Split(key, ".") {
			m, _ := v.(map[string]any)
			var ok bool
			if v, ok = m[part]; !ok {
				t.Errorf("README.md's %s is not in values.yaml", key)
				break
			}
		}
		if b, _ := json.Marshal(v); def != "" && def != strings.ReplaceAll(string(b), `\|`, "|") {
			t.Errorf("README.md's default of %s is %s, values.yaml's %s", key, def, b)
		}
	}
	for _, want := range []string{readChart(t).KubeVersion, "helm.sh/resource-policy: keep", "crds.enabled=false", "helm test"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}
