// Package rules checks config/prometheus/rules.yaml the way promtool would,
// and that every alert has a runbook in docs/runbooks.md. It is a module of
// its own so that the main module does not depend on Prometheus.
package rules

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"go.yaml.in/yaml/v3"
)

const (
	rulesFile    = "../../config/prometheus/rules.yaml"
	runbooksFile = "../../docs/runbooks.md"
	runbookBase  = "https://github.com/raftsman/raftsman/blob/main/docs/runbooks.md"
)

// wantAlerts is every alert the rules must define, with its severity and
// how long its condition must hold before it fires: one rule per severity
// (EtcdDatabaseNearQuota is a warning first, then critical).
var wantAlerts = map[string][]alertSpec{
	"EtcdClusterNotAvailable":    {{"critical", 5 * time.Minute}},
	"EtcdClusterDegraded":        {{"warning", 15 * time.Minute}},
	"EtcdClusterQuorumAtRisk":    {{"critical", 5 * time.Minute}},
	"EtcdClusterBackupMissing":   {{"warning", 5 * time.Minute}},
	"EtcdLearnerStuck":           {{"warning", 10 * time.Minute}},
	"EtcdClusterTLSNotReady":     {{"warning", 10 * time.Minute}},
	"EtcdCertificateExpiresSoon": {{"warning", time.Hour}},
	"EtcdDatabaseNearQuota":      {{"warning", 10 * time.Minute}, {"critical", 5 * time.Minute}},
	"EtcdAlarmRaised":            {{"critical", time.Minute}},
	"RaftsmanShardWithoutHolder": {{"critical", 2 * time.Minute}},
	"RaftsmanOperatorDown":       {{"critical", 5 * time.Minute}},
	// etcd's own signs, with the severities and durations of etcd's mixin.
	"EtcdSlowWALFsync":          {{"warning", 10 * time.Minute}, {"critical", 10 * time.Minute}},
	"EtcdSlowBackendCommit":     {{"warning", 10 * time.Minute}},
	"EtcdSlowGRPCRequests":      {{"critical", 10 * time.Minute}},
	"EtcdFrequentLeaderChanges": {{"warning", 5 * time.Minute}},
	"EtcdSlowPeerCommunication": {{"warning", 10 * time.Minute}},
	"EtcdManyFailedProposals":   {{"warning", 15 * time.Minute}},
	"EtcdDatabaseFillingUp":     {{"warning", 10 * time.Minute}},
}

type alertSpec struct {
	severity string
	forDur   time.Duration
}

// newParser is a PromQL parser with the default functions, as Prometheus
// uses without feature flags.
func newParser() parser.Parser { return parser.NewParser(parser.Options{}) }

// parseGroups validates rule groups as promtool check rules does: unknown
// fields are errors, names follow the legacy (pre-UTF-8) character set, and
// every expression and template must parse.
func parseGroups(content []byte) (*rulefmt.RuleGroups, []error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return rulefmt.Parse(content, false, model.LegacyValidation, newParser(), logger)
}

// loadRuleGroups reads the PrometheusRule and returns its spec, which has
// the shape of a Prometheus rule file.
func loadRuleGroups(t *testing.T) (*rulefmt.RuleGroups, []byte) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		APIVersion string    `yaml:"apiVersion"`
		Kind       string    `yaml:"kind"`
		Spec       yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
		t.Fatalf("%s: got %s %s, want a monitoring.coreos.com/v1 PrometheusRule", rulesFile, obj.APIVersion, obj.Kind)
	}
	spec, err := yaml.Marshal(&obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := parseGroups(spec)
	for _, err := range errs {
		// Line numbers count from the first line under spec, re-encoded.
		t.Errorf("%s: spec: %v", rulesFile, err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	if len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", rulesFile)
	}
	return groups, spec
}

func alerts(groups *rulefmt.RuleGroups) []rulefmt.Rule {
	var out []rulefmt.Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestRulesParse(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	p := newParser()
	for _, r := range alerts(groups) {
		t.Run(r.Alert, func(t *testing.T) {
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("expr %q: %v", r.Expr, err)
			}
			if got := expr.Type(); got != parser.ValueTypeVector {
				t.Errorf("expr %q is a %s, an alert needs an instant vector", r.Expr, got)
			}
		})
	}
}

func TestAlertsAsSpecified(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	// seen is keyed by alert/severity.
	seen := map[string]bool{}
	for _, r := range alerts(groups) {
		got := alertSpec{r.Labels["severity"], time.Duration(r.For)}
		key := r.Alert + "/" + got.severity
		if seen[key] {
			t.Errorf("alert %s with severity %s is defined twice", r.Alert, got.severity)
		}
		seen[key] = true
		want, ok := wantAlerts[r.Alert]
		if !ok {
			t.Errorf("alert %s is not in wantAlerts: add it there and to the runbooks", r.Alert)
			continue
		}
		if !slices.Contains(want, got) {
			t.Errorf("alert %s: severity %q for %s, want one of %v", r.Alert, got.severity, got.forDur, want)
		}
	}
	for name, specs := range wantAlerts {
		for _, spec := range specs {
			if !seen[name+"/"+spec.severity] {
				t.Errorf("alert %s with severity %s is missing", name, spec.severity)
			}
		}
	}
}

func TestAlertsHaveAnnotationsAndRunbooks(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	anchors := runbookAnchors(t)
	for _, r := range alerts(groups) {
		t.Run(r.Alert, func(t *testing.T) {
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("annotation %s is missing", k)
				}
			}
			switch r.Labels["severity"] {
			case "critical", "warning":
			default:
				t.Errorf("label severity is %q, want critical or warning", r.Labels["severity"])
			}
			if r.For <= 0 {
				t.Errorf("no for: the alert would fire on a single evaluation")
			}
			u, err := url.Parse(r.Annotations["runbook_url"])
			if err != nil {
				t.Fatalf("runbook_url: %v", err)
			}
			if base := strings.TrimSuffix(u.String(), "#"+u.Fragment); base != runbookBase {
				t.Errorf("runbook_url points to %s, want %s", base, runbookBase)
			}
			if u.Fragment != strings.ToLower(r.Alert) {
				t.Errorf("runbook_url anchor is %q, want %q", u.Fragment, strings.ToLower(r.Alert))
			}
			if !anchors[u.Fragment] {
				t.Errorf("%s has no heading with anchor %q", runbooksFile, u.Fragment)
			}
		})
	}
}

