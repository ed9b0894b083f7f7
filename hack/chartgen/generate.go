package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"

	yamlv3 "go.yaml.in/yaml/v3"
)

// object is one Kubernetes object as parsed from YAML.
type object = map[string]any

// sources are the parsed inputs, and the chart's Chart.yaml.
type sources struct {
	cluster, namespaced, prometheus, grafana []object
	chart                                    []byte
}

// Tokens stand for template actions in the objects: plain words that YAML
// writes unquoted, replaced in the marshalled text.
const (
	tokNamespace   = "xxnamespacexx"
	tokFullname    = "xxfullnamexx"
	tokWatched     = "xxwatchedxx"
	tokImage       = "xximagexx"
	tokPullPolicy  = "xxpullpolicyxx"
	tokReplicas    = "xxreplicasxx"
	tokShards      = "xxshardsxx"
	tokDashboardNS = "xxdashboardnamespacexx"
	tokName        = "xxnamexx"
	tokSA          = "xxserviceaccountxx"
)

var actions = strings.NewReplacer(
	tokNamespace, `{{ $.Release.Namespace }}`,
	tokFullname, `{{ include "raftsman.fullname" $ }}`,
	tokWatched, `{{ $ns }}`,
	tokImage, `{{ include "raftsman.image" $ }}`,
	tokPullPolicy, `{{ $.Values.image.pullPolicy }}`,
	tokReplicas, `{{ $.Values.replicas }}`,
	tokShards, `{{ $.Values.shards }}`,
	tokDashboardNS, `{{ $.Values.dashboards.namespace | default $.Release.Namespace }}`,
	tokName, `{{ include "raftsman.name" $ }}`,
	tokSA, `{{ include "raftsman.serviceAccountName" $ }}`,
)

// A block token (xxblockNxx) in a line replaces the whole line by the lines of
// block N, at the line's indentation.
var (
	blockRE = regexp.MustCompile(`xxblock(\d+)xx`)
	tokenRE = regexp.MustCompile(`xx(block\d+|namespace|fullname|watched|image|pullpolicy|replicas|shards|dashboardnamespace|name|serviceaccount)xx`)
)

// nameLabel is the label config/ selects the operator's Pods by, with the
// Deployment's name as its value; the chart sets it to its own name
// (nameOverride) with the other labels of helmLabels.
const nameLabel = "app.kubernetes.io/name"

// helmLabels are the labels templates/_helpers.tpl's raftsman.labels puts on
// every object: config/ may set none but nameLabel.
var helmLabels = []string{nameLabel, "app.kubernetes.io/instance", "app.kubernetes.io/version",
	"app.kubernetes.io/managed-by", "helm.sh/chart"}

// gen holds what the templates are made from: the operator's namespace and
// Deployment name in the installs, and the names that become release names.
type gen struct {
	opNS, base string
	sa         string // the operator's service account
	names      map[string]bool
	byLength   []string // names, longest first
	watchFlag  string   // "--watch-namespaces="
	watched    []string // the watched namespaces of config/namespaced
}

// generate returns the chart's generated files by path.
func generate(src *sources) (map[string][]byte, error) {
	crds, rest, ns, dep, err := splitDefault(src.cluster)
	if err != nil {
		return nil, err
	}
	g := &gen{opNS: namespaceOf(dep), base: nameOf(dep), names: map[string]bool{}}
	if nameOf(ns) != g.opNS {
		return nil, fmt.Errorf("the Deployment is in %s, the Namespace is %s", g.opNS, nameOf(ns))
	}
	if g.sa, _ = podSpec(dep)["serviceAccountName"].(string); g.sa == "" {
		return nil, fmt.Errorf("the Deployment names no serviceAccountName")
	}

	both, clusterOnly, perNS, err := g.compare(rest, src.namespaced)
	if err != nil {
		return nil, err
	}
	g.releaseNames(rest, perNS, src.prometheus, src.grafana)

	files := map[string][]byte{}
	items, err := g.chartItems(src, crds, ns, both, clusterOnly, perNS)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		body, err := g.itemText(it)
		if err != nil {
			return nil, err
		}
		if err := addFile(files, g.fileName(it.prefix, it.o), body); err != nil {
			return nil, err
		}
	}

	values, err := g.values(dep, ns, len(src.grafana))
	if err != nil {
		return nil, err
	}
	files["values.yaml"] = values
	files["values.schema.json"] = []byte(valuesSchema)
	if files["README.md"], err = g.readme(values, []byte(valuesSchema), src.chart); err != nil {
		return nil, err
	}
	return files, nil
}

