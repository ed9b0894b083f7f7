package rules

// The tests below check the Grafana dashboards in config/grafana: every
// PromQL query (panel targets and query variables) parses with Prometheus's
// own parser once Grafana's variables are replaced, names only metrics of
// config/grafana/metrics.txt (what a real etcd and the operator's registry
// serve, written by `make grafana-metrics`), and uses only labels those
// metrics have; and the ConfigMaps Grafana's sidecar loads hold exactly the
// dashboards' JSON.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

const (
	grafanaDir    = "../../config/grafana"
	dashboardsDir = grafanaDir + "/dashboards"
	metricsFile   = grafanaDir + "/metrics.txt"
	// maxDashboardBytes keeps a ConfigMap well under the 256 KiB that
	// `kubectl apply` may store in its last-applied annotation.
	maxDashboardBytes = 128 << 10
)

// knownMetric is one metric of metrics.txt.
type knownMetric struct {
	sources map[string]bool // etcd, etcd-extensive, operator, prometheus
	types   map[string]bool
	labels  map[string]bool
}

// targetLabels are the labels Prometheus adds to every series of a target
// of the PodMonitors in config/prometheus, and cluster, which a fleet's
// Prometheus adds to tell its Kubernetes clusters apart (a series may lack
// it); etcdTargetLabels the ones the etcd PodMonitor adds by relabelling.
var (
	targetLabels     = []string{"job", "instance", "namespace", "pod", "container", "endpoint", "cluster"}
	etcdTargetLabels = []string{"etcd_cluster", "member"}
)

// prometheusMetrics are the series Prometheus makes for each target.
var prometheusMetrics = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"scrape_samples_post_metric_relabeling", "scrape_series_added"}

func loadKnownMetrics(t *testing.T) map[string]*knownMetric {
	t.Helper()
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]*knownMetric{}
	add := func(source, typ, name string, ls []string) {
		m := known[name]
		if m == nil {
			m = &knownMetric{sources: map[string]bool{}, types: map[string]bool{}, labels: map[string]bool{}}
			known[name] = m
		}
		m.sources[source] = true
		m.types[typ] = true
		for _, l := range ls {
			m.labels[l] = true
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("%s:%d: want source, type, name and labels, got %q", metricsFile, n, line)
		}
		var ls []string
		if f[3] != "-" {
			ls = strings.Split(f[3], ",")
		}
		add(f[0], f[1], f[2], ls)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"etcd", "operator"} {
		found := false
		for _, m := range known {
			found = found || m.sources[source]
		}
		if !found {
			t.Fatalf("%s has no %s metric: run make grafana-metrics", metricsFile, source)
		}
	}
	for _, name := range prometheusMetrics {
		add("prometheus", "gauge", name, nil)
	}
	return known
}

// labelSet is the labels an expression's series may have; nil when not
// known (an unknown metric, reported once).
type labelSet map[string]bool

func (s labelSet) with(ls ...string) labelSet {
	out := maps.Clone(s)
	if out == nil {
		out = labelSet{}
	}
	for _, l := range ls {
		out[l] = true
	}
	return out
}

func (s labelSet) without(ls ...string) labelSet {
	out := maps.Clone(s)
	for _, l := range ls {
		delete(out, l)
	}
	return out
}