// runbookAnchors returns the anchors GitHub gives the headings of the
// runbooks: lower case, spaces become hyphens, other punctuation goes.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(runbooksFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[anchor(title)] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	for title, want := range map[string]string{
		"EtcdClusterNotAvailable":  "etcdclusternotavailable",
		"Raftsman runbooks":        "raftsman-runbooks",
		"What to do (in order)":    "what-to-do-in-order",
		"`EtcdLearnerStuck` alert": "etcdlearnerstuck-alert",
	} {
		if got := anchor(title); got != want {
			t.Errorf("anchor(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestBrokenRulesAreCaught makes sure the checks above would fail on a bad
// rule: the parser refuses broken expressions, and rulefmt refuses a rule
// group with a broken expression, template or field.
func TestBrokenRulesAreCaught(t *testing.T) {
	p := newParser()
	for _, tc := range []struct{ name, expr, wantErr string }{
		{"dangling operator", `raftsman_etcdcluster_learners >`, "unexpected end of input"},
		{"unclosed grouping", `max by (shard raftsman_shard_leader) == 0`, "in grouping opts"},
		{"unknown function", `flor(raftsman_etcdcluster_voters / 2)`, `unknown function with name "flor"`},
		{"bad duration", `rate(raftsman_api_writes_total[5x])`, "bad number or duration"},
		{"comparing two scalars", `time() > 1`, "must use BOOL modifier"},
		{"unclosed matcher", `raftsman_etcdcluster_status_condition{type="Available"`, "inside braces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.ParseExpr(tc.expr)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseExpr(%q): error %v, want one with %q", tc.expr, err, tc.wantErr)
			}
		})
	}

	const group = `
groups:
- name: g
  rules:
  - alert: Broken
`
	for _, tc := range []struct{ name, rule, wantErr string }{
		{"broken expression", `
    expr: max by (shard raftsman_shard_leader) == 0
`, "could not parse expression"},
		{"broken template", `
    expr: up == 0
    annotations:
      description: "{{ $labels.namespace }"
`, `annotation "description"`},
		{"unknown field", `
    expr: up == 0
    severity: critical
`, "field severity not found"},
		{"no expression", `
    for: 5m
`, "field 'expr' must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := group + strings.TrimPrefix(tc.rule, "\n")
			_, errs := parseGroups([]byte(content))
			if len(errs) == 0 {
				t.Fatalf("rulefmt accepted:\n%s", content)
			}
			if !strings.Contains(errors.Join(errs...).Error(), tc.wantErr) {
				t.Fatalf("rulefmt errors %v, want one with %q", errs, tc.wantErr)
			}
		})
	}
}

// The tests below evaluate each alert's expression with Prometheus's own
// engine on a few series, to check what it selects (vector matching, labels
// kept) and not only that it parses. The `for` clause is not evaluated.

// operatorTarget are the target labels the operator PodMonitor gives the
// series of one replica; a series' own namespace label wins (honorLabels).
var operatorTarget = map[string]string{
	"job":       "raftsman-system/raftsman-operator",
	"namespace": "raftsman-system",
	"pod":       "raftsman-0",
	"instance":  "10.0.0.10:8443",
	"container": "manager",
	"endpoint":  "metrics",
}

// series is one scraped series: its metric in PromQL notation and its value.
type series struct {
	metric string
	value  float64
}

// fsample is a float sample for storage.NewListSeries.
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// seriesSet iterates over a fixed list of series.
type seriesSet struct {
	list []storage.Series
	i    int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i <= len(s.list) }