// splitDefault sorts config/default's objects: its CRDs, its one Namespace,
// its one Deployment, and the rest (the Deployment among them).
func splitDefault(cluster []object) (crds, rest []object, ns, dep object, err error) {
	for _, o := range cluster {
		switch kind(o) {
		case "CustomResourceDefinition":
			crds = append(crds, o)
		case "Namespace":
			if ns != nil {
				return nil, nil, nil, nil, fmt.Errorf("config/default has more than one Namespace")
			}
			ns = o
		case "Deployment":
			if dep != nil {
				return nil, nil, nil, nil, fmt.Errorf("config/default has more than one Deployment")
			}
			dep = o
			rest = append(rest, o)
		default:
			rest = append(rest, o)
		}
	}
	if dep == nil || ns == nil {
		return nil, nil, nil, nil, fmt.Errorf("config/default has no Deployment or no Namespace")
	}
	return crds, rest, ns, dep, nil
}

// releaseNames records the names of the objects that become release names:
// the Deployment's and those that begin with it.
func (g *gen) releaseNames(groups ...[]object) {
	for _, group := range groups {
		for _, o := range group {
			if n := nameOf(o); n == g.base || strings.HasPrefix(n, g.base+"-") {
				g.names[n] = true
			}
		}
	}
	for n := range g.names {
		g.byLength = append(g.byLength, n)
	}
	sort.Slice(g.byLength, func(i, j int) bool { return len(g.byLength[i]) > len(g.byLength[j]) })
}

// addFile adds a file to the chart, unless another object took its path.
func addFile(files map[string][]byte, path string, text string) error {
	if _, dup := files[path]; dup {
		return fmt.Errorf("two objects would be written to %s", path)
	}
	files[path] = []byte(text)
	return nil
}

// chartItem is one object of the chart's templates, and how it is wrapped.
type chartItem struct {
	prefix, from, cond string // cond wraps the object in {{- if cond }}
	labels             string // a value whose labels the object gets besides the chart's
	o                  object
	each               bool // once per watched namespace
}

// chartItems are the chart's templated objects, in the order of the files.
// The CRDs are templates rather than files of crds/, which Helm never
// upgrades: see templateKind.
func (g *gen) chartItems(src *sources, crds []object, ns object, both, clusterOnly, perNS []object) ([]chartItem, error) {
	var items []chartItem
	for _, o := range crds {
		items = append(items, chartItem{prefix: "crd-", from: "config/crd", cond: "$.Values.crds.enabled", o: o})
	}
	items = append(items, chartItem{from: "config/default", cond: "$.Values.createNamespace", labels: "$.Values.namespaceLabels", o: ns})
	for _, o := range both {
		it := chartItem{from: "config/default", o: o}
		if g.isOperatorSA(o) {
			it.cond = "$.Values.serviceAccount.create"
		}
		items = append(items, it)
	}
	for _, o := range clusterOnly {
		items = append(items, chartItem{from: "config/default", cond: "not $.Values.watchNamespaces", o: o})
	}
	for _, o := range perNS {
		items = append(items, chartItem{from: "config/namespaced", o: o, each: true})
	}
	for _, o := range src.prometheus {
		it := chartItem{prefix: "prometheus-", from: "config/prometheus", cond: "$.Values.prometheus.podMonitors.enabled", o: o}
		switch kind(o) {
		case "PrometheusRule":
			it.cond, it.labels = "$.Values.prometheus.rules.enabled", "$.Values.prometheus.rules.labels"
		case "PodMonitor":
			it.labels = "$.Values.prometheus.podMonitors.labels"
		}
		items = append(items, it)
	}
	for _, o := range src.grafana {
		if kind(o) != "ConfigMap" {
			return nil, fmt.Errorf("config/grafana: %s %s: the chart takes only ConfigMaps from there (dashboards.enabled); extend hack/chartgen for other kinds", kind(o), nameOf(o))
		}
		items = append(items, chartItem{prefix: "grafana-", from: "config/grafana", cond: "$.Values.dashboards.enabled", labels: "$.Values.dashboards.labels", o: o})
	}
	return items, nil
}