// checker checks one PromQL expression against the known metrics.
type checker struct {
	known map[string]*knownMetric
	// extensive allows the metrics etcd serves only with
	// --metrics=extensive: an alert on them stays quiet without it, a
	// dashboard panel would be empty on a member with etcd's default.
	extensive bool
	errs      []string
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// metricOf is the metric a selector names, "" if none.
func metricOf(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// labels returns the labels of an expression's result and records what is
// wrong in it: unknown metrics, matchers and groupings on labels the series
// do not have, rates of gauges, quantiles of buckets without le.
func (c *checker) labels(e parser.Expr) labelSet {
	switch n := e.(type) {
	case *parser.VectorSelector:
		name := metricOf(n)
		if name == "" {
			c.errorf("%s selects no metric by name", n)
			return labelSet{}
		}
		m, ok := c.known[name]
		if !ok {
			c.errorf("metric %s is not in %s", name, metricsFile)
			return nil
		}
		if m.sources["etcd-extensive"] && !c.extensive {
			c.errorf("%s is served only by a member with --metrics=extensive, not by etcd's default (basic)", name)
		}
		ls := labelSet(maps.Clone(m.labels)).with(targetLabels...)
		if m.sources["etcd"] || m.sources["etcd-extensive"] || m.sources["prometheus"] {
			ls = ls.with(etcdTargetLabels...)
		}
		for _, matcher := range n.LabelMatchers {
			if matcher.Name != labels.MetricName && !ls[matcher.Name] {
				c.errorf("%s has no label %s (in %s)", name, matcher.Name, n)
			}
		}
		return ls
	case *parser.MatrixSelector:
		return c.labels(n.VectorSelector)
	case *parser.SubqueryExpr:
		return c.labels(n.Expr)
	case *parser.ParenExpr:
		return c.labels(n.Expr)
	case *parser.StepInvariantExpr:
		return c.labels(n.Expr)
	case *parser.UnaryExpr:
		return c.labels(n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return labelSet{}
	case *parser.AggregateExpr:
		in := c.labels(n.Expr)
		if n.Param != nil {
			c.labels(n.Param)
		}
		for _, g := range n.Grouping {
			if in != nil && !in[g] {
				c.errorf("%s groups by %s, which %s does not have", n.Op, g, n.Expr)
			}
		}
		switch {
		case n.Op == parser.TOPK || n.Op == parser.BOTTOMK || n.Op == parser.LIMITK || n.Op == parser.LIMIT_RATIO:
			return in
		case n.Without:
			if in == nil {
				return nil
			}
			return in.without(n.Grouping...)
		case n.Op == parser.COUNT_VALUES:
			if s, ok := n.Param.(*parser.StringLiteral); ok {
				return labelSet{}.with(n.Grouping...).with(s.Val)
			}
		}
		return labelSet{}.with(n.Grouping...)
	case *parser.Call:
		return c.call(n)
	case *parser.BinaryExpr:
		lhs, rhs := c.labels(n.LHS), c.labels(n.RHS)
		switch {
		case n.LHS.Type() == parser.ValueTypeScalar:
			return rhs
		case n.RHS.Type() == parser.ValueTypeScalar:
			return lhs
		}
		vm := n.VectorMatching
		if vm == nil {
			return lhs
		}
		if lhs == nil || rhs == nil {
			return nil
		}
		if vm.On {
			for _, l := range vm.MatchingLabels {
				if !lhs[l] || !rhs[l] {
					c.errorf("%s matches on %s, which a side does not have", n.Op, l)
				}
			}
		}
		if n.Op.IsSetOperator() {
			if n.Op == parser.LOR {
				return lhs.with(slices.Collect(maps.Keys(rhs))...)
			}
			return lhs
		}
		switch vm.Card {
		case parser.CardManyToOne:
			return lhs.with(vm.Include...)
		case parser.CardOneToMany:
			return rhs.with(vm.Include...)
		}
		if vm.On {
			return labelSet{}.with(vm.MatchingLabels...)
		}
		return lhs.without(vm.MatchingLabels...)
	}
	c.errorf("cannot check %T %s", e, e)
	return labelSet{}
}

// counterFuncs need counters: a gauge's rate is meaningless.
var counterFuncs = map[string]bool{"rate": true, "irate": true, "increase": true, "resets": true}

func (c *checker) call(n *parser.Call) labelSet {
	var args []labelSet
	for _, a := range n.Args {
		args = append(args, c.labels(a))
	}
	name := n.Func.Name
	if counterFuncs[name] {
		if ms, ok := n.Args[0].(*parser.MatrixSelector); ok {
			if vs, ok := ms.VectorSelector.(*parser.VectorSelector); ok {
				metric := metricOf(vs)
				if m, ok := c.known[metric]; ok && !m.types["counter"] && !m.types["histogram"] && !m.types["summary"] && !strings.HasSuffix(metric, "_total") {
					c.errorf("%s of %s, which is a %v, not a counter", name, metric, slices.Collect(maps.Keys(m.types)))
				}
			}
		}
	}
	str := func(i int) string {
		if s, ok := n.Args[i].(*parser.StringLiteral); ok {
			return s.Val
		}
		return ""
	}
	if slices.ContainsFunc(args, func(a labelSet) bool { return a == nil }) && name != "vector" {
		return nil
	}
	switch name {
	case "histogram_quantile":
		if !args[1]["le"] {
			c.errorf("histogram_quantile of %s, which has no le label", n.Args[1])
		}
		return args[1].without("le")
	case "label_replace":
		if src := str(3); src != "" && !args[0][src] {
			c.errorf("label_replace reads %s, which %s does not have", src, n.Args[0])
		}
		return args[0].with(str(1))
	case "label_join":
		for i := 3; i < len(n.Args); i++ {
			if src := str(i); !args[0][src] {
				c.errorf("label_join reads %s, which %s does not have", src, n.Args[0])
			}
		}
		return args[0].with(str(1))
	case "vector", "absent", "absent_over_time":
		return labelSet{}
	}
	if n.Func.ReturnType == parser.ValueTypeScalar {
		return labelSet{}
	}
	for i, t := range n.Func.ArgTypes {
		if i < len(args) && (t == parser.ValueTypeVector || t == parser.ValueTypeMatrix) {
			return args[i]
		}
	}
	return labelSet{}
}

// grafanaVar matches Grafana's variable syntaxes: $name, ${name},
// ${name:format} and the deprecated [[name]].
var grafanaVar = regexp.MustCompile(`\$(\w+)|\$\{(\w+)(?::\w+)?\}|\[\[(\w+)(?::\w+)?\]\]`)

// builtinVars are Grafana's global variables a query may use, with a value
// of the right kind.
var builtinVars = map[string]string{
	"__rate_interval": "1m", "__interval": "30s", "__range": "6h",
	"__interval_ms": "30000", "__range_s": "21600", "__range_ms": "21600000",
}

// substitute replaces the dashboard's variables with a sample value, as
// Grafana would before sending the query. $1 in label_replace is not a
// variable; an unknown name is an error.
func substitute(q string, vars map[string]bool) (string, error) {
	var errs []string
	out := grafanaVar.ReplaceAllStringFunc(q, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if strings.HasPrefix(m, "[[") {
			errs = append(errs, fmt.Sprintf("%s: use $%s, [[...]] is deprecated", m, name))
		}
		if v, ok := builtinVars[name]; ok {
			return v
		}
		if vars[name] {
			return "sample"
		}
		if regexp.MustCompile(`^\d+$`).MatchString(name) {
			return m
		}
		errs = append(errs, fmt.Sprintf("%s: no variable %s in the dashboard", m, name))
		return m
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// legendLabel matches {{label}} in a legend format.
var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// checkQuery checks a PromQL query of a dashboard and, if given, the
// legend format of its series.
func checkQuery(known map[string]*knownMetric, vars map[string]bool, query, legend string) []string {
	ls, errs := checkExpr(known, vars, query)
	for _, m := range legendLabel.FindAllStringSubmatch(legend, -1) {
		if ls != nil && !ls[m[1]] {
			errs = append(errs, fmt.Sprintf("the legend names %s, which the result does not have", m[1]))
		}
	}
	return errs
}

// checkExpr checks a PromQL query and returns the labels of its result
// (nil if it does not parse).
func checkExpr(known map[string]*knownMetric, vars map[string]bool, query string) (labelSet, []string) {
	q, err := substitute(query, vars)
	if err != nil {
		return nil, []string{err.Error()}
	}
	expr, err := newParser().ParseExpr(q)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if typ := expr.Type(); typ != parser.ValueTypeVector && typ != parser.ValueTypeScalar {
		return nil, []string{fmt.Sprintf("a %s, Grafana wants an instant vector or a scalar", typ)}
	}
	c := &checker{known: known}
	ls := c.labels(expr)
	return ls, c.errs
}

// labelValuesQuery reads label_values(selector, label) and label_values(label).
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\(\s*(?:(.+?)\s*,\s*)?(\w+)\s*\)\s*$`)

// checkVariableQuery checks the query of a query variable.
func checkVariableQuery(known map[string]*knownMetric, vars map[string]bool, query string) []string {
	if m := labelValuesQuery.FindStringSubmatch(query); m != nil {
		if m[1] == "" {
			return nil
		}
		ls, errs := checkExpr(known, vars, m[1])
		if ls != nil && !ls[m[2]] {
			errs = append(errs, fmt.Sprintf("label_values of %s, which %s does not have", m[2], m[1]))
		}
		return errs
	}
	if m := regexp.MustCompile(`^\s*query_result\((.+)\)\s*$`).FindStringSubmatch(query); m != nil {
		_, errs := checkExpr(known, vars, m[1])
		return errs
	}
	return []string{"not label_values(...) or query_result(...): cannot check it"}
}

// dashboardQuery is one query of a dashboard and where it is.
type dashboardQuery struct {
	where, expr, legend string
	variable            bool
	// annotation is the name of the annotation the query is of, if any.
	annotation string
}

// dashboardAnnotation is a Prometheus annotation of a dashboard, with what
// the tests look at.
type dashboardAnnotation struct {
	Name        string `json:"name"`
	Datasource  struct{ Type, UID string }
	Expr        string `json:"expr"`
	Step        string `json:"step"`
	TitleFormat string `json:"titleFormat"`
	TextFormat  string `json:"textFormat"`
	TagKeys     string `json:"tagKeys"`
}

// dashboard is a dashboard JSON, with what the tests look at.
type dashboard struct {
	file        string
	raw         []byte
	uid         string
	title       string
	vars        map[string]bool
	varDefs     []map[string]any
	queries     []dashboardQuery
	annotations []dashboardAnnotation
	errs        []string
}

func loadDashboards(t *testing.T) []*dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no dashboard in %s", dashboardsDir)
	}
	var out []*dashboard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseDashboard(t, f, raw))
	}
	return out
}

func parseDashboard(t *testing.T, file string, raw []byte) *dashboard {
	t.Helper()
	var doc struct {
		UID         string                               `json:"uid"`
		Title       string                               `json:"title"`
		ID          any                                  `json:"id"`
		Templating  struct{ List []map[string]any }      `json:"templating"`
		Annotations struct{ List []dashboardAnnotation } `json:"annotations"`
		Panels      []map[string]any                     `json:"panels"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	d := &dashboard{file: filepath.Base(file), raw: raw, uid: doc.UID, title: doc.Title, vars: map[string]bool{}}
	if doc.ID != nil {
		d.errs = append(d.errs, fmt.Sprintf("id is %v: a provisioned dashboard has none (null)", doc.ID))
	}
	d.varDefs = doc.Templating.List
	for _, a := range doc.Annotations.List {
		if a.Datasource.Type != "prometheus" {
			continue
		}
		if a.Datasource.UID != "${datasource}" {
			d.errs = append(d.errs, fmt.Sprintf("annotation %q: data source %v, want the variable ${datasource}", a.Name, a.Datasource.UID))
		}
		d.annotations = append(d.annotations, a)
		// The labels its title, text and tags name must be in the result.
		legend := a.TitleFormat + a.TextFormat
		for _, k := range strings.Split(a.TagKeys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				legend += "{{" + k + "}}"
			}
		}
		d.queries = append(d.queries, dashboardQuery{where: fmt.Sprintf("annotation %q", a.Name), expr: a.Expr, legend: legend, annotation: a.Name})
	}
	for _, v := range doc.Templating.List {
		name, _ := v["name"].(string)
		d.vars[name] = true
		if v["type"] != "query" {
			continue
		}
		query, _ := v["query"].(string)
		if m, ok := v["query"].(map[string]any); ok {
			query, _ = m["query"].(string)
		}
		d.queries = append(d.queries, dashboardQuery{where: "variable " + name, expr: query, variable: true})
	}
	var walk func(panels []map[string]any)
	ids := map[float64]bool{}
	walk = func(panels []map[string]any) {
		for _, p := range panels {
			title, _ := p["title"].(string)
			if id, ok := p["id"].(float64); !ok || ids[id] {
				d.errs = append(d.errs, fmt.Sprintf("panel %q: id %v missing or not unique", title, p["id"]))
			} else {
				ids[id] = true
			}
			if _, ok := p["gridPos"].(map[string]any); !ok {
				d.errs = append(d.errs, fmt.Sprintf("panel %q has no gridPos", title))
			}
			if ds, ok := p["datasource"].(map[string]any); ok && ds["type"] == "prometheus" && ds["uid"] != "${datasource}" {
				d.errs = append(d.errs, fmt.Sprintf("panel %q: data source %v, want the variable ${datasource}", title, ds["uid"]))
			}
			refIDs := map[string]bool{}
			targets, _ := p["targets"].([]any)
			for _, tg := range targets {
				tgt, _ := tg.(map[string]any)
				ref, _ := tgt["refId"].(string)
				if ref == "" || refIDs[ref] {
					d.errs = append(d.errs, fmt.Sprintf("panel %q: refId %q missing or not unique", title, ref))
				}
				refIDs[ref] = true
				expr, _ := tgt["expr"].(string)
				if expr == "" {
					d.errs = append(d.errs, fmt.Sprintf("panel %q, query %s: no expr", title, ref))
					continue
				}
				legend, _ := tgt["legendFormat"].(string)
				d.queries = append(d.queries, dashboardQuery{where: fmt.Sprintf("panel %q, query %s", title, ref), expr: expr, legend: legend})
			}
			if sub, ok := p["panels"].([]any); ok {
				var nested []map[string]any
				for _, s := range sub {
					if m, ok := s.(map[string]any); ok {
						nested = append(nested, m)
					}
				}
				walk(nested)
			}
		}
	}
	walk(doc.Panels)
	return d
}

func TestDashboardsQueries(t *testing.T) {
	known := loadKnownMetrics(t)
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			if len(d.queries) == 0 {
				t.Fatal("no query")
			}
			for _, q := range d.queries {
				var errs []string
				if q.variable {
					errs = checkVariableQuery(known, d.vars, q.expr)
				} else {
					errs = checkQuery(known, d.vars, q.expr, q.legend)
				}
				for _, err := range errs {
					t.Errorf("%s: %s\n%s", q.where, err, q.expr)
				}
			}
		})
	}
}

