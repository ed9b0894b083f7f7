package main

import (
	"bytes"
	"go/ast"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// header is the package comment every test package starts with.
const header = `// Package v1 is a test API.
// +groupName=test.example.com
package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ corev1.Pod
var _ metav1.Time
`

// kind is a root type with a spec and status of the given types.
func kind(name, spec, status string) string {
	return `
// ` + name + ` is a test kind.
// +kubebuilder:object:root=true
type ` + name + ` struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec   ` + spec + " `json:\"spec\"`" + `
	Status ` + status + " `json:\"status,omitempty\"`" + `
}

// ` + name + `List is a list.
// +kubebuilder:object:root=true
type ` + name + `List struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []` + name + " `json:\"items\"`" + `
}
`
}

const emptyStatus = `
// Status is empty.
type Status struct{}
`

// TestGenerate: what the reference says of each construct of an API
// package, and what it leaves out.
func TestGenerate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		src     string
		order   []string
		want    []string
		notWant []string
		err     string
	}{{
		name: "kind",
		src: `
// Thing is a thing.
//
// Its second paragraph.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=th;thing,categories=all
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=` + "`.status.conditions[?(@.type==\"Ready\")].status`" + `
// +kubebuilder:printcolumn:name="Wide",type=string,JSONPath=` + "`.spec.x`" + `,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 35",message="metadata.name is at most 35 characters"
type Thing struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec   Spec   ` + "`json:\"spec\"`" + `
	Status Status ` + "`json:\"status,omitempty\"`" + `
}

// Spec is the spec.
type Spec struct {
	// X is x.
	X string ` + "`json:\"x\"`" + `
}
` + emptyStatus,
		want: []string{
			"- [Thing](#thing): Thing is a thing.\n",
			"\n## Thing\n\nThing is a thing.\n\nIts second paragraph.\n\n",
			"| apiVersion | `test.example.com/v1` |\n",
			"| short names | `th`, `thing` |\n",
			"| categories | `all` |\n",
			"| subresources | `status`, `scale` (replicas `.spec.replicas`, observed `.status.replicas`, selector `.status.selector`) |\n",
			"| `kubectl get` columns | Ready `.status.conditions[?(@.type==\"Ready\")].status`, Wide (wide) `.spec.x` |\n",
			"Rules:\n\n- metadata.name is at most 35 characters\n",
			"| `apiVersion` | string | `test.example.com/v1` |\n",
			"| `kind` | string | `Thing` |\n",
			"| `metadata` | ObjectMeta (name, namespace, labels, annotations, ...) |  |\n",
			"| `spec` | [Spec](#spec) | Required. |\n",
			"| `status` | [Status](#status) |  |\n",
			"\n### Spec\n\nSpec is the spec.\n\n| Field | Type | Description |\n|---|---|---|\n| `x` | string | Required. X is x. |\n",
			"\n### Status\n\nStatus is empty.\n\nNo fields.\n",
		},
		notWant: []string{"+kubebuilder", "ThingList"},
	}, {
		name: "markers of fields",
		src: kind("Thing", "Spec", "Status") + emptyStatus + `
// Spec is the spec.
// +kubebuilder:validation:XValidation:rule="self.a >= 0"
type Spec struct {
	// A has a default and bounds.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	A *int32 ` + "`json:\"a,omitempty\"`" + `
	// B is one of three.
	// +kubebuilder:validation:Enum="";x;y
	// +kubebuilder:default="x"
	B string ` + "`json:\"b\"`" + `
	// C has a pattern with a bar.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=` + "`^(a|b)$`" + `
	// +kubebuilder:validation:XValidation:rule="self != 'a'",message="spec.c cannot be <a>: it is taken"
	C string ` + "`json:\"c,omitempty\"`" + `
	// D is optional by its marker alone.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4
	D []Item ` + "`json:\"d\"`" + `
	// E has a computed message.
	// +kubebuilder:validation:XValidation:rule="self.size() < 3",messageExpression="'too long: ' + self"
	// +kubebuilder:validation:MinLength=1
	E map[string]string ` + "`json:\"e\"`" + `
	Undocumented bool ` + "`json:\"undocumented,omitempty\"`" + `
	Skipped      bool ` + "`json:\"-\"`" + `
	unexported   bool
}

// Item is in a list.
type Item struct {
	// Name keys the list.
	Name string ` + "`json:\"name\"`" + `
}
`,
		want: []string{
			"Rules:\n\n- `self.a >= 0`\n",
			"| `a` | integer (32 bits) | A has a default and bounds. Default: `3`. From 1 to 9. |\n",
			"| `b` | string | Required. B is one of three. Default: `x`. One of `\"\"`, `x`, `y`. |\n",
			"| `c` | string | C has a pattern with a bar. At most 64 characters. Matches `^(a\\|b)$`. Rule: spec.c cannot be \\<a\\>: it is taken. |\n",
			"| `d` | array of [Item](#item) | D is optional by its marker alone. At most 4 items. A list keyed by `name`. |\n",
			"| `e` | map of string to string | Required. E has a computed message. At least 1 characters. Rule: `self.size() < 3`. |\n",
			"| `undocumented` | boolean |  |\n",
			"\n### Item\n",
		},
		notWant: []string{"Skipped", "skipped", "unexported"},
	}, {
		name: "inline embedding and other packages' types",
		src: kind("Thing", "Spec", "Status") + emptyStatus + `
// Spec embeds Base.
type Spec struct {
	Base ` + "`json:\",inline\"`" + `
	// When is a time.
	When metav1.Time ` + "`json:\"when\"`" + `
	// Every is a duration.
	Every *metav1.Duration ` + "`json:\"every,omitempty\"`" + `
	// Ref names a Secret.
	Ref corev1.LocalObjectReference ` + "`json:\"ref\"`" + `
	// Probe is another package's type the reference does not know.
	Probe *corev1.Probe ` + "`json:\"probe,omitempty\"`" + `
	// Data is bytes.
	Data []byte ` + "`json:\"data,omitempty\"`" + `
}

// Base is inlined.
type Base struct {
	// Inner comes from Base.
	Inner string ` + "`json:\"inner\"`" + `
}
`,
		want: []string{
			"| `inner` | string | Required. Inner comes from Base. |\n",
			"| `when` | time (RFC 3339) | Required. When is a time. |\n",
			"| `every` | duration (like `1h30m`) | Every is a duration. |\n",
			"| `ref` | reference (`name`) | Required. Ref names a Secret. |\n",
			"| `probe` | Probe (`k8s.io/api/core/v1`) | Probe is another package's type the reference does not know. |\n",
			"| `data` | bytes (base64) | Data is bytes. |\n",
		},
		notWant: []string{"### Base", "`Base`"},
	}, {
		name: "named types and their constants",
		src: kind("Thing", "Spec", "Status") + emptyStatus + `
// Spec is the spec.
type Spec struct {
	// Policy is a policy.
	Policy Policy ` + "`json:\"policy,omitempty\"`" + `
	// Sizes by name.
	Sizes Sizes ` + "`json:\"sizes,omitempty\"`" + `
}

// Policy says what happens.
// +kubebuilder:validation:Enum="";Keep
type Policy string

const (
	// PolicyDefault deletes.
	PolicyDefault Policy = ""
	// PolicyKeep keeps.
	PolicyKeep Policy = "Keep"
)

// Sizes are sizes by name.
type Sizes map[string]Size

// Size is a size.
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:MaxLength=24
type Size string

// Unused is used by no kind.
type Unused string
`,
		want: []string{
			"| `policy` | [Policy](#policy) | Policy is a policy. |\n",
			"\n### Policy\n\nPolicy says what happens.\n\nType: string. One of `\"\"`, `Keep`.\n\n| Value | Description |\n|---|---|\n| `\"\"` | PolicyDefault deletes. |\n| `Keep` | PolicyKeep keeps. |\n",
			"\n### Sizes\n\nSizes are sizes by name.\n\nType: map of string to [Size](#size).\n",
			"\n### Size\n\nSize is a size.\n\nType: string. At most 24 characters. A string or a whole number.\n",
		},
		notWant: []string{"Unused"},
	}, {
		name: "kinds in the order asked, then by name; shared types once",
		src: kind("Bravo", "Spec", "Status") + kind("Alpha", "Spec", "Status") + kind("Charlie", "Spec", "Status") + emptyStatus + `
// Spec is shared.
type Spec struct{}
`,
		order: []string{"Charlie"},
		want: []string{
			"- [Charlie](#charlie): Charlie is a test kind.\n- [Alpha](#alpha): Alpha is a test kind.\n- [Bravo](#bravo): Bravo is a test kind.\n",
			"## Charlie\n",
			"### Spec\n",
		},
	}, {
		name:  "an unknown kind asked",
		src:   kind("Alpha", "Status", "Status") + emptyStatus,
		order: []string{"Zulu"},
		err:   "-kinds: Zulu is not a kind of the package",
	}, {
		name:  "a list is not a kind",
		src:   kind("Alpha", "Status", "Status") + emptyStatus,
		order: []string{"AlphaList"},
		err:   "-kinds: AlphaList is not a kind of the package",
	}, {
		name: "constants by their names, doc links",
		src: kind("Thing", "Spec", "Status") + emptyStatus + `
// Spec is described in docs/thing.md and docs/other-page.md.
type Spec struct{}

const (
	// ConditionReady is True when ready.
	ConditionReady = "Ready"
	// ReasonWaiting: it waits (Ready False).
	ReasonWaiting = "Waiting"
	// ThingLabel names the thing.
	ThingLabel = "test.example.com/thing"
	// PauseAnnotation pauses it.
	PauseAnnotation = "test.example.com/pause"
	// ThingFinalizer holds it.
	ThingFinalizer = "test.example.com/hold"
	// SomethingElse is none of these.
	SomethingElse = "else"
	// MaxThings is not a string.
	MaxThings = 3
)
`,
		want: []string{
			"Spec is described in [docs/thing.md](thing.md) and [docs/other-page.md](other-page.md).",
			"- [Conditions](#conditions)\n- [Condition reasons](#condition-reasons)\n- [Labels, annotations and finalizers](#labels-annotations-and-finalizers)\n",
			"\n## Conditions\n\n",
			"| `Ready` | ConditionReady is True when ready. |\n",
			"\n## Condition reasons\n\n",
			"| `Waiting` | ReasonWaiting: it waits (Ready False). |\n",
			"| `test.example.com/thing` | ThingLabel names the thing. |\n| `test.example.com/pause` | PauseAnnotation pauses it. |\n| `test.example.com/hold` | ThingFinalizer holds it. |\n",
		},
		notWant: []string{"else", "MaxThings"},
	}, {
		name: "no group",
		src:  "package v1\n",
		err:  "the package comment has no +groupName marker",
	}, {
		name: "no kinds",
		src:  "// +groupName=x\npackage v1\n\ntype A struct{}\n",
		err:  "no kinds",
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := c.src
			if !strings.HasPrefix(src, "package") && !strings.HasPrefix(src, "//") {
				src = header + src
			}
			write(t, filepath.Join(dir, "types.go"), src)
			// Tests and deepcopy code are not read.
			write(t, filepath.Join(dir, "types_test.go"), "package v1\n\n// Broken is not read.\ntype Broken struct{ X int `json:\"x\"` }\n")
			write(t, filepath.Join(dir, "zz_generated.deepcopy.go"), "package v1\n\n// Generated is not read.\ntype Generated struct{}\n")
			got, err := Generate(dir, c.order)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("missing:\n%s", w)
				}
			}
			for _, w := range append(c.notWant, "Broken", "Generated") {
				if bytes.Contains(got, []byte(w)) {
					t.Errorf("has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("got:\n%s", got)
			}
			again, err := Generate(dir, c.order)
			if err != nil || !bytes.Equal(got, again) {
				t.Errorf("a second run gave another output (%v)", err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want map[string]string
		err  bool
	}{
		{`rule="a, b",message="it's \"x\""`, map[string]string{"rule": "a, b", "message": `it's "x"`}, false},
		{"name=Ready,type=string,JSONPath=`.status.x`,priority=1", map[string]string{"name": "Ready", "type": "string", "JSONPath": ".status.x", "priority": "1"}, false},
		{`shortName=a;b`, map[string]string{"shortName": "a;b"}, false},
		{`rule="unterminated`, nil, true},
		{`novalue`, nil, true},
	} {
		got, err := parseArgs(c.in)
		if (err != nil) != c.err {
			t.Errorf("%s: error %v", c.in, err)
			continue
		}
		if c.err {
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.in, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s is %q, want %q", c.in, k, got[k], v)
			}
		}
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"EtcdClusterSpec":                    "etcdclusterspec",
		"Labels, annotations and finalizers": "labels-annotations-and-finalizers",
		"What `make demo` does":              "what-make-demo-does",
		"Backups to S3 or a PVC":             "backups-to-s3-or-a-pvc",
		"Maintenance: quota, compaction":     "maintenance-quota-compaction",
		"snake_case and dash-case":           "snake_case-and-dash-case",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAPIMatchesCRDs: for the real API, every field the reference lists is
// in the CRD controller-gen wrote, required exactly when the CRD says so,
// and the CRD has no field the reference leaves out.
func TestAPIMatchesCRDs(t *testing.T) {
	t.Parallel()
	p, err := load("../../api/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := p.kinds(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		file := filepath.Join("../../config/crd/bases", p.group+"_"+strings.ToLower(k.name)+"s.yaml")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Versions []struct {
					Name   string
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != p.version {
			t.Fatalf("%s: versions %v, want %s alone", file, crd.Spec.Versions, p.version)
		}
		p.compare(t, k, crd.Spec.Versions[0].Schema.OpenAPIV3Schema, k.name)
	}
}

// compare checks struct type ti against its schema s, and the package's
// struct types its fields use against theirs.
func (p *pkg) compare(t *testing.T, ti *typeInfo, s map[string]any, path string) {
	fs, err := p.fields(ti)
	if err != nil {
		t.Fatal(err)
	}
	props, _ := s["properties"].(map[string]any)
	var want, got []string
	required, _ := s["required"].([]any)
	for _, r := range required {
		want = append(want, r.(string))
	}
	listed := map[string]bool{}
	for _, f := range fs {
		listed[f.json] = true
		if f.required {
			got = append(got, f.json)
		}
		fs, ok := props[f.json].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: not in the CRD", path, f.json)
			continue
		}
		p.compareType(t, f.typ, fs, path+"."+f.json)
	}
	for n := range props {
		if !listed[n] {
			t.Errorf("%s.%s: in the CRD, not in the reference", path, n)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, ",") != strings.Join(got, ",") {
		t.Errorf("%s: required %v, the CRD's %v", path, got, want)
	}
}

func (p *pkg) compareType(t *testing.T, e ast.Expr, s map[string]any, path string) {
	switch e := e.(type) {
	case *ast.StarExpr:
		p.compareType(t, e.X, s, path)
	case *ast.ArrayType:
		if items, ok := s["items"].(map[string]any); ok {
			p.compareType(t, e.Elt, items, path+"[]")
		}
	case *ast.MapType:
		if v, ok := s["additionalProperties"].(map[string]any); ok {
			p.compareType(t, e.Value, v, path+"{}")
		}
	case *ast.Ident:
		if ti, ok := p.types[e.Name]; ok {
			if _, isStruct := ti.spec.Type.(*ast.StructType); isStruct {
				p.compare(t, ti, s, path)
			} else {
				p.compareType(t, ti.spec.Type, s, path)
			}
		}
	}
}