func (s *seriesSet) At() storage.Series                { return s.list[s.i-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }
func (s *seriesSet) sort()                             { slices.SortFunc(s.list, compareSeries) }
func compareSeries(a, b storage.Series) int            { return labels.Compare(a.Labels(), b.Labels()) }
func selectSeries(all []storage.Series, ms []*labels.Matcher) []storage.Series {
	var out []storage.Series
	for _, s := range all {
		if matchAll(s.Labels(), ms) {
			out = append(out, s)
		}
	}
	return out
}

func matchAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// evalAt evaluates expr at now over the given series, each with one sample
// 15 seconds before now and the operator's target labels where it has none
// of its own.
func evalAt(t *testing.T, expr string, now time.Time, in []series) promql.Vector {
	t.Helper()
	var hs []history
	for _, s := range in {
		hs = append(hs, history{s.metric, []float64{s.value}})
	}
	return evalHistory(t, expr, now, hs)
}

// history is a series with its values over time: one a minute, the last
// 15 seconds before the evaluation.
type history struct {
	metric string
	values []float64
}

// evalHistory evaluates expr at now over the given series, with the
// operator's target labels where a series has none of its own.
func evalHistory(t *testing.T, expr string, now time.Time, in []history) promql.Vector {
	t.Helper()
	return evalHistoryAt(t, expr, now, now, in)
}

// evalHistoryAt evaluates expr at a time other than now, the time the
// series' last values are 15 seconds before.
func evalHistoryAt(t *testing.T, expr string, now, at time.Time, in []history) promql.Vector {
	t.Helper()
	p := newParser()
	var all []storage.Series
	for _, h := range in {
		lset, err := p.ParseMetric(h.metric)
		if err != nil {
			t.Fatalf("series %s: %v", h.metric, err)
		}
		b := labels.NewBuilder(lset)
		for k, v := range operatorTarget {
			if !lset.Has(k) {
				b.Set(k, v)
			}
		}
		var samples []chunks.Sample
		last := now.Add(-15 * time.Second)
		for i, v := range h.values {
			ts := last.Add(-time.Duration(len(h.values)-1-i) * time.Minute).UnixMilli()
			samples = append(samples, fsample{ts, v})
		}
		all = append(all, storage.NewListSeries(b.Labels(), samples))
	}
	q := &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(sortSeries bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			set := &seriesSet{list: selectSeries(all, ms)}
			if sortSeries {
				set.sort()
			}
			return set
		},
	}}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 100000, Timeout: 10 * time.Second, LookbackDelta: 5 * time.Minute})
	qry, err := engine.NewInstantQuery(context.Background(), q, nil, expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer qry.Close()
	vec, err := qry.Exec(context.Background()).Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return vec
}

// firing names what each element of an alert's result is about: the
// EtcdCluster (namespace/name, and /member for a member's alert, with the
// gRPC method or the peer it is about), else the shard, else all its
// labels; prefixed with the Kubernetes cluster (label cluster) if any.
func firing(vec promql.Vector) []string {
	var out []string
	for _, s := range vec {
		m := s.Metric
		var what string
		switch {
		case m.Has("member"):
			what = m.Get("namespace") + "/" + m.Get("name") + "/" + m.Get("member")
		case m.Has("name"):
			what = m.Get("namespace") + "/" + m.Get("name")
		case m.Has("shard"):
			what = "shard " + m.Get("shard")
		default:
			what = labels.NewBuilder(m).Del("cluster").Labels().String()
		}
		if m.Has("grpc_method") {
			what += " " + m.Get("grpc_method")
		}
		if m.Has("To") {
			what += " to " + m.Get("To")
		}
		if m.Has("cluster") {
			what = m.Get("cluster") + ":" + what
		}
		out = append(out, what)
	}
	slices.Sort(out)
	return out
}

