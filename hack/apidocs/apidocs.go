package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Generate returns docs/api.md for the API package in dir, with the kinds
// named in order first.
func Generate(dir string, order []string) ([]byte, error) {
	p, err := load(dir)
	if err != nil {
		return nil, err
	}
	kinds, err := p.kinds(order)
	if err != nil {
		return nil, err
	}
	return p.render(filepath.ToSlash(dir), kinds)
}

// pkg is the API package as the reference needs it.
type pkg struct {
	group, version string
	doc            *doc.Package
	types          map[string]*typeInfo
	consts         []constInfo // the untyped string constants, in source order
}

// typeInfo is one named type of the package.
type typeInfo struct {
	name    string
	doc     string   // the doc comment without its markers
	markers []string // the markers, without their leading '+'
	spec    *ast.TypeSpec
	file    *ast.File
	consts  []constInfo // the constants of this type, in source order
}

type constInfo struct {
	name, value, doc string
}

// field is one JSON field of a struct; embedded structs marked inline
// give theirs.
type field struct {
	json     string
	typ      ast.Expr
	file     *ast.File
	doc      string
	markers  []string
	required bool
}

// load parses every Go file of dir but tests and generated deepcopy code.
func load(dir string) (*pkg, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	byName := map[string]*ast.File{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		path := filepath.Join(dir, n)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		byName[path] = f
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	dp, err := doc.NewFromFiles(fset, files, "api", doc.AllDecls|doc.PreserveAST)
	if err != nil {
		return nil, err
	}
	p := &pkg{version: dp.Name, doc: dp, types: map[string]*typeInfo{}}
	_, pkgMarkers := splitMarkers(dp.Doc)
	for _, m := range pkgMarkers {
		if v, ok := strings.CutPrefix(m, "groupName="); ok {
			p.group = v
		}
	}
	if p.group == "" {
		return nil, fmt.Errorf("%s: the package comment has no +groupName marker", dir)
	}
	fileOf := func(pos token.Pos) *ast.File { return byName[fset.Position(pos).Filename] }
	for _, t := range dp.Types {
		var spec *ast.TypeSpec
		for _, s := range t.Decl.Specs {
			if ts := s.(*ast.TypeSpec); ts.Name.Name == t.Name {
				spec = ts
			}
		}
		text := t.Doc
		if spec.Doc != nil { // a type in a group of types
			text = spec.Doc.Text()
		}
		d, m := splitMarkers(text)
		ti := &typeInfo{name: t.Name, doc: d, markers: m, spec: spec, file: fileOf(spec.Pos())}
		for _, v := range t.Consts {
			ti.consts = append(ti.consts, stringConsts(v)...)
		}
		p.types[t.Name] = ti
	}
	for _, v := range dp.Consts {
		p.consts = append(p.consts, stringConsts(v)...)
	}
	return p, nil
}

// stringConsts lists the exported constants of v with a string literal value.
func stringConsts(v *doc.Value) []constInfo {
	var out []constInfo
	for _, s := range v.Decl.Specs {
		vs := s.(*ast.ValueSpec)
		text := vs.Doc.Text()
		if vs.Doc == nil && len(v.Decl.Specs) == 1 {
			text = v.Doc
		}
		d, _ := splitMarkers(text)
		for i, n := range vs.Names {
			if !n.IsExported() || i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			val, err := strconv.Unquote(lit.Value)
			if err != nil {
				continue
			}
			c := constInfo{name: n.Name, value: val}
			if i == 0 {
				c.doc = d
			}
			out = append(out, c)
		}
	}
	return out
}

// splitMarkers separates a doc comment's text from its markers, the lines
// that start with '+'.
func splitMarkers(text string) (string, []string) {
	var doc []string
	var markers []string
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "+") {
			markers = append(markers, t[1:])
			continue
		}
		doc = append(doc, l)
	}
	return strings.TrimSpace(strings.Join(doc, "\n")), markers
}