func TestDashboardsWellFormed(t *testing.T) {
	uids := map[string]string{}
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			for _, err := range d.errs {
				t.Error(err)
			}
			if d.uid == "" || d.title == "" {
				t.Errorf("uid %q, title %q: both are needed", d.uid, d.title)
			}
			if other, ok := uids[d.uid]; ok {
				t.Errorf("uid %s is also %s's", d.uid, other)
			}
			uids[d.uid] = d.file
			if !d.vars["datasource"] {
				t.Error("no variable datasource: every query should use ${datasource}")
			}
			// An export "for sharing externally" needs Grafana's import
			// dialog; the sidecar loads the JSON as it is.
			if bytes.Contains(d.raw, []byte("${DS_")) || bytes.Contains(d.raw, []byte(`"__inputs"`)) {
				t.Error("exported for sharing externally (__inputs, ${DS_...}): the sidecar cannot fill those in")
			}
			if len(d.raw) > maxDashboardBytes {
				t.Errorf("%d bytes, more than %d", len(d.raw), maxDashboardBytes)
			}
		})
	}
}

// TestDashboardConfigMaps checks the generated ConfigMaps and the
// kustomization: one ConfigMap per dashboard, with the sidecar's label and
// the dashboard's JSON byte for byte (make manifests writes them).
func TestDashboardConfigMaps(t *testing.T) {
	var want []string
	for _, d := range loadDashboards(t) {
		name := strings.TrimSuffix(d.file, ".json")
		want = append(want, name+".yaml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(grafanaDir, name+".yaml"))
			if err != nil {
				t.Fatalf("%v: run make manifests", err)
			}
			var cm struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string `yaml:"kind"`
				Metadata   struct {
					Name      string            `yaml:"name"`
					Namespace string            `yaml:"namespace"`
					Labels    map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Data map[string]string `yaml:"data"`
			}
			if err := yaml.Unmarshal(b, &cm); err != nil {
				t.Fatal(err)
			}
			if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" {
				t.Errorf("%s %s, want a v1 ConfigMap", cm.APIVersion, cm.Kind)
			}
			if cm.Metadata.Labels["grafana_dashboard"] != "1" {
				t.Errorf("labels %v: Grafana's sidecar loads only ConfigMaps labelled grafana_dashboard: \"1\"", cm.Metadata.Labels)
			}
			if cm.Metadata.Namespace != "" {
				t.Errorf("namespace %s: the kustomization (or a chart) sets it", cm.Metadata.Namespace)
			}
			if len(cm.Data) != 1 {
				t.Fatalf("data has %d keys, want the dashboard only", len(cm.Data))
			}
			for k, v := range cm.Data {
				if !strings.HasSuffix(k, ".json") {
					t.Errorf("data key %s: the sidecar writes it as a file, which must end in .json", k)
				}
				if v != string(d.raw) {
					t.Errorf("data %s differs from %s: run make manifests", k, d.file)
				}
			}
		})
	}

	b, err := os.ReadFile(filepath.Join(grafanaDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml lists %v, want %v: run make manifests", got, want)
	}
	if k.Namespace == "" {
		t.Error("kustomization.yaml sets no namespace")
	}
	yamls, err := filepath.Glob(filepath.Join(grafanaDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range yamls {
		if base := filepath.Base(y); base != "kustomization.yaml" && !slices.Contains(want, base) {
			t.Errorf("%s is no dashboard's ConfigMap: run make manifests", base)
		}
	}
}

// TestBrokenDashboardQueriesAreCaught makes sure the checks above fail on
// the mistakes they are for.
func TestBrokenDashboardQueriesAreCaught(t *testing.T) {
	known := loadKnownMetrics(t)
	vars := map[string]bool{"namespace": true, "cluster": true}
	for _, tc := range []struct{ name, query, legend, wantErr string }{
		{"unknown metric", `etcd_server_is_leadr{namespace="$namespace"}`, "", "etcd_server_is_leadr is not in"},
		{"histogram without suffix", `rate(etcd_disk_wal_fsync_duration_seconds[$__rate_interval])`, "", "is not in"},
		{"undefined variable", `etcd_server_is_leader{etcd_cluster="$clustr"}`, "", "no variable clustr"},
		{"deprecated variable syntax", `etcd_server_is_leader{etcd_cluster="[[cluster]]"}`, "", "deprecated"},
		{"parse error", `sum by (member (etcd_server_is_leader)`, "", "grouping opts"},
		{"a range vector", `etcd_server_is_leader[5m]`, "", "a matrix"},
		{"operator label on etcd", `etcd_server_is_leader{name="$cluster"}`, "", "has no label name"},
		{"etcd label on operator", `raftsman_etcdcluster_voters{etcd_cluster="$cluster"}`, "", "has no label etcd_cluster"},
		{"grouping by a missing label", `sum by (member) (raftsman_etcdcluster_voters)`, "", "groups by member"},
		{"aggregated away", `sum by (member) (max by (namespace) (etcd_server_is_leader))`, "", "groups by member"},
		{"rate of a gauge", `rate(etcd_server_is_leader[5m])`, "", "not a counter"},
		{"quantile without le", `histogram_quantile(0.99, sum by (member) (rate(etcd_disk_wal_fsync_duration_seconds_bucket[5m])))`, "", "no le label"},
		{"matching on a missing label", `etcd_server_is_leader / on (name) etcd_server_has_leader`, "", "matches on name"},
		{"legend of a missing label", `sum by (member) (etcd_server_is_leader)`, "{{namespace}}", "legend names namespace"},
		{"legend after on()", `etcd_server_is_leader / on (member) etcd_server_has_leader`, "{{namespace}}", "legend names namespace"},
		{"no metric name", `{namespace="$namespace"}`, "", "selects no metric"},
		{"a metric of --metrics=extensive", `sum by (member) (rate(grpc_server_handling_seconds_count[5m]))`, "", "--metrics=extensive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkQuery(known, vars, tc.query, tc.legend)
			if !strings.Contains(strings.Join(errs, "\n"), tc.wantErr) {
				t.Errorf("checkQuery(%q): %q, want an error with %q", tc.query, errs, tc.wantErr)
			}
		})
	}
	for _, tc := range []struct{ name, query, legend string }{
		{"label_replace adds a label", `max by (member) (label_replace(raftsman_etcdmember_status_condition, "member", "$1", "name", "(.*)"))`, "{{member}}"},
		{"group_left includes a label", `etcd_server_is_leader * on (member) group_left (server_version) etcd_server_version`, "{{server_version}}"},
		{"rate of a histogram's buckets", `histogram_quantile(0.9, sum by (le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket[$__rate_interval])))`, ""},
		{"target labels", `up{job="x", namespace="$namespace", etcd_cluster="$cluster", member="m"}`, "{{pod}}"},
	} {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			if errs := checkQuery(known, vars, tc.query, tc.legend); len(errs) > 0 {
				t.Errorf("checkQuery(%q): %q, want none", tc.query, errs)
			}
		})
	}
	for _, tc := range []struct{ query, wantErr string }{
		{`label_values(raftsman_etcdcluster_replicas, member)`, "label_values of member"},
		{`label_values(raftsman_etcdclusters, namespace)`, "is not in"},
		{`metrics(raftsman_.*)`, "cannot check"},
	} {
		t.Run("variable/"+tc.query, func(t *testing.T) {
			errs := checkVariableQuery(known, vars, tc.query)
			if !strings.Contains(strings.Join(errs, "\n"), tc.wantErr) {
				t.Errorf("checkVariableQuery(%q): %q, want an error with %q", tc.query, errs, tc.wantErr)
			}
		})
	}
}