func TestAlertsSelect(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	exprs := alertExprs(groups)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(d time.Duration) float64 { return float64(now.Add(d).Unix()) }
	cond := func(ns, name, typ, status, reason string, v float64) series {
		return series{fmt.Sprintf(`raftsman_etcdcluster_status_condition{namespace=%q,name=%q,type=%q,status=%q,reason=%q}`, ns, name, typ, status, reason), v}
	}
	gauge := func(metric, ns, name string, v float64, extra ...string) series {
		return series{fmt.Sprintf(`%s{namespace=%q,name=%q%s}`, metric, ns, name, strings.Join(extra, "")), v}
	}
	// quorum gives a cluster's voters and healthy voters.
	quorum := func(name string, voters, ready float64, extra ...string) []series {
		return []series{
			gauge("raftsman_etcdcluster_voters", "db", name, voters, extra...),
			gauge("raftsman_etcdcluster_ready_replicas", "db", name, ready, extra...),
		}
	}
	cat := func(groups ...[]series) []series { return slices.Concat(groups...) }
	// db gives a member's database size and quota, as one health check
	// reports them; a quota of 0 means the series is absent.
	db := func(name, member string, size, quota float64, extra ...string) []series {
		labels := fmt.Sprintf(`{namespace="db",name=%q,member=%q%s}`, name, member, strings.Join(extra, ""))
		out := []series{{"raftsman_etcdmember_db_size_bytes" + labels, size}}
		if quota > 0 {
			out = append(out, series{"raftsman_etcdmember_db_quota_bytes" + labels, quota})
		}
		return out
	}
	alarm := func(name, member, typ string) series {
		return series{fmt.Sprintf(`raftsman_etcdcluster_alarm{namespace="db",name=%q,member=%q,type=%q}`, name, member, typ), 1}
	}
	// quotaCases are the members of two clusters at various shares of their
	// quota, with two that have only one side of the ratio: a size without
	// a quota (a member whose spec has none yet), and a quota alone.
	quotaCases := cat(
		db("c", "c-a", 50, 100), db("c", "c-b", 81, 100), db("c", "c-c", 96, 100),
		db("d", "d-a", 80, 100), db("d", "d-b", 95, 100), db("d", "d-c", 2<<30, 0),
		[]series{{`raftsman_etcdmember_db_quota_bytes{namespace="db",name="d",member="d-d"}`, 100}},
	)

	for _, tc := range []struct {
		name  string
		alert string
		in    []series
		want  []string
		// fleet is what fires when the same series come from two
		// Kubernetes clusters, east and west; nil: want in each.
		fleet []string
	}{{
		name:  "lost quorum fires, available does not",
		alert: "EtcdClusterNotAvailable",
		in: []series{
			cond("db", "lost", "Available", "True", "QuorumLost", 0),
			cond("db", "lost", "Available", "False", "QuorumLost", 1),
			cond("db", "ok", "Available", "True", "QuorumHealthy", 1),
			cond("db", "ok", "Available", "False", "QuorumHealthy", 0),
		},
		want: []string{"db/lost"},
	}, {
		name:  "degraded fires, healthy does not",
		alert: "EtcdClusterDegraded",
		in: []series{
			cond("db", "sick", "Degraded", "True", "MembersUnhealthy", 1),
			cond("db", "fine", "Degraded", "True", "MembersHealthy", 0),
			cond("db", "fine", "Degraded", "False", "MembersHealthy", 1),
		},
		want: []string{"db/sick"},
	}, {
		name:  "healthy voters at most a quorum",
		alert: "EtcdClusterQuorumAtRisk",
		in: cat(
			quorum("one", 1, 1), quorum("one-down", 1, 0),
			quorum("two", 2, 2),
			quorum("three", 3, 3), quorum("three-1down", 3, 2), quorum("three-2down", 3, 1),
			quorum("four", 4, 4), quorum("four-1down", 4, 3),
			quorum("five", 5, 5), quorum("five-1down", 5, 4), quorum("five-2down", 5, 3),
		),
		want: []string{"db/five-2down", "db/four-1down", "db/three-1down", "db/three-2down", "db/two"},
	}, {
		name:  "two operator replicas export the same cluster",
		alert: "EtcdClusterQuorumAtRisk",
		in:    cat(quorum("three", 3, 2), quorum("three", 3, 2, `,pod="raftsman-1",instance="10.0.0.11:8443"`)),
		want:  []string{"db/three", "db/three"},
	}, {
		name:  "backup older than twice the interval",
		alert: "EtcdClusterBackupMissing",
		in: []series{
			gauge("raftsman_etcdcluster_backup_interval_seconds", "db", "old", 3600),
			gauge("raftsman_etcdcluster_last_backup_timestamp_seconds", "db", "old", sec(-3*time.Hour)),
			gauge("raftsman_etcdcluster_backup_interval_seconds", "db", "recent", 3600),
			gauge("raftsman_etcdcluster_last_backup_timestamp_seconds", "db", "recent", sec(-90*time.Minute)),
			// No schedule: neither gauge.
			gauge("raftsman_etcdcluster_learners", "db", "unscheduled", 0),
		},
		want: []string{"db/old"},
	}, {
		name:  "learners",
		alert: "EtcdLearnerStuck",
		in: []series{
			gauge("raftsman_etcdcluster_learners", "db", "joining", 1),
			gauge("raftsman_etcdcluster_learners", "db", "settled", 0),
		},
		want: []string{"db/joining"},
	}, {
		name:  "TLSReady False fires, True and Unknown do not",
		alert: "EtcdClusterTLSNotReady",
		in: []series{
			cond("db", "bad", "TLSReady", "False", "SecretInvalid", 1),
			cond("db", "bad", "TLSReady", "True", "SecretInvalid", 0),
			cond("db", "good", "TLSReady", "False", "CertificatesReady", 0),
			cond("db", "good", "TLSReady", "True", "CertificatesReady", 1),
			cond("db", "unknown", "TLSReady", "False", "Pending", 0),
			cond("db", "unknown", "TLSReady", "Unknown", "Pending", 1),
		},
		want: []string{"db/bad"},
	}, {
		name:  "certificate expiry within 7 days",
		alert: "EtcdCertificateExpiresSoon",
		in: []series{
			gauge("raftsman_etcdcluster_certificate_expiry_timestamp_seconds", "db", "soon", sec(3*24*time.Hour)),
			gauge("raftsman_etcdcluster_certificate_expiry_timestamp_seconds", "db", "expired", sec(-time.Hour)),
			gauge("raftsman_etcdcluster_certificate_expiry_timestamp_seconds", "db", "later", sec(60*24*time.Hour)),
		},
		want: []string{"db/expired", "db/soon"},
	}, {
		name:  "over 80% of the quota",
		alert: "EtcdDatabaseNearQuota/warning",
		in:    quotaCases,
		want:  []string{"db/c/c-b", "db/c/c-c", "db/d/d-b"},
	}, {
		name:  "over 95% of the quota",
		alert: "EtcdDatabaseNearQuota/critical",
		in:    quotaCases,
		want:  []string{"db/c/c-c"},
	}, {
		name:  "two operator replicas report the same member",
		alert: "EtcdDatabaseNearQuota/warning",
		in:    cat(db("c", "c-a", 90, 100), db("c", "c-a", 90, 100, `,pod="raftsman-1",instance="10.0.0.11:8443"`)),
		want:  []string{"db/c/c-a", "db/c/c-a"},
	}, {
		name:  "every alarm, one per member and type",
		alert: "EtcdAlarmRaised",
		in: []series{
			alarm("full", "full-a", "NOSPACE"), alarm("full", "full-b", "NOSPACE"),
			alarm("broken", "5f1b0c2d9e8a7b6c", "CORRUPT"),
		},
		want: []string{"db/broken/5f1b0c2d9e8a7b6c", "db/full/full-a", "db/full/full-b"},
	}, {
		name:  "no alarm, no series",
		alert: "EtcdAlarmRaised",
		in:    []series{{`raftsman_etcdcluster_voters{namespace="db",name="fine"}`, 3}},
		want:  nil,
	}, {
		name:  "a shard no replica holds",
		alert: "RaftsmanShardWithoutHolder",
		in: []series{
			{`raftsman_shard_leader{shard="0"}`, 1},
			{`raftsman_shard_leader{shard="1"}`, 0},
			{`raftsman_shard_leader{shard="0",pod="raftsman-1",instance="10.0.0.11:8443"}`, 0},
			{`raftsman_shard_leader{shard="1",pod="raftsman-1",instance="10.0.0.11:8443"}`, 0},
		},
		want: []string{"shard 1"},
	}, {
		name:  "operator scraped",
		alert: "RaftsmanOperatorDown",
		in:    []series{{`up`, 1}, {`up{pod="raftsman-1",instance="10.0.0.11:8443"}`, 0}},
		want:  nil,
	}, {
		name:  "operator target down",
		alert: "RaftsmanOperatorDown",
		in:    []series{{`up`, 0}},
		want:  []string{"{}"},
		// absent() speaks for the fleet, the second part for each cluster.
		fleet: []string{"east:{}", "west:{}", "{}"},
	}, {
		name:  "only etcd members scraped",
		alert: "RaftsmanOperatorDown",
		in:    []series{{`up{job="raftsman-system/raftsman-etcd",namespace="db",pod="sample-0"}`, 1}},
		want:  []string{"{}"},
		fleet: []string{"east:{}", "west:{}", "{}"},
	}, {
		name:  "the operator of one Kubernetes cluster down",
		alert: "RaftsmanOperatorDown",
		in:    []series{{`up{cluster="east"}`, 1}, {`up{cluster="west"}`, 0}},
		want:  []string{"west:{}"},
	}, {
		name:  "a Kubernetes cluster with etcd members and no operator target",
		alert: "RaftsmanOperatorDown",
		in: []series{
			{`up{cluster="east"}`, 1},
			{`up{cluster="west",job="raftsman-system/raftsman-etcd",namespace="db",pod="sample-0"}`, 1},
		},
		want: []string{"west:{}"},
	}, {
		name:  "a shard held in one Kubernetes cluster only",
		alert: "RaftsmanShardWithoutHolder",
		in:    []series{{`raftsman_shard_leader{shard="0",cluster="east"}`, 1}, {`raftsman_shard_leader{shard="0",cluster="west"}`, 0}},
		want:  []string{"west:shard 0"},
	}} {
		t.Run(tc.alert+"/"+tc.name, func(t *testing.T) {
			expr, ok := exprs[tc.alert]
			if !ok {
				t.Fatalf("no alert %s", tc.alert)
			}
			vec := evalAt(t, expr, now, tc.in)
			if got := firing(vec); !slices.Equal(got, tc.want) {
				t.Errorf("fires for %q, want %q\nresult: %v", got, tc.want, vec)
			}
			for _, s := range vec {
				if s.Metric.Has("reason") {
					t.Errorf("result keeps the reason label: a new reason would restart the for clause: %v", s.Metric)
				}
			}
		})
		t.Run(tc.alert+"/"+tc.name+"/fleet", func(t *testing.T) {
			if slices.ContainsFunc(tc.in, func(s series) bool { return withCluster(t, s.metric, "") == s.metric }) {
				t.Skip("a fleet already")
			}
			in := slices.Concat(inCluster(t, tc.in, "east"), inCluster(t, tc.in, "west"))
			want := tc.fleet
			if want == nil {
				want = inClusters(tc.want, "east", "west")
			}
			if got := firing(evalAt(t, exprs[tc.alert], now, in)); !slices.Equal(got, want) {
				t.Errorf("fires for %q, want %q", got, want)
			}
		})
	}
}

