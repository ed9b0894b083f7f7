package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/template"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// valuesSchema is the chart's values.schema.json: the values' types, written
// by hand (JSON Schema draft 7, which every Helm 3 reads).
//
//go:embed values.schema.json
var valuesSchema string

//go:embed README.md.tmpl
var readmeTemplate string

// row is one value in the README's table.
type row struct {
	key, typ, def, doc string
}

// readme writes the chart's README.md from README.md.tmpl, Chart.yaml and a
// table of the values: each key of values.yaml with its type in the schema,
// its default and its comment.
func (g *gen) readme(values, schema, chart []byte) ([]byte, error) {
	rows, err := valueRows(values, schema)
	if err != nil {
		return nil, err
	}
	var meta struct {
		Name, Description string
		KubeVersion       string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal(chart, &meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	if meta.Name == "" || meta.KubeVersion == "" {
		return nil, fmt.Errorf("Chart.yaml has no name or no kubeVersion")
	}
	tmpl, err := template.New("README.md").Parse(readmeTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, map[string]any{
		"Marker": generatedMarker, "Chart": meta, "Values": table(rows),
		"Base": g.base, "Namespace": g.opNS,
	})
	return b.Bytes(), err
}

// valueRows returns the rows of values.yaml's keys in its order, each key
// followed by those nested in it when the schema describes them one by one
// (properties, and additionalProperties false); other values (resources,
// maps of labels) are rows of their own, whatever they hold.
func valueRows(values, schema []byte) ([]row, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("values.schema.json: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yamlv3.MappingNode {
		return nil, fmt.Errorf("values.yaml is not a map")
	}
	defs, _ := s["definitions"].(map[string]any)
	return schemaWalk{defs}.rows("", doc.Content[0], s)
}

type schemaWalk struct{ defs map[string]any }

func (w schemaWalk) rows(prefix string, m *yamlv3.Node, s map[string]any) ([]row, error) {
	props, _ := s["properties"].(map[string]any)
	var rows []row
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		seen[k.Value] = true
		ps, ok := props[k.Value].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("values.yaml has %s, which values.schema.json lacks", key)
		}
		ps = w.resolve(ps)
		r := row{key: key, typ: w.typeOf(ps), doc: comment(k.HeadComment)}
		if r.doc == "" {
			return nil, fmt.Errorf("values.yaml's %s has no comment (hack/chartgen/values.yaml.tmpl)", key)
		}
		if closed(ps) && v.Kind == yamlv3.MappingNode {
			sub, err := w.rows(key+".", v, ps)
			if err != nil {
				return nil, err
			}
			rows = append(append(rows, r), sub...)
			continue
		}
		var def any
		if err := v.Decode(&def); err != nil {
			return nil, fmt.Errorf("values.yaml's %s: %w", key, err)
		}
		d, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("values.yaml's %s: %w", key, err)
		}
		r.def = string(d)
		rows = append(rows, r)
	}
	var missing []string
	for name := range props {
		// global is Helm's, when the chart is a dependency.
		if !seen[name] && (prefix != "" || name != "global") {
			missing = append(missing, prefix+name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("values.schema.json has %s, which values.yaml lacks", strings.Join(missing, ", "))
	}
	return rows, nil
}

// closed tells a schema of an object that holds the properties it lists and
// no other.
func closed(s map[string]any) bool {
	_, props := s["properties"]
	return props && s["additionalProperties"] == false
}

// resolve follows a $ref to the schema's definitions.
func (w schemaWalk) resolve(s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		if d, ok := w.defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any); ok {
			return d
		}
	}
	return s
}

// typeOf names a schema's type: "string", "list of string", "map of
// string", "string: A, B" for an enum.
func (w schemaWalk) typeOf(s map[string]any) string {
	var t string
	switch v := s["type"].(type) {
	case string:
		t = v
	case []any:
		var ts []string
		for _, x := range v {
			ts = append(ts, fmt.Sprint(x))
		}
		t = strings.Join(ts, " or ")
	default:
		t = "any"
	}
	if items, ok := s["items"].(map[string]any); ok && t == "array" {
		return "list of " + w.typeOf(w.resolve(items))
	}
	if add, ok := s["additionalProperties"].(map[string]any); ok && t == "object" {
		return "map of " + w.typeOf(w.resolve(add))
	}
	if enum, ok := s["enum"].([]any); ok {
		var es []string
		for _, e := range enum {
			es = append(es, fmt.Sprint(e))
		}
		t += ": " + strings.Join(es, ", ")
	}
	return t
}

// comment is a head comment's text on one line.
func comment(c string) string {
	var words []string
	for _, line := range strings.Split(c, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if line != "" {
			words = append(words, line)
		}
	}
	return strings.Join(words, " ")
}

// table is the rows as a Markdown table.
func table(rows []row) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, r := range rows {
		def := ""
		if r.def != "" {
			def = "`" + cell(r.def) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.key, cell(r.typ), def, cell(markdownText(r.doc)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cell escapes what would end a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// markdownText escapes < and > outside code spans, so that <fullname> is
// not taken for HTML.
func markdownText(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.Join(parts, "`")
}