// isOperatorSA tells the operator's ServiceAccount from others (the
// metrics reader's).
func (g *gen) isOperatorSA(o object) bool {
	return kind(o) == "ServiceAccount" && nameOf(o) == g.sa && namespaceOf(o) == g.opNS
}

// itemText is the text of an item's template file.
func (g *gen) itemText(it chartItem) (string, error) {
	t := &templ{}
	text, err := g.template(t, it)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", kind(it.o), nameOf(it.o), err)
	}
	comment := "{{/* " + generatedMarker + " from " + it.from + " (make dist). DO NOT EDIT. */"
	text = strings.TrimSuffix(text, "\n")
	switch {
	case it.each:
		return comment + "}}\n{{- range $ns := $.Values.watchNamespaces }}\n---\n" + text + "\n{{- end }}\n", nil
	case it.cond != "":
		return comment + "}}\n{{- if " + it.cond + " }}\n" + text + "\n{{- end }}\n", nil
	default:
		return comment + " -}}\n" + text + "\n", nil
	}
}

// compare splits the cluster-wide install's objects (less CRDs and Namespace)
// into those config/namespaced has too and those it lacks, and returns the
// objects config/namespaced has in its first watched namespace. Anything else
// that differs is an error.
func (g *gen) compare(cluster, namespaced []object) (both, clusterOnly, perNS []object, err error) {
	idx := map[string]object{}
	var nsDep object
	for _, o := range namespaced {
		switch kind(o) {
		case "Namespace", "CustomResourceDefinition":
			continue
		case "Deployment":
			nsDep = o
		}
		idx[keyOf(o)] = o
	}
	if nsDep == nil {
		return nil, nil, nil, fmt.Errorf("config/namespaced has no Deployment")
	}
	if err := g.watchArg(nsDep); err != nil {
		return nil, nil, nil, err
	}
	for _, o := range cluster {
		other, ok := idx[keyOf(o)]
		if !ok {
			clusterOnly = append(clusterOnly, o)
			continue
		}
		delete(idx, keyOf(o))
		if kind(o) == "Deployment" {
			other = withoutWatchArg(other, g.watchFlag)
		}
		if !reflect.DeepEqual(o, other) {
			return nil, nil, nil, fmt.Errorf("%s %s differs between config/default and config/namespaced beyond --watch-namespaces; hack/chartgen cannot template that", kind(o), nameOf(o))
		}
		both = append(both, o)
	}
	// What is left is config/namespaced's own: the same objects in each
	// watched namespace.
	byNS := map[string][]object{}
	for _, o := range idx {
		n := namespaceOf(o)
		if !slices.Contains(g.watched, n) {
			return nil, nil, nil, fmt.Errorf("%s %s in %q is only in config/namespaced and not in a watched namespace; hack/chartgen cannot template that", kind(o), nameOf(o), n)
		}
		byNS[n] = append(byNS[n], o)
	}
	for _, objs := range byNS {
		sort.Slice(objs, func(i, j int) bool { return keyOf(objs[i]) < keyOf(objs[j]) })
	}
	first := byNS[g.watched[0]]
	for _, n := range g.watched[1:] {
		if !reflect.DeepEqual(inNamespace(first, "x"), inNamespace(byNS[n], "x")) {
			return nil, nil, nil, fmt.Errorf("config/namespaced does not have the same objects in %s and %s", g.watched[0], n)
		}
	}
	return both, clusterOnly, first, nil
}

// watchArg finds --watch-namespaces in config/namespaced's Deployment: the
// last flag (the chart puts it after the others).
func (g *gen) watchArg(dep object) error {
	c, err := container(dep)
	if err != nil {
		return err
	}
	args, _ := c["args"].([]any)
	const flag = "--watch-namespaces="
	if len(args) == 0 || !strings.HasPrefix(fmt.Sprint(args[len(args)-1]), flag) {
		return fmt.Errorf("the Deployment of config/namespaced does not end its args with %s", flag)
	}
	g.watchFlag = flag
	g.watched = strings.Split(strings.TrimPrefix(args[len(args)-1].(string), flag), ",")
	return nil
}