// inCluster gives series the label cluster, as a fleet's Prometheus does,
// unless they have one.
func inCluster(t *testing.T, in []series, cluster string) []series {
	t.Helper()
	var out []series
	for _, s := range in {
		out = append(out, series{withCluster(t, s.metric, cluster), s.value})
	}
	return out
}

func withCluster(t *testing.T, metric, cluster string) string {
	t.Helper()
	lset, err := newParser().ParseMetric(metric)
	if err != nil {
		t.Fatalf("series %s: %v", metric, err)
	}
	if lset.Has("cluster") {
		return metric
	}
	return labels.NewBuilder(lset).Set("cluster", cluster).Labels().String()
}

// inClusters is what fires in each Kubernetes cluster, as firing names it.
func inClusters(want []string, clusters ...string) []string {
	var out []string
	for _, c := range clusters {
		for _, w := range want {
			out = append(out, c+":"+w)
		}
	}
	slices.Sort(out)
	return out
}

// TestQuorumAtRiskValue checks that the description's $value is the number
// of healthy voters.
func TestQuorumAtRiskValue(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	for _, r := range alerts(groups) {
		if r.Alert != "EtcdClusterQuorumAtRisk" {
			continue
		}
		vec := evalAt(t, r.Expr, time.Unix(1e9, 0), []series{
			{`raftsman_etcdcluster_voters{namespace="db",name="five"}`, 5},
			{`raftsman_etcdcluster_ready_replicas{namespace="db",name="five"}`, 3},
		})
		if len(vec) != 1 || vec[0].F != 3 {
			t.Fatalf("got %v, want one element with value 3", vec)
		}
		return
	}
	t.Fatal("no alert EtcdClusterQuorumAtRisk")
}