// dashboardSeries are series of every known metric, as two etcd members
// and two operator replicas would export them, in the Kubernetes cluster
// named by the label cluster, or without that label if cluster is "".
func dashboardSeries(known map[string]*knownMetric, cluster string) []series {
	var in []series
	seen := map[string]bool{}
	add := func(s series) {
		// A metric without labels of its own has one series per target.
		if !seen[s.metric] {
			seen[s.metric] = true
			in = append(in, s)
		}
	}
	for name, m := range known {
		var own []string
		for l := range m.labels {
			own = append(own, l)
		}
		slices.Sort(own)
		for _, variant := range []string{"a", "b"} {
			ls := map[string]string{}
			for _, l := range own {
				switch l {
				case "namespace":
					ls[l] = "db"
				case "name":
					ls[l] = "c"
				case "le":
					ls[l] = map[string]string{"a": "0.1", "b": "+Inf"}[variant]
				case "type", "status", "reason", "grpc_type", "grpc_service":
					// Values the queries select on.
					ls[l] = sampleValues[l][variant]
				default:
					ls[l] = variant
				}
			}
			target := func(t map[string]string) map[string]string {
				if cluster != "" {
					t["cluster"] = cluster
				}
				return t
			}
			if m.sources["etcd"] || m.sources["etcd-extensive"] || m.sources["prometheus"] {
				for _, member := range []string{"c-bbbbb", "c-ccccc"} {
					add(series{promMetric(name, ls, target(map[string]string{
						"job": "raftsman-system/raftsman-etcd", "namespace": "db", "pod": member,
						"instance": member + ":2381", "etcd_cluster": "c", "member": member,
					})), 1})
				}
			}
			if m.sources["operator"] || m.sources["prometheus"] {
				for i, pod := range []string{"raftsman-0", "raftsman-1"} {
					add(series{promMetric(name, ls, target(map[string]string{
						"pod": pod, "instance": fmt.Sprintf("10.0.0.%d:8443", 10+i),
					})), 1})
				}
			}
		}
	}
	return in
}