func withoutWatchArg(dep object, flag string) object {
	d := deepCopy(dep)
	c, _ := container(d)
	args := c["args"].([]any)
	c["args"] = args[:len(args)-1]
	return d
}

// templ collects the blocks of one template.
type templ struct {
	blocks []func(indent string) []string
}

// block registers a block and returns its token.
func (t *templ) block(f func(indent string) []string) string {
	t.blocks = append(t.blocks, f)
	return fmt.Sprintf("xxblock%dxx", len(t.blocks)-1)
}

// template turns one object into its template text.
func (g *gen) template(t *templ, it chartItem) (string, error) {
	o := deepCopy(it.o)
	if src, err := marshal(o); err != nil {
		return "", err
	} else if m := tokenRE.FindString(src); m != "" {
		return "", fmt.Errorf("holds %q, which hack/chartgen uses as a token", m)
	}
	md, _ := o["metadata"].(map[string]any)
	if it.prefix == "grafana-" && (md["namespace"] == nil || md["namespace"] == g.opNS) {
		md["namespace"] = tokDashboardNS
	}
	if it.each {
		md["namespace"] = tokWatched
	}
	// The CRDs are the API: nothing in them names the install's objects.
	if kind(o) != "CustomResourceDefinition" {
		if err := g.serviceAccount(t, o); err != nil {
			return "", err
		}
		g.rewrite(o)
		g.selectors(o, false)
	}
	if err := g.templateKind(t, o); err != nil {
		return "", err
	}
	if err := g.labels(t, md, it.labels); err != nil {
		return "", err
	}
	b, err := marshal(o)
	if err != nil {
		return "", err
	}
	return actions.Replace(expandBlocks(t, escapeActions(b))), nil
}

// templateKind puts the values into what the object's kind lets them set:
// a CRD's resource policy, a Namespace's labels, the operator's Deployment, a
// PodMonitor's namespaces.
func (g *gen) templateKind(t *templ, o object) error {
	md, _ := o["metadata"].(map[string]any)
	switch kind(o) {
	case "CustomResourceDefinition":
		// Templates, so that helm upgrade upgrades them (Helm never upgrades
		// the files of crds/); kept, so that helm uninstall, or an upgrade
		// to a chart without them, leaves them, and with them every
		// EtcdCluster.
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann["helm.sh/resource-policy"] = "keep"
	case "Namespace":
		// Its labels are namespaceLabels, whose defaults are these.
		delete(md, "labels")
	case "Deployment":
		return g.deployment(t, o)
	case "PodMonitor":
		spec, _ := o["spec"].(map[string]any)
		if sel, ok := spec["namespaceSelector"].(map[string]any); ok && reflect.DeepEqual(sel, map[string]any{"any": true}) {
			// With watched namespaces, only their Pods: a PodMonitor of each
			// release scrapes the members of its own operator only.
			spec["namespaceSelector"] = t.block(func(in string) []string {
				return []string{
					in + "namespaceSelector:",
					in + "  {{- if $.Values.watchNamespaces }}",
					in + "  matchNames: {{- toYaml $.Values.watchNamespaces | nindent " + strconv.Itoa(len(in)+2) + " }}",
					in + "  {{- else }}",
					in + "  any: true",
					in + "  {{- end }}",
				}
			})
		}
	}
	return nil
}