// alertExprs maps each alert to its expression: by name, and by
// name/severity for an alert with a rule per severity.
func alertExprs(groups *rulefmt.RuleGroups) map[string]string {
	exprs := map[string]string{}
	count := map[string]int{}
	for _, r := range alerts(groups) {
		exprs[r.Alert+"/"+r.Labels["severity"]] = r.Expr
		exprs[r.Alert] = r.Expr
		count[r.Alert]++
	}
	for name, n := range count {
		if n > 1 {
			delete(exprs, name)
		}
	}
	return exprs
}

// TestDatabaseNearQuotaLabels checks that the description's $value is the
// share of the quota in use, and that the alert names the cluster in name
// and the member in member.
func TestDatabaseNearQuotaLabels(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	for _, sev := range []string{"warning", "critical"} {
		t.Run(sev, func(t *testing.T) {
			expr, ok := alertExprs(groups)["EtcdDatabaseNearQuota/"+sev]
			if !ok {
				t.Fatalf("no alert EtcdDatabaseNearQuota with severity %s", sev)
			}
			vec := evalAt(t, expr, time.Unix(1e9, 0), []series{
				{`raftsman_etcdmember_db_size_bytes{namespace="db",name="full",member="full-a"}`, 98},
				{`raftsman_etcdmember_db_quota_bytes{namespace="db",name="full",member="full-a"}`, 100},
			})
			if len(vec) != 1 || vec[0].F != 0.98 {
				t.Fatalf("got %v, want one element with value 0.98", vec)
			}
			if got, member := vec[0].Metric.Get("name"), vec[0].Metric.Get("member"); got != "full" || member != "full-a" {
				t.Errorf("labels name %q and member %q, want the cluster full and its member full-a", got, member)
			}
		})
	}
}

// etcdMember is the labels the etcd PodMonitor gives the series of a member
// of EtcdCluster db/<cluster>, with extra labels of the series' own.
func etcdMember(metric, cluster, member, extra string) string {
	return fmt.Sprintf(`%s{job="raftsman-system/raftsman-etcd",namespace="db",pod=%q,instance="%s:2381",container="etcd",endpoint="metrics",etcd_cluster=%q,member=%q%s}`,
		metric, member, member, cluster, member, extra)
}

// exponential are the bucket bounds etcd's histograms use: n bounds from
// start, each twice the one before.
func exponential(start float64, n int) []float64 {
	out := []float64{start}
	for len(out) < n {
		out = append(out, out[len(out)-1]*2)
	}
	return out
}

// slowHistogram is a histogram's buckets over 11 minutes in which every
// observation (one a second) fell in the bucket whose upper bound is upper:
// its 99th percentile is just under upper.
func slowHistogram(metric string, bounds []float64, upper float64, member func(metric, extra string) string, extra string) []history {
	var out []history
	les := append(slices.Clone(bounds), math.Inf(1))
	for _, le := range les {
		var values []float64
		for i := range 11 {
			v := 0.0
			if le >= upper {
				v = float64(60 * i)
			}
			values = append(values, v)
		}
		out = append(out, history{member(metric+"_bucket", fmt.Sprintf(`,le="%s"%s`, strconv.FormatFloat(le, 'g', -1, 64), extra)), values})
	}
	return out
}

// steps is a series that starts at from and grows by step each minute, for
// n minutes.
func steps(from, step float64, n int) []float64 {
	var out []float64
	for i := range n {
		out = append(out, from+step*float64(i))
	}
	return out
}