// sampleValues are the values of dashboardSeries' two variants for labels
// the queries select on.
var sampleValues = map[string]map[string]string{
	"type":         {"a": "Available", "b": "Ready"},
	"status":       {"a": "True", "b": "False"},
	"reason":       {"a": "MemberUpdated", "b": "LeaderMoved"},
	"grpc_type":    {"a": "unary", "b": "bidi_stream"},
	"grpc_service": {"a": "etcdserverpb.KV", "b": "etcdserverpb.Watch"},
}

// dashboardValues are values of the dashboards' variables for the series
// of dashboardSeries; cluster is All, as Grafana renders it. The rate
// interval spans several of the samples of sampleHistory.
var dashboardValues = map[string]string{"cluster": ".*", "namespace": "db", "etcdcluster": "c", "job": "raftsman-system/raftsman-operator", "pod": ".*",
	"__rate_interval": "5m", "__interval": "1m"}

// expandVars replaces Grafana's variables in a query with values, and
// builtin ones with theirs.
func expandVars(q string, values map[string]string) string {
	return grafanaVar.ReplaceAllStringFunc(q, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := values[name]; ok {
			return v
		}
		if v, ok := builtinVars[name]; ok {
			return v
		}
		return m
	})
}

// sampleHistory gives each series 6 minutes of values, one a minute: a
// counter's grow by one a minute, so that a rate has samples to work with,
// a gauge's stay at 1.
func sampleHistory(known map[string]*knownMetric, in []series) []history {
	var out []history
	for _, s := range in {
		values := []float64{1, 1, 1, 1, 1, 1}
		name, _, _ := strings.Cut(s.metric, "{")
		if m := known[name]; m.types["counter"] || m.types["histogram"] || m.types["summary"] || strings.HasSuffix(name, "_total") {
			values = []float64{1, 2, 3, 4, 5, 6}
		}
		out = append(out, history{s.metric, values})
	}
	return out
}