// labels puts into md's labels the chart's (raftsman.labels in
// templates/_helpers.tpl), the object's own, and those of the value extra,
// when set, which replace own labels of the same key (the schema refuses
// the chart's keys there). Of the chart's, config/ may set only nameLabel, to
// the Deployment's name.
func (g *gen) labels(t *templ, md map[string]any, extra string) error {
	own, _ := md["labels"].(map[string]any)
	for _, k := range helmLabels {
		v, ok := own[k]
		if !ok {
			continue
		}
		if k != nameLabel || v != g.base {
			return fmt.Errorf("has the label %s: %v, which the chart sets", k, v)
		}
		delete(own, k)
	}
	keys := make([]string, 0, len(own))
	for k := range own {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ownLines []string
	for _, k := range keys {
		line, err := marshal(map[string]any{k: own[k]})
		if err != nil {
			return err
		}
		ownLines = append(ownLines, strings.TrimSuffix(line, "\n"))
	}
	md["labels"] = map[string]any{t.block(func(in string) []string {
		n := strconv.Itoa(len(in))
		l := []string{in + `{{- include "raftsman.labels" $ | nindent ` + n + " }}"}
		for i, line := range ownLines {
			if extra == "" {
				l = append(l, in+line)
				continue
			}
			l = append(l, in+`{{- if not (hasKey (`+extra+` | default dict) "`+keys[i]+`") }}`, in+line, in+"{{- end }}")
		}
		if extra != "" {
			l = append(l, in+"{{- with "+extra+" }}", in+"{{- toYaml . | nindent "+n+" }}", in+"{{- end }}")
		}
		return l
	}): nil}
	return nil
}

// selectors makes the selectors that pick the operator's Pods by nameLabel
// pick the chart's name (nameOverride) instead of the Deployment's.
func (g *gen) selectors(v any, in bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if in && k == nameLabel && c == g.base {
				v[k] = tokName
				continue
			}
			g.selectors(c, in || k == "selector" || k == "matchLabels")
		}
	case []any:
		for _, c := range v {
			g.selectors(c, in)
		}
	}
}

// serviceAccount makes the operator's ServiceAccount, and the subjects of
// bindings that name it, follow serviceAccount.name; the account gets the
// annotations of serviceAccount.annotations. (The Deployment's
// serviceAccountName: see podTemplate.)
func (g *gen) serviceAccount(t *templ, o object) error {
	if g.isOperatorSA(o) {
		md := o["metadata"].(map[string]any)
		if _, ok := md["annotations"]; ok {
			return fmt.Errorf("has annotations; hack/chartgen puts serviceAccount.annotations there")
		}
		md["name"] = tokSA
		md[t.block(func(in string) []string {
			return []string{
				in + "{{- with $.Values.serviceAccount.annotations }}",
				in + "annotations: {{- toYaml . | nindent " + strconv.Itoa(len(in)+2) + " }}",
				in + "{{- end }}",
			}
		})] = nil
	}
	subjects, _ := o["subjects"].([]any)
	for _, s := range subjects {
		sub, _ := s.(map[string]any)
		if sub["kind"] == "ServiceAccount" && sub["name"] == g.sa && sub["namespace"] == g.opNS {
			sub["name"] = tokSA
		}
	}
	return nil
}

// expandBlocks replaces each line that holds a block token by the block's
// lines, at the line's indentation.
func expandBlocks(t *templ, text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		m := blockRE.FindStringSubmatch(line)
		if m == nil {
			out = append(out, line)
			continue
		}
		i, _ := strconv.Atoi(m[1])
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		out = append(out, t.blocks[i](indent)...)
	}
	return strings.Join(out, "\n")
}

// deployment puts the values into the operator's Deployment.
func (g *gen) deployment(t *templ, o object) error {
	spec, _ := o["spec"].(map[string]any)
	if _, ok := spec["replicas"]; !ok {
		return fmt.Errorf("no spec.replicas")
	}
	spec["replicas"] = tokReplicas
	c, err := container(o)
	if err != nil {
		return err
	}
	for _, f := range []string{"image", "imagePullPolicy", "resources"} {
		if _, ok := c[f]; !ok {
			return fmt.Errorf("no %s in its container", f)
		}
	}
	c["image"] = tokImage
	c["imagePullPolicy"] = tokPullPolicy
	c["resources"] = t.block(func(in string) []string {
		return []string{in + "resources: {{- toYaml $.Values.resources | nindent " + strconv.Itoa(len(in)+2) + " }}"}
	})
	args, _ := c["args"].([]any)
	shards := false
	for i, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, "--shards=") {
			args[i], shards = "--shards="+tokShards, true
		}
	}
	if !shards {
		return fmt.Errorf("no --shards flag")
	}
	c["args"] = append(args, t.block(func(in string) []string {
		return []string{
			in + "{{- with $.Values.watchNamespaces }}",
			in + "- " + g.watchFlag + `{{ join "," . }}`,
			in + "{{- end }}",
			in + "{{- range $.Values.extraArgs }}",
			in + "- {{ . | quote }}",
			in + "{{- end }}",
		}
	}))
	return g.podTemplate(t, spec["template"].(map[string]any))
}