// TestEtcdAlertsSelect evaluates the alerts on etcd's own metrics over a
// few minutes of series of the etcd PodMonitor's members, once as a single
// Kubernetes cluster has them and once as the same series from two
// clusters of a fleet (label cluster east and west), which must fire in
// each apart.
func TestEtcdAlertsSelect(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	exprs := alertExprs(groups)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	in := func(cluster, member string) func(metric, extra string) string {
		return func(metric, extra string) string { return etcdMember(metric, cluster, member, extra) }
	}
	disk := exponential(0.001, 14)                                             // 1ms to 8.192s
	rtt := exponential(0.0001, 14)                                             // 0.1ms to 0.8192s
	grpc := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10} // gRPC's defaults
	fsync := slices.Concat(
		slowHistogram("etcd_disk_wal_fsync_duration_seconds", disk, 0.512, in("c", "c-a"), ""), // p99 0.51s
		slowHistogram("etcd_disk_wal_fsync_duration_seconds", disk, 1.024, in("c", "c-b"), ""), // p99 1.02s
		slowHistogram("etcd_disk_wal_fsync_duration_seconds", disk, 0.008, in("c", "c-c"), ""), // p99 8ms
	)
	const mib = 1 << 20
	for _, tc := range []struct {
		name, alert string
		in          []history
		want        []string
	}{{
		name:  "fsync over 500ms",
		alert: "EtcdSlowWALFsync/warning",
		in:    fsync,
		want:  []string{"db/c/c-a", "db/c/c-b"},
	}, {
		name:  "fsync over a second",
		alert: "EtcdSlowWALFsync/critical",
		in:    fsync,
		want:  []string{"db/c/c-b"},
	}, {
		name:  "backend commits over 250ms",
		alert: "EtcdSlowBackendCommit",
		in: slices.Concat(
			slowHistogram("etcd_disk_backend_commit_duration_seconds", disk, 0.256, in("c", "c-a"), ""),
			slowHistogram("etcd_disk_backend_commit_duration_seconds", disk, 0.128, in("c", "c-b"), ""),
		),
		want: []string{"db/c/c-a"},
	}, {
		name:  "unary requests over 150ms, by method, Defragment and streams left out",
		alert: "EtcdSlowGRPCRequests",
		in: slices.Concat(
			slowHistogram("grpc_server_handling_seconds", grpc, 0.25, in("c", "c-a"), `,grpc_service="etcdserverpb.KV",grpc_method="Range",grpc_type="unary"`),
			slowHistogram("grpc_server_handling_seconds", grpc, 0.1, in("c", "c-a"), `,grpc_service="etcdserverpb.KV",grpc_method="Put",grpc_type="unary"`),
			slowHistogram("grpc_server_handling_seconds", grpc, 2.5, in("c", "c-b"), `,grpc_service="etcdserverpb.Maintenance",grpc_method="Defragment",grpc_type="unary"`),
			slowHistogram("grpc_server_handling_seconds", grpc, 10, in("c", "c-b"), `,grpc_service="etcdserverpb.Watch",grpc_method="Watch",grpc_type="bidi_stream"`),
		),
		want: []string{"db/c/c-a Range"},
	}, {
		name:  "round trips over 150ms, by peer",
		alert: "EtcdSlowPeerCommunication",
		in: slices.Concat(
			slowHistogram("etcd_network_peer_round_trip_time_seconds", rtt, 0.2048, in("c", "c-a"), `,To="b1"`),
			slowHistogram("etcd_network_peer_round_trip_time_seconds", rtt, 0.0016, in("c", "c-a"), `,To="c2"`),
			slowHistogram("etcd_network_peer_round_trip_time_seconds", rtt, 0.1024, in("c", "c-b"), `,To="a3"`),
		),
		want: []string{"db/c/c-a to b1"},
	}, {
		name:  "over 5 failed proposals a second",
		alert: "EtcdManyFailedProposals",
		in: []history{
			{etcdMember("etcd_server_proposals_failed_total", "c", "c-a", ""), steps(0, 6*60, 17)},
			{etcdMember("etcd_server_proposals_failed_total", "c", "c-b", ""), steps(0, 4*60, 17)},
		},
		want: []string{"db/c/c-a"},
	}, {
		name:  "4 leader changes in 15 minutes; a rollout's restarts and move are fewer",
		alert: "EtcdFrequentLeaderChanges",
		in: []history{
			{etcdMember("etcd_server_leader_changes_seen_total", "c", "c-a", ""), []float64{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}},
			{etcdMember("etcd_server_leader_changes_seen_total", "c", "c-b", ""), []float64{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5}},
			// A rolled member restarts (its count starts again at 1) and
			// sees the leader move once.
			{etcdMember("etcd_server_leader_changes_seen_total", "r", "r-a", ""), []float64{2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}},
			{etcdMember("etcd_server_leader_changes_seen_total", "r", "r-b", ""), []float64{2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}},
			{etcdMember("etcd_server_leader_changes_seen_total", "r", "r-c", ""), []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1}},
		},
		want: []string{"db/c"},
	}, {
		name:  "quota reached within 4 hours at the growth of the last 4",
		alert: "EtcdDatabaseFillingUp",
		in: []history{
			// 100 MiB growing 15 MiB an hour: 220 MiB in 4 hours.
			{etcdMember("etcd_mvcc_db_total_size_in_bytes", "c", "c-a", ""), steps(100*mib, mib/4, 241)},
			{etcdMember("etcd_server_quota_backend_bytes", "c", "c-a", ""), []float64{200 * mib}},
			{etcdMember("etcd_mvcc_db_total_size_in_bytes", "c", "c-b", ""), steps(100*mib, mib/4, 241)},
			{etcdMember("etcd_server_quota_backend_bytes", "c", "c-b", ""), []float64{8 << 30}},
			// Near its quota, but not growing.
			{etcdMember("etcd_mvcc_db_total_size_in_bytes", "c", "c-c", ""), steps(150*mib, 0, 241)},
			{etcdMember("etcd_server_quota_backend_bytes", "c", "c-c", ""), []float64{160 * mib}},
		},
		want: []string{"db/c/c-a"},
	}} {
		expr, ok := exprs[tc.alert]
		if !ok {
			t.Fatalf("no alert %s", tc.alert)
		}
		t.Run(tc.alert+"/"+tc.name, func(t *testing.T) {
			vec := evalHistory(t, expr, now, tc.in)
			if got := firing(vec); !slices.Equal(got, tc.want) {
				t.Errorf("fires for %q, want %q\nresult: %v", got, tc.want, vec)
			}
			for _, s := range vec {
				if s.Metric.Get("name") != s.Metric.Get("etcd_cluster") {
					t.Errorf("name %q, want the etcd_cluster %q", s.Metric.Get("name"), s.Metric.Get("etcd_cluster"))
				}
			}
		})
		t.Run(tc.alert+"/"+tc.name+"/fleet", func(t *testing.T) {
			var fleet []history
			for _, c := range []string{"east", "west"} {
				for _, h := range tc.in {
					fleet = append(fleet, history{withCluster(t, h.metric, c), h.values})
				}
			}
			if got, want := firing(evalHistory(t, expr, now, fleet)), inClusters(tc.want, "east", "west"); !slices.Equal(got, want) {
				t.Errorf("fires for %q, want %q", got, want)
			}
		})
	}
}