// TestDashboardsEvaluate runs every panel and annotation query with
// Prometheus's engine on series of every known metric, to catch what only
// evaluation finds (a many-to-many match, two series with the same labels
// after an aggregation): as one Kubernetes cluster exports them, without
// the label cluster, and as a fleet of two, where a query that drops the
// label cluster finds duplicates.
func TestDashboardsEvaluate(t *testing.T) {
	known := loadKnownMetrics(t)
	single := dashboardSeries(known, "")
	fleet := slices.Concat(dashboardSeries(known, "east"), dashboardSeries(known, "west"))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			for _, q := range d.queries {
				if q.variable {
					continue
				}
				expr := expandVars(q.expr, dashboardValues)
				t.Run(q.where, func(t *testing.T) {
					evalAt(t, expr, now, single)
					evalAt(t, expr, now, fleet)
				})
			}
		})
	}
}

// TestDashboardsFilterByCluster checks the variable cluster of every
// dashboard and the queries' use of it: every query selects by
// cluster=~"$cluster"; with All (.*) a query returns what it returns
// without that matcher on series that have no label cluster (a single
// Kubernetes cluster's Prometheus); and with one Kubernetes cluster of a
// fleet chosen, what it returns on that cluster's series alone.
func TestDashboardsFilterByCluster(t *testing.T) {
	known := loadKnownMetrics(t)
	single := sampleHistory(known, dashboardSeries(known, ""))
	east := sampleHistory(known, dashboardSeries(known, "east"))
	fleet := slices.Concat(east, sampleHistory(known, dashboardSeries(known, "west")))
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range loadDashboards(t) {
		t.Run(d.file, func(t *testing.T) {
			checkClusterVariable(t, d)
			nonEmpty := 0
			for _, q := range d.queries {
				if !q.variable {
					continue
				}
				if q.where == "variable cluster" {
					continue
				}
				sel := q.expr
				if m := labelValuesQuery.FindStringSubmatch(q.expr); m != nil {
					sel = m[1]
				}
				if err := selectsByCluster(sel); err != nil {
					t.Errorf("%s: %v", q.where, err)
				}
			}
			for _, q := range d.queries {
				if q.variable {
					continue
				}
				expr := expandVars(q.expr, dashboardValues)
				if err := selectsByCluster(q.expr); err != nil {
					t.Errorf("%s: %v", q.where, err)
					continue
				}
				if err := groupsByCluster(expr); err != nil {
					t.Errorf("%s: %v", q.where, err)
				}
				unfiltered, err := withoutClusterMatchers(expr)
				if err != nil {
					t.Fatalf("%s: %v", q.where, err)
				}
				all := vectorMap(evalHistory(t, expr, now, single), "")
				if want := vectorMap(evalHistory(t, unfiltered, now, single), ""); !sameVectors(all, want) {
					t.Errorf("%s: with All, on series without the label cluster, returns %v; without the matcher %v", q.where, all, want)
				}
				if len(all) > 0 {
					nonEmpty++
				}
				values := maps.Clone(dashboardValues)
				values["cluster"] = "east"
				got := vectorMap(evalHistory(t, expandVars(q.expr, values), now, fleet), "cluster")
				if want := vectorMap(evalHistory(t, expr, now, east), "cluster"); !sameVectors(got, want) {
					t.Errorf("%s: with east chosen in a fleet, returns %v; on east's series alone %v", q.where, got, want)
				}
			}
			// A query that compares the sample values with 0 or with a
			// time returns nothing, and proves nothing here.
			if nonEmpty < len(d.queries)*2/3 {
				t.Errorf("only %d of %d queries return something on the sample series", nonEmpty, len(d.queries))
			}
		})
	}
}