// podTemplate puts the values into the operator's Pod template: its labels
// and annotations, service account and scheduling.
func (g *gen) podTemplate(t *templ, tmpl map[string]any) error {
	md, _ := tmpl["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		tmpl["metadata"] = md
	}
	if _, ok := md["annotations"]; ok {
		return fmt.Errorf("its Pod template has annotations; hack/chartgen puts podAnnotations there")
	}
	if err := g.labels(t, md, "$.Values.podLabels"); err != nil {
		return fmt.Errorf("its Pod template %w", err)
	}
	md[t.block(func(in string) []string {
		return []string{
			in + "{{- with $.Values.podAnnotations }}",
			in + "annotations: {{- toYaml . | nindent " + strconv.Itoa(len(in)+2) + " }}",
			in + "{{- end }}",
		}
	})] = nil
	pod := tmpl["spec"].(map[string]any)
	pod["serviceAccountName"] = tokSA
	pod[t.block(func(in string) []string {
		l := []string{
			in + "{{- with $.Values.priorityClassName }}",
			in + "priorityClassName: {{ . | quote }}",
			in + "{{- end }}",
		}
		for _, f := range []string{"imagePullSecrets", "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"} {
			l = append(l,
				in+"{{- with $.Values."+f+" }}",
				in+f+": {{- toYaml . | nindent "+strconv.Itoa(len(in)+2)+" }}",
				in+"{{- end }}")
		}
		return l
	})] = nil
	return nil
}

// rewrite changes, in every string but labels and selectors, the operator's
// namespace into the release's and the names of the install's objects into
// the release's names.
func (g *gen) rewrite(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if k == "labels" || k == "matchLabels" || k == "selector" {
				continue
			}
			v[k] = g.rewrite(c)
		}
	case []any:
		for i := range v {
			v[i] = g.rewrite(v[i])
		}
	case string:
		if g.names[v] {
			return g.nameToken(v)
		}
		for _, n := range g.byLength {
			v = strings.ReplaceAll(v, g.opNS+"/"+n, tokNamespace+"/"+g.nameToken(n))
		}
		return strings.ReplaceAll(v, g.opNS, tokNamespace)
	}
	return v
}

func (g *gen) nameToken(n string) string { return tokFullname + strings.TrimPrefix(n, g.base) }

func (g *gen) fileName(prefix string, o object) string {
	k := strings.ToLower(kind(o))
	switch k {
	case "namespace":
		return "templates/namespace.yaml"
	case "customresourcedefinition":
		return "templates/" + prefix + nameOf(o) + ".yaml"
	}
	n := nameOf(o)
	if g.names[n] {
		return "templates/" + prefix + k + strings.TrimPrefix(n, g.base) + ".yaml"
	}
	return "templates/" + prefix + k + "-" + n + ".yaml"
}

// escapeActions makes text that holds "{{" or "}}" (alerts' templates,
// dashboards' legends) come out of Helm as it is: a whole {{ ... }} on one
// line goes in a raw string action, and so does a lone "{{" or "}}", with a
// "{" just before it (else "{" and the action's "{{" would start an action).
func escapeActions(s string) string {
	var b []byte
	raw := func(r string) {
		for len(b) > 0 && b[len(b)-1] == '{' {
			b, r = b[:len(b)-1], "{"+r
		}
		b = append(b, "{{`"+r+"`}}"...)
	}
	for len(s) > 0 {
		i, j := strings.Index(s, "{{"), strings.Index(s, "}}")
		switch {
		case i < 0 && j < 0:
			b, s = append(b, s...), ""
		case j >= 0 && (i < 0 || j < i):
			b = append(b, s[:j]...)
			raw("}}")
			s = s[j+2:]
		default:
			b, s = append(b, s[:i]...), s[i:]
			end := strings.Index(s, "}}")
			if nl := strings.IndexByte(s, '\n'); end > 0 && (nl < 0 || end < nl) && !strings.Contains(s[:end+2], "`") {
				raw(s[:end+2])
				s = s[end+2:]
			} else {
				raw("{{")
				s = s[2:]
			}
		}
	}
	return string(b)
}