func has(markers []string, m string) bool {
	for _, x := range markers {
		if x == m {
			return true
		}
	}
	return false
}

// value is the value of the marker name=value, if there is one.
func value(markers []string, name string) (string, bool) {
	for _, x := range markers {
		if v, ok := strings.CutPrefix(x, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// args parses the arguments of every marker name:a=1,b="x": one map each.
func args(markers []string, name string) ([]map[string]string, error) {
	var out []map[string]string
	for _, x := range markers {
		rest, ok := strings.CutPrefix(x, name+":")
		if !ok {
			continue
		}
		a, err := parseArgs(rest)
		if err != nil {
			return nil, fmt.Errorf("+%s: %w", x, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// parseArgs reads a=1,b="quoted",c=`raw` as controller-tools writes them.
func parseArgs(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("no '=' in %q", s)
		}
		var v string
		switch {
		case strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "`"):
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("argument %s: %w", k, err)
			}
			if v, err = strconv.Unquote(q); err != nil {
				return nil, fmt.Errorf("argument %s: %w", k, err)
			}
			rest = rest[len(q):]
		default:
			i := strings.IndexByte(rest, ',')
			if i < 0 {
				i = len(rest)
			}
			v, rest = rest[:i], rest[i:]
		}
		out[k] = v
		s = strings.TrimPrefix(rest, ",")
	}
	return out, nil
}

// kinds are the root types that are not lists: those in order first, then
// the others by name.
func (p *pkg) kinds(order []string) ([]*typeInfo, error) {
	var all []string
	for n, t := range p.types {
		if has(t.markers, "kubebuilder:object:root=true") && !isList(t) {
			all = append(all, n)
		}
	}
	sort.Strings(all)
	var out []*typeInfo
	done := map[string]bool{}
	for _, n := range order {
		t, ok := p.types[n]
		if !ok || !has(t.markers, "kubebuilder:object:root=true") || isList(t) {
			return nil, fmt.Errorf("-kinds: %s is not a kind of the package", n)
		}
		if !done[n] {
			out, done[n] = append(out, t), true
		}
	}
	for _, n := range all {
		if !done[n] {
			out = append(out, p.types[n])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no kinds: no type is marked +kubebuilder:object:root=true")
	}
	return out, nil
}

func isList(t *typeInfo) bool {
	st, ok := t.spec.Type.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == "Items" {
				return true
			}
		}
	}
	return false
}

// jsonTag is a field's JSON name and options.
func jsonTag(f *ast.Field) (string, []string) {
	if f.Tag == nil {
		return "", nil
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return "", nil
	}
	parts := strings.Split(reflect.StructTag(tag).Get("json"), ",")
	return parts[0], parts[1:]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fields lists the JSON fields of struct type t, in order.
func (p *pkg) fields(t *typeInfo) ([]field, error) {
	st, ok := t.spec.Type.(*ast.StructType)
	if !ok {
		return nil, nil
	}
	var out []field
	for _, f := range st.Fields.List {
		name, opts := jsonTag(f)
		if name == "-" {
			continue
		}
		doc, markers := splitMarkers(f.Doc.Text())
		optional := has(markers, "optional") || contains(opts, "omitempty") || contains(opts, "omitzero")
		if len(f.Names) == 0 { // embedded
			switch {
			case contains(opts, "inline") && isIdent(f.Type):
				inner, ok := p.types[f.Type.(*ast.Ident).Name]
				if !ok {
					return nil, fmt.Errorf("%s: embedded %s is not a type of the package", t.name, f.Type.(*ast.Ident).Name)
				}
				fs, err := p.fields(inner)
				if err != nil {
					return nil, err
				}
				out = append(out, fs...)
			case contains(opts, "inline") && selName(f.Type) == "TypeMeta":
				out = append(out,
					field{json: "apiVersion", typ: ast.NewIdent("string"), file: t.file},
					field{json: "kind", typ: ast.NewIdent("string"), file: t.file})
			case name != "":
				out = append(out, field{json: name, typ: f.Type, file: t.file, doc: doc, markers: markers, required: !optional})
			default:
				return nil, fmt.Errorf("%s: embedded field %s is neither inline nor named", t.name, types.ExprString(f.Type))
			}
			continue
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			j := name
			if j == "" {
				j = n.Name
			}
			out = append(out, field{json: j, typ: f.Type, file: t.file, doc: doc, markers: markers, required: !optional})
		}
	}
	return out, nil
}

func isIdent(e ast.Expr) bool { _, ok := e.(*ast.Ident); return ok }

func selName(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		return s.Sel.Name
	}
	return ""
}

// localTypes are the package's types named in e, in order.
func (p *pkg) localTypes(e ast.Expr) []string {
	switch e := e.(type) {
	case *ast.Ident:
		if _, ok := p.types[e.Name]; ok {
			return []string{e.Name}
		}
	case *ast.StarExpr:
		return p.localTypes(e.X)
	case *ast.ArrayType:
		return p.localTypes(e.Elt)
	case *ast.MapType:
		return append(p.localTypes(e.Key), p.localTypes(e.Value)...)
	}
	return nil
}

// reach appends to out the types t uses, depth first in field order, each
// once.
func (p *pkg) reach(t *typeInfo, seen map[string]bool, out *[]*typeInfo) error {
	var exprs []ast.Expr
	if _, ok := t.spec.Type.(*ast.StructType); ok {
		fs, err := p.fields(t)
		if err != nil {
			return err
		}
		for _, f := range fs {
			exprs = append(exprs, f.typ)
		}
	} else {
		exprs = append(exprs, t.spec.Type)
	}
	for _, e := range exprs {
		for _, n := range p.localTypes(e) {
			if seen[n] {
				continue
			}
			seen[n] = true
			u := p.types[n]
			*out = append(*out, u)
			if err := p.reach(u, seen, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// importPath is the path file f imports as name.
func importPath(f *ast.File, name string) string {
	for _, i := range f.Imports {
		path, _ := strconv.Unquote(i.Path.Value)
		n := pathpkg(path)
		if i.Name != nil {
			n = i.Name.Name
		}
		if n == name {
			return path
		}
	}
	return name
}

func pathpkg(path string) string { return path[strings.LastIndex(path, "/")+1:] }

// external names the types of other packages the API uses.
var external = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time (RFC 3339)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "duration (like `1h30m`)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Condition":  "Condition (`type`, `status`, `reason`, `message`, `lastTransitionTime`, `observedGeneration`)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": "ObjectMeta (name, namespace, labels, annotations, ...)",
	"k8s.io/apimachinery/pkg/apis/meta/v1.ListMeta":   "ListMeta",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity (like `1Gi`)",
	"k8s.io/api/core/v1.LocalObjectReference":         "reference (`name`)",
	"k8s.io/api/core/v1.ResourceName":                 "string",
	"k8s.io/api/core/v1.TolerationOperator":           "string",
	"k8s.io/api/core/v1.TaintEffect":                  "string",
	"k8s.io/api/core/v1.Affinity":                     "Affinity (as in a Pod's spec)",
	"k8s.io/api/core/v1.TopologySpreadConstraint":     "TopologySpreadConstraint (as in a Pod's spec)",
	"k8s.io/api/core/v1.ResourceRequirements":         "ResourceRequirements (as in a container's spec)",
}

var builtin = map[string]string{
	"string": "string", "bool": "boolean",
	"int": "integer", "int32": "integer (32 bits)", "int64": "integer (64 bits)",
	"uint32": "integer (32 bits)", "uint64": "integer (64 bits)",
	"float32": "number", "float64": "number",
}

// typeText is a field type as the reference shows it.
func (p *pkg) typeText(e ast.Expr, f *ast.File) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return p.typeText(e.X, f)
	case *ast.ArrayType:
		if e.Len == nil {
			if id, ok := e.Elt.(*ast.Ident); ok && id.Name == "byte" {
				return "bytes (base64)"
			}
			return "array of " + p.typeText(e.Elt, f)
		}
	case *ast.MapType:
		return "map of " + p.typeText(e.Key, f) + " to " + p.typeText(e.Value, f)
	case *ast.Ident:
		if _, ok := p.types[e.Name]; ok {
			return fmt.Sprintf("[%s](#%s)", e.Name, Slug(e.Name))
		}
		if b, ok := builtin[e.Name]; ok {
			return b
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			path := importPath(f, x.Name)
			if s, ok := external[path+"."+e.Sel.Name]; ok {
				return s
			}
			return fmt.Sprintf("%s (`%s`)", e.Sel.Name, path)
		}
	case *ast.StructType:
		if len(e.Fields.List) == 0 {
			return "object (no fields)"
		}
	}
	return code(types.ExprString(e))
}

// render writes the reference.
func (p *pkg) render(dir string, kinds []*typeInfo) ([]byte, error) {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("<!-- Code generated by hack/apidocs from the Go types in %s (make docs). DO NOT EDIT. -->\n", dir)
	w("# API reference\n\n")
	w("The kinds of the API group `%s`, version `%s`, and every type their fields use, from the Go\n", p.group, p.version)
	w("types in `%s` and their comments. Edit those and run `make docs`; `make verify-generated`\n", dir)
	w("fails when this file is not what they give. A field is optional unless it says Required.\n")
	w("Defaults, enums, bounds and patterns are the API server's; each rule's message is what the API\n")
	w("server answers when an object breaks the rule.\n\n")
	for _, k := range kinds {
		w("- [%s](#%s): %s\n", k.name, Slug(k.name), cell(markdown(p.doc.Synopsis(k.doc))))
	}
	sections := p.constSections()
	for _, s := range sections {
		w("- [%s](#%s)\n", s.title, Slug(s.title))
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		seen[k.name] = true
	}
	for _, k := range kinds {
		w("\n## %s\n\n", k.name)
		if err := p.renderKind(&b, k); err != nil {
			return nil, err
		}
		var used []*typeInfo
		if err := p.reach(k, seen, &used); err != nil {
			return nil, err
		}
		for _, t := range used {
			w("\n### %s\n\n", t.name)
			if err := p.renderType(&b, t); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range sections {
		w("\n## %s\n\n%s\n\n| %s | Description |\n|---|---|\n", s.title, s.intro, s.column)
		for _, c := range s.consts {
			w("| %s | %s |\n", code(c.value), cell(markdown(c.doc)))
		}
	}
	return b.Bytes(), nil
}

type constSection struct {
	title, intro, column string
	consts               []constInfo
}

// constSections groups the package's untyped string constants by their
// names' conventions.
func (p *pkg) constSections() []constSection {
	s := []constSection{
		{title: "Conditions", column: "Type", intro: "The condition types of `status.conditions`, with the constant of `api/v1alpha1` that names each."},
		{title: "Condition reasons", column: "Reason", intro: "The reasons of those conditions, with the constant that names each."},
		{title: "Labels, annotations and finalizers", column: "Name", intro: "What the operator puts on the objects it makes, and what it reads from yours."},
	}
	for _, c := range p.consts {
		switch {
		case strings.HasPrefix(c.name, "Condition"):
			s[0].consts = append(s[0].consts, c)
		case strings.HasPrefix(c.name, "Reason"):
			s[1].consts = append(s[1].consts, c)
		case strings.HasSuffix(c.name, "Label") || strings.HasSuffix(c.name, "Annotation") || strings.HasSuffix(c.name, "Finalizer"):
			s[2].consts = append(s[2].consts, c)
		}
	}
	var out []constSection
	for _, x := range s {
		if len(x.consts) > 0 {
			out = append(out, x)
		}
	}
	return out
}

func (p *pkg) renderKind(b *bytes.Buffer, k *typeInfo) error {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	if k.doc != "" {
		w("%s\n\n", markdown(k.doc))
	}
	w("| | |\n|---|---|\n")
	w("| apiVersion | `%s/%s` |\n", p.group, p.version)
	res, err := args(k.markers, "kubebuilder:resource")
	if err != nil {
		return err
	}
	for _, r := range res {
		if v := r["shortName"]; v != "" {
			w("| short names | %s |\n", codes(strings.Split(v, ";")))
		}
		if v := r["categories"]; v != "" {
			w("| categories | %s |\n", codes(strings.Split(v, ";")))
		}
		if v := r["scope"]; v != "" {
			w("| scope | %s |\n", v)
		}
	}
	var subs []string
	if has(k.markers, "kubebuilder:subresource:status") {
		subs = append(subs, "`status`")
	}
	scale, err := args(k.markers, "kubebuilder:subresource:scale")
	if err != nil {
		return err
	}
	for _, s := range scale {
		subs = append(subs, fmt.Sprintf("`scale` (replicas %s, observed %s, selector %s)", code(s["specpath"]), code(s["statuspath"]), code(s["selectorpath"])))
	}
	if len(subs) > 0 {
		w("| subresources | %s |\n", strings.Join(subs, ", "))
	}
	cols, err := args(k.markers, "kubebuilder:printcolumn")
	if err != nil {
		return err
	}
	if len(cols) > 0 {
		var names []string
		for _, c := range cols {
			n := c["name"]
			if c["priority"] != "" && c["priority"] != "0" {
				n += " (wide)"
			}
			names = append(names, fmt.Sprintf("%s %s", n, code(c["JSONPath"])))
		}
		w("| `kubectl get` columns | %s |\n", cell(strings.Join(names, ", ")))
	}
	w("\n")
	if err := p.renderRules(b, k.markers); err != nil {
		return err
	}
	return p.renderFields(b, k, true)
}

func (p *pkg) renderType(b *bytes.Buffer, t *typeInfo) error {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	if t.doc != "" {
		w("%s\n\n", markdown(t.doc))
	}
	if _, ok := t.spec.Type.(*ast.StructType); ok {
		if err := p.renderRules(b, t.markers); err != nil {
			return err
		}
		return p.renderFields(b, t, false)
	}
	facts := []string{"Type: " + p.typeText(t.spec.Type, t.file) + "."}
	c, err := constraints(t.markers)
	if err != nil {
		return err
	}
	w("%s\n", strings.Join(append(facts, c...), " "))
	if len(t.consts) > 0 {
		w("\n| Value | Description |\n|---|---|\n")
		for _, c := range t.consts {
			w("| %s | %s |\n", code(c.value), cell(markdown(c.doc)))
		}
	}
	return nil
}

// renderRules lists the messages of the CEL rules on a type.
func (p *pkg) renderRules(b *bytes.Buffer, markers []string) error {
	rules, err := args(markers, "kubebuilder:validation:XValidation")
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return nil
	}
	fmt.Fprintf(b, "Rules:\n\n")
	for _, r := range rules {
		fmt.Fprintf(b, "- %s\n", ruleText(r))
	}
	fmt.Fprintf(b, "\n")
	return nil
}

// ruleText is a rule's message, or the rule when its message is computed
// or missing.
func ruleText(r map[string]string) string {
	if m := r["message"]; m != "" {
		return docLink.ReplaceAllString(escape(m), "[docs/$1]($1)")
	}
	return code(r["rule"])
}

func (p *pkg) renderFields(b *bytes.Buffer, t *typeInfo, kind bool) error {
	fs, err := p.fields(t)
	if err != nil {
		return err
	}
	if len(fs) == 0 {
		fmt.Fprintf(b, "No fields.\n")
		return nil
	}
	fmt.Fprintf(b, "| Field | Type | Description |\n|---|---|---|\n")
	for _, f := range fs {
		var desc []string
		switch {
		case kind && f.json == "apiVersion":
			desc = append(desc, code(p.group+"/"+p.version))
		case kind && f.json == "kind":
			desc = append(desc, code(t.name))
		}
		if f.required {
			desc = append(desc, "Required.")
		}
		if f.doc != "" {
			desc = append(desc, markdown(f.doc))
		}
		c, err := constraints(f.markers)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.name, f.json, err)
		}
		desc = append(desc, c...)
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", f.json, cell(p.typeText(f.typ, f.file)), cell(strings.Join(desc, " ")))
	}
	return nil
}

// constraints are the sentences the validation markers make.
func constraints(markers []string) ([]string, error) {
	var out []string
	if v, ok := value(markers, "kubebuilder:default"); ok {
		out = append(out, "Default: "+code(unquote(v))+".")
	}
	if v, ok := value(markers, "kubebuilder:validation:Enum"); ok {
		var vals []string
		for _, x := range strings.Split(v, ";") {
			u := unquote(x)
			if u == "" {
				u = `""`
			}
			vals = append(vals, u)
		}
		out = append(out, "One of "+codes(vals)+".")
	}
	bound := func(min, max, unit string) {
		lo, hasLo := value(markers, "kubebuilder:validation:"+min)
		hi, hasHi := value(markers, "kubebuilder:validation:"+max)
		switch {
		case hasLo && hasHi:
			out = append(out, fmt.Sprintf("From %s to %s%s.", lo, hi, unit))
		case hasLo:
			out = append(out, fmt.Sprintf("At least %s%s.", lo, unit))
		case hasHi:
			out = append(out, fmt.Sprintf("At most %s%s.", hi, unit))
		}
	}
	bound("Minimum", "Maximum", "")
	bound("MinLength", "MaxLength", " characters")
	bound("MinItems", "MaxItems", " items")
	bound("MinProperties", "MaxProperties", " entries")
	if v, ok := value(markers, "kubebuilder:validation:Pattern"); ok {
		out = append(out, "Matches "+code(unquote(v))+".")
	}
	if has(markers, "kubebuilder:validation:XIntOrString") {
		out = append(out, "A string or a whole number.")
	}
	if v, ok := value(markers, "listType"); ok && v == "map" {
		if k, ok := value(markers, "listMapKey"); ok {
			out = append(out, "A list keyed by "+code(k)+".")
		}
	}
	rules, err := args(markers, "kubebuilder:validation:XValidation")
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		out = append(out, "Rule: "+ruleText(r)+".")
	}
	return out, nil
}

// unquote removes the quotes of a marker's quoted value.
func unquote(s string) string {
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "`") {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// docLink links the mentions of other pages of docs/ from docs/api.md.
var docLink = regexp.MustCompile(`\bdocs/([a-z0-9-]+\.md)\b`)

// markdown is a doc comment as Markdown.
func markdown(text string) string {
	var p comment.Parser
	var pr comment.Printer
	out := strings.TrimSpace(string(pr.Markdown(p.Parse(text))))
	return docLink.ReplaceAllString(out, "[docs/$1]($1)")
}

// escape makes text safe in Markdown: nothing in it is read as markup.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cell makes Markdown fit in one table cell: one line, and '|' escaped,
// in code spans too.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// code is s as inline code, with as many backticks around it as it needs.
func code(s string) string {
	if s == "" {
		return "`\"\"`"
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (fence != "`" && s != "") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func codes(list []string) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

// Slug is the anchor GitHub gives a heading: lower case, punctuation but
// '-' and '_' dropped (letters, digits and marks of any script stay),
// spaces turned into '-'.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