// TestEtcdAlertValues checks the $value each description shows: a
// duration in seconds, a count, a rate, a size.
func TestEtcdAlertValues(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	exprs := alertExprs(groups)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	member := func(metric, extra string) string { return etcdMember(metric, "c", "c-a", extra) }
	for _, tc := range []struct {
		alert    string
		in       []history
		min, max float64
	}{
		{"EtcdSlowWALFsync/critical", slowHistogram("etcd_disk_wal_fsync_duration_seconds", exponential(0.001, 14), 2.048, member, ""), 1.024, 2.048},
		{"EtcdFrequentLeaderChanges", []history{{member("etcd_server_leader_changes_seen_total", ""), steps(0, 1, 16)}}, 15, 16},
		{"EtcdManyFailedProposals", []history{{member("etcd_server_proposals_failed_total", ""), steps(0, 600, 16)}}, 9.9, 10.1},
		{"EtcdDatabaseFillingUp", []history{
			{member("etcd_mvcc_db_total_size_in_bytes", ""), steps(0, 1000, 241)},
			{member("etcd_server_quota_backend_bytes", ""), []float64{1000}},
		}, 479000, 481000},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			vec := evalHistory(t, exprs[tc.alert], now, tc.in)
			if len(vec) != 1 || vec[0].F < tc.min || vec[0].F > tc.max {
				t.Fatalf("got %v, want one element between %g and %g", vec, tc.min, tc.max)
			}
		})
	}
}

// TestAlertsKeepTheClusterLabel checks every alert's expression: no
// aggregation and no vector matching drops the label cluster, so that a
// ruler evaluating the rules over a fleet alerts for each Kubernetes
// cluster apart.
func TestAlertsKeepTheClusterLabel(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	p := newParser()
	for _, r := range alerts(groups) {
		expr, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.AggregateExpr:
				if n.Without == slices.Contains(n.Grouping, "cluster") {
					t.Errorf("%s: %s drops the label cluster", r.Alert, n)
				}
			case *parser.BinaryExpr:
				vm := n.VectorMatching
				if vm != nil && n.LHS.Type() == parser.ValueTypeVector && n.RHS.Type() == parser.ValueTypeVector &&
					vm.On == !slices.Contains(vm.MatchingLabels, "cluster") && (vm.On || len(vm.MatchingLabels) > 0) {
					t.Errorf("%s: %s matches without the label cluster", r.Alert, n)
				}
			}
			return nil
		})
	}
}

// TestAlertsUseKnownMetrics checks each alert's expression as the dashboards'
// queries are checked, against the metrics of a real etcd's scrape and the
// operator's registry (config/grafana/metrics.txt), including those only
// --metrics=extensive serves; and that every label a summary or
// description names is one the result has.
func TestAlertsUseKnownMetrics(t *testing.T) {
	groups, _ := loadRuleGroups(t)
	known := loadKnownMetrics(t)
	p := newParser()
	ref := regexp.MustCompile(`\$labels\.(\w+)`)
	for _, r := range alerts(groups) {
		expr, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		c := &checker{known: known, extensive: true}
		ls := c.labels(expr)
		for _, err := range c.errs {
			t.Errorf("%s/%s: %s", r.Alert, r.Labels["severity"], err)
		}
		for _, k := range []string{"summary", "description"} {
			for _, m := range ref.FindAllStringSubmatch(r.Annotations[k], -1) {
				if ls != nil && !ls[m[1]] && r.Labels[m[1]] == "" {
					t.Errorf("%s/%s: the %s names $labels.%s, which the result does not have", r.Alert, r.Labels["severity"], k, m[1])
				}
			}
		}
	}
}