//go:embed values.yaml.tmpl
var valuesTemplate string

// values writes values.yaml: the comments of values.yaml.tmpl and the
// defaults of the cluster-wide install.
func (g *gen) values(dep, ns object, dashboards int) ([]byte, error) {
	c, err := container(dep)
	if err != nil {
		return nil, err
	}
	repo, tag, digest := splitImage(fmt.Sprint(c["image"]))
	shards := 0
	for _, a := range c["args"].([]any) {
		if s, _ := a.(string); strings.HasPrefix(s, "--shards=") {
			if shards, err = strconv.Atoi(strings.TrimPrefix(s, "--shards=")); err != nil {
				return nil, fmt.Errorf("the Deployment's %s: %w", s, err)
			}
		}
	}
	spec := dep["spec"].(map[string]any)
	data := map[string]any{
		"Marker":     generatedMarker,
		"Repository": repo, "Tag": tag, "Digest": digest, "PullPolicy": c["imagePullPolicy"],
		"Replicas":   spec["replicas"],
		"Shards":     shards,
		"Resources":  c["resources"],
		"Namespace":  g.opNS,
		"Base":       g.base,
		"Watched":    g.watched,
		"Labels":     ns["metadata"].(map[string]any)["labels"],
		"Dashboards": dashboards,
	}
	tmpl, err := template.New("values").Funcs(template.FuncMap{
		"yaml": func(indent int, v any) (string, error) {
			b, err := marshal(v)
			pad := strings.Repeat(" ", indent)
			return pad + strings.ReplaceAll(strings.TrimSuffix(b, "\n"), "\n", "\n"+pad), err
		},
		"scalar": func(v any) (string, error) {
			b, err := marshal(v)
			return strings.TrimSuffix(b, "\n"), err
		},
		"join": strings.Join,
	}).Parse(valuesTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// splitImage splits repository[:tag][@digest].
func splitImage(ref string) (repo, tag, digest string) {
	ref, digest, _ = strings.Cut(ref, "@")
	repo = ref
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	return repo, tag, digest
}

func podSpec(dep object) map[string]any {
	spec, _ := dep["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	return pod
}

func container(dep object) (map[string]any, error) {
	cs, _ := podSpec(dep)["containers"].([]any)
	if len(cs) != 1 {
		return nil, fmt.Errorf("the Deployment %s has %d containers, want 1", nameOf(dep), len(cs))
	}
	c, _ := cs[0].(map[string]any)
	return c, nil
}

func kind(o object) string { s, _ := o["kind"].(string); return s }

func metaString(o object, f string) string {
	md, _ := o["metadata"].(map[string]any)
	s, _ := md[f].(string)
	return s
}

func nameOf(o object) string      { return metaString(o, "name") }
func namespaceOf(o object) string { return metaString(o, "namespace") }

func keyOf(o object) string {
	group, _, _ := strings.Cut(fmt.Sprint(o["apiVersion"]), "/")
	return group + "/" + kind(o) + "/" + namespaceOf(o) + "/" + nameOf(o)
}

func inNamespace(objs []object, ns string) []object {
	var out []object
	for _, o := range objs {
		o = deepCopy(o)
		o["metadata"].(map[string]any)["namespace"] = ns
		out = append(out, o)
	}
	return out
}

func deepCopy(o object) object {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	c, err := decodeJSON(b)
	if err != nil {
		panic(err)
	}
	return c
}

// decodeJSON decodes an object with its integers as int64, so that they are
// written back as they were.
func decodeJSON(b []byte) (object, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var o object
	if err := d.Decode(&o); err != nil {
		return nil, err
	}
	return numbers(o).(object), nil
}

func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			v[k] = numbers(c)
		}
	case []any:
		for i := range v {
			v[i] = numbers(v[i])
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

// marshal writes YAML as kubectl would read it back, with keys in order and
// no line folded (a folded line would split the {{ }} that escapeActions
// looks for).
func marshal(v any) (string, error) {
	var b strings.Builder
	e := yamlv3.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return b.String(), e.Close()
}
