package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCheck: which links of a small repository are broken.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		files   map[string]string
		pending []string
		want    []string
	}{{
		name: "files, folders and anchors that exist",
		files: map[string]string{
			"README.md": "# Top\n\nSee [install](docs/install.md), [its Helm part](docs/install.md#with-helm), " +
				"[a folder](hack/), [a script](hack/run.sh), [here](#top) and ![a picture](docs/a.png \"title\").\n" +
				"[ref]: docs/install.md#releases\n",
			"docs/install.md": "# Install\n\n## With Helm\n\n## Releases\n\nBack to [the start](../README.md#top).\n",
			"docs/a.png":      "",
			"hack/run.sh":     "",
		},
	}, {
		name: "missing file, missing anchor, absolute path, outside",
		files: map[string]string{
			"README.md":       "# Top\n\n[a](docs/gone.md)\n[b](docs/install.md#nowhere)\n[c](/docs/install.md)\n[d](../x.md)\n[e](#missing)\n",
			"docs/install.md": "# Install\n",
		},
		want: []string{
			"README.md:3: docs/gone.md: no such file",
			"README.md:4: docs/install.md#nowhere: no heading with this anchor in docs/install.md",
			"README.md:5: /docs/install.md: an absolute path: link relative to the page",
			"README.md:6: ../x.md: outside the repository",
			"README.md:7: #missing: no heading with this anchor in README.md",
		},
	}, {
		name: "links with a scheme and text in code are not checked",
		files: map[string]string{
			"README.md": "# Top\n\n[web](https://example.com/x.md) [mail](mailto:a@example.com) `[code](gone.md)` ``[two](gone.md) ` here``\n" +
				"```sh\n[fenced](gone.md)\n# not a heading\n```\n~~~\n[tilde](gone.md)\n~~~\n[after](#top)\n",
		},
	}, {
		name: "anchors as GitHub makes them",
		files: map[string]string{
			"README.md": "# Maintenance: quota, `compaction` and [defrag](x.md)\n## Tests\n## Tests\n### snake_case A/B\n<a name=\"custom\"></a>\n# Closed ##\n" +
				"[1](#maintenance-quota-compaction-and-defrag) [2](#tests) [3](#tests-1) [4](#snake_case-ab) [5](#custom) [6](#closed) [7](#Tests)\n",
			"x.md": "",
		},
	}, {
		name: "a pending page",
		files: map[string]string{
			"README.md":      "# Top\n\n[plugin](docs/plugin.md) [its part](docs/plugin.md#verbs) [other](docs/other.md)\n",
			"docs/.keep":     "",
			"_output/out.md": "[ignored](gone.md)\n",
		},
		pending: []string{"docs/plugin.md"},
		want:    []string{"README.md:3: docs/other.md: no such file"},
	}, {
		name: "a pending page that exists is checked",
		files: map[string]string{
			"README.md":      "# Top\n\n[its part](docs/plugin.md#verbs)\n",
			"docs/plugin.md": "# Plugin\n",
		},
		pending: []string{"docs/plugin.md"},
		want:    []string{"README.md:3: docs/plugin.md#verbs: no heading with this anchor in docs/plugin.md"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for name, content := range c.files {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Check(root, c.pending)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) && (len(got) > 0 || len(c.want) > 0) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

func TestStripCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a `b` c":             "a     c",
		"a ``b ` c`` d":       "a " + strings.Repeat(" ", 9) + " d",
		"unclosed `here":      "unclosed `here",
		"escaped \\`not` `x`": "escaped \\`not   x`", // the escaped one is text
	} {
		if got := stripCode(in); got != want {
			t.Errorf("stripCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRepository: the repository's own pages have no broken link.
func TestRepository(t *testing.T) {
	t.Parallel()
	problems, err := Check("../..", pending)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestIndexes: the landing page and the index of docs/ link every page of
// docs/.
func TestIndexes(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []struct{ file, prefix string }{{"../../README.md", "docs/"}, {"../../docs/README.md", ""}} {
		b, err := os.ReadFile(index.file)
		if err != nil {
			t.Fatal(err)
		}
		linked := map[string]bool{}
		for _, l := range parse(string(b)).links {
			linked[strings.SplitN(l.target, "#", 2)[0]] = true
		}
		for _, p := range append(pages, pending...) {
			name := filepath.Base(p)
			if name == "README.md" {
				continue
			}
			if !linked[index.prefix+name] {
				t.Errorf("%s does not link %s%s", index.file, index.prefix, name)
			}
		}
	}
}