// checkClusterVariable checks a dashboard's variable cluster: the values
// of the label cluster, with All rendered as .* so that it also matches a
// series without the label, before every other query variable, which may
// then use it.
func checkClusterVariable(t *testing.T, d *dashboard) {
	t.Helper()
	i := slices.IndexFunc(d.varDefs, func(v map[string]any) bool { return v["name"] == "cluster" })
	if i < 0 {
		t.Error("no variable cluster")
		return
	}
	v := d.varDefs[i]
	q, _ := v["definition"].(string)
	if m := labelValuesQuery.FindStringSubmatch(q); v["type"] != "query" || m == nil || m[2] != "cluster" {
		t.Errorf("variable cluster is %v %q, want a query label_values(..., cluster)", v["type"], q)
	}
	if v["includeAll"] != true || v["allValue"] != ".*" {
		t.Errorf("variable cluster: includeAll %v, allValue %v; want All rendered as .*, which matches an absent label", v["includeAll"], v["allValue"])
	}
	for _, other := range d.varDefs[:i] {
		if other["type"] == "query" {
			t.Errorf("variable %v comes before cluster", other["name"])
		}
	}
}

// selectsByCluster says whether every vector selector of a query has the
// matcher cluster=~"$cluster".
func selectsByCluster(query string) error {
	q := strings.ReplaceAll(query, `cluster=~"$cluster"`, `cluster=~"CLUSTER-VARIABLE"`)
	q, err := substitute(q, map[string]bool{"namespace": true, "etcdcluster": true, "job": true, "pod": true, "cluster": true})
	if err != nil {
		return err
	}
	expr, err := newParser().ParseExpr(q)
	if err != nil {
		return err
	}
	var missing []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
			return m.Name == "cluster" && m.Type == labels.MatchRegexp && m.Value == "CLUSTER-VARIABLE"
		}) {
			missing = append(missing, vs.String())
		}
		return nil
	})
	if len(missing) > 0 {
		return fmt.Errorf(`%s: no matcher cluster=~"$cluster"`, strings.Join(missing, ", "))
	}
	return nil
}

// groupsByCluster says whether every aggregation that keeps one object of
// a Kubernetes cluster apart (an EtcdCluster by namespace and name, a
// shard) keeps the label cluster too: two Kubernetes clusters of a fleet
// may have an EtcdCluster of the same namespace and name, and shards of the
// same number.
func groupsByCluster(query string) error {
	expr, err := newParser().ParseExpr(query)
	if err != nil {
		return err
	}
	var bad []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok && !a.Without && !slices.Contains(a.Grouping, "cluster") &&
			(slices.Contains(a.Grouping, "name") && slices.Contains(a.Grouping, "namespace") || slices.Contains(a.Grouping, "shard")) {
			bad = append(bad, fmt.Sprintf("by (%s)", strings.Join(a.Grouping, ", ")))
		}
		return nil
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s: keep cluster too, or two Kubernetes clusters' objects of the same name are one", strings.Join(bad, ", "))
	}
	return nil
}

// withoutClusterMatchers is a query without its matchers on cluster.
func withoutClusterMatchers(query string) (string, error) {
	expr, err := newParser().ParseExpr(query)
	if err != nil {
		return "", err
	}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			vs.LabelMatchers = slices.DeleteFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "cluster" })
		}
		return nil
	})
	return expr.String(), nil
}

// vectorMap is a result by its labels without drop.
func vectorMap(vec promql.Vector, drop string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range vec {
		out[labels.NewBuilder(s.Metric).Del(drop).Labels().String()] = s.F
	}
	return out
}

// sameVectors says whether two results are equal, NaN equal to NaN (a
// quantile of buckets that did not grow).
func sameVectors(a, b map[string]float64) bool {
	return maps.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
}

// annotationReasons are the event reasons each annotation of the
// dashboards shows, from raftsman_etcdcluster_events_total.
var annotationReasons = map[string][]string{
	"Rollouts":         {"MemberUpdated", "RolloutStuck"},
	"Defragmentations": {"DefragStarted", "DefragFailed", "MemberDefragmented"},
	"Leader moves":     {"LeaderMoved"},
}

// TestDashboardAnnotations evaluates each annotation of the operator's
// events over a few minutes of the counter: an annotation in the minute an
// event was counted, for the reasons it is about, none before; none for a
// counter that starts at 0 (a cluster a replica starts to report). The
// query compares with the value a step before, so its step must be the
// offset, or events fall between steps.
func TestDashboardAnnotations(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	found := map[string]bool{}
	for _, d := range loadDashboards(t) {
		for _, a := range d.annotations {
			t.Run(d.file+"/"+a.Name, func(t *testing.T) {
				want, ok := annotationReasons[a.Name]
				if !ok {
					t.Fatalf("annotation %q is not in annotationReasons", a.Name)
				}
				found[a.Name] = true
				if a.Step != "1m" || !strings.Contains(a.Expr, "offset 1m") {
					t.Errorf("step %q: want 1m, the offset the query compares with", a.Step)
				}
				var in []history
				for _, reason := range []string{"MemberUpdated", "RolloutStuck", "DefragStarted", "MemberDefragmented", "DefragFailed", "LeaderMoved"} {
					in = append(in,
						// An event two minutes ago and two in the last minute.
						history{fmt.Sprintf(`raftsman_etcdcluster_events_total{namespace="db",name="c",reason=%q}`, reason), []float64{0, 0, 1, 1, 3}},
						// A cluster reported from now on, at 0.
						history{fmt.Sprintf(`raftsman_etcdcluster_events_total{namespace="db",name="c",reason=%q,pod="raftsman-1",instance="10.0.0.11:8443"}`, reason), []float64{0}},
					)
				}
				expr := expandVars(a.Expr, dashboardValues)
				var got []string
				for _, s := range evalHistory(t, expr, now, in) {
					if s.F != 2 || s.Metric.Get("namespace") != "db" || s.Metric.Get("name") != "c" {
						t.Errorf("annotation %v = %g, want 2 events of db/c", s.Metric, s.F)
					}
					got = append(got, s.Metric.Get("reason"))
				}
				slices.Sort(got)
				if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
					t.Errorf("annotations for %q, want %q", got, want)
				}
				// Two minutes ago: the first event, in the minute before.
				if got := evalHistoryAt(t, expr, now, now.Add(-2*time.Minute), in); len(got) != len(want) {
					t.Errorf("two minutes ago: %v, want one annotation for each of %q", got, want)
				}
				// Three minutes ago: nothing yet.
				if got := evalHistoryAt(t, expr, now, now.Add(-3*time.Minute), in); len(got) != 0 {
					t.Errorf("three minutes ago: %v, want none", got)
				}
			})
		}
	}
	for name := range annotationReasons {
		if !found[name] {
			t.Errorf("no dashboard has the annotation %q", name)
		}
	}
}

// promMetric writes a series in PromQL notation: its own labels, then its
// target's where it has none of its own (honorLabels keeps the operator's
// namespace; evalAt adds the operator's other target labels).
func promMetric(name string, own, target map[string]string) string {
	all := maps.Clone(own)
	for k, v := range target {
		if _, ok := all[k]; !ok || k != "namespace" {
			all[k] = v
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, all[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
