package main

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// skipDirs are folders of build output and tools, not of the repository's
// pages.
var skipDirs = map[string]bool{"_output": true, "bin": true, "node_modules": true}

// Check returns the broken relative links of every Markdown file under
// root, as "file:line: problem". Links to the files in pending (paths from
// root) are not errors while those files do not exist.
func Check(root string, pending []string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	pages := map[string]*page{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		pages[f] = parse(string(b))
	}
	isPending := map[string]bool{}
	for _, p := range pending {
		isPending[path.Clean(p)] = true
	}
	var problems []string
	for _, f := range files {
		for _, l := range pages[f].links {
			if msg := resolve(root, f, l.target, pages, isPending); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", f, l.line, l.target, msg))
			}
		}
	}
	return problems, nil
}

// resolve says what is wrong with target, linked from file; "" when
// nothing is.
func resolve(root, file, target string, pages map[string]*page, pending map[string]bool) string {
	if scheme.MatchString(target) {
		return ""
	}
	p, frag, _ := strings.Cut(target, "#")
	if p != "" {
		u, err := url.PathUnescape(p)
		if err != nil {
			return "not a path"
		}
		p = u
	}
	if strings.HasPrefix(p, "/") {
		return "an absolute path: link relative to the page"
	}
	dest := file
	if p != "" {
		dest = path.Join(path.Dir(file), p)
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
			if pending[dest] {
				return ""
			}
			return "no such file"
		}
	}
	if frag == "" {
		return ""
	}
	pg, ok := pages[dest]
	if !ok {
		if strings.HasSuffix(dest, ".md") {
			return "no such page" // a Markdown file in a skipped folder
		}
		return "" // GitHub's anchors of code lines (#L10) and the like
	}
	if !pg.anchors[strings.ToLower(frag)] {
		return "no heading with this anchor in " + dest
	}
	return ""
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

type link struct {
	target string
	line   int
}

type page struct {
	links   []link
	anchors map[string]bool
}

var (
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	fence      = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	inlineLink = regexp.MustCompile(`!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+(<[^>]*>|\S+)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	linkText   = regexp.MustCompile(`!?\[((?:[^\]\\]|\\.)*)\]\([^)]*\)`)
)

// parse finds a page's links and anchors, outside code blocks and spans.
func parse(text string) *page {
	pg := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	var open string // the fence of the code block we are in
	for i, line := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line) == m[1]:
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			pg.anchors[strings.ToLower(m[1])] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(plain(m[2]))
			n := seen[s]
			seen[s]++
			if n > 0 {
				s = fmt.Sprintf("%s-%d", s, n)
			}
			pg.anchors[s] = true
		}
		code := stripCode(line)
		for _, m := range inlineLink.FindAllStringSubmatch(code, -1) {
			pg.links = append(pg.links, link{target: strings.Trim(m[1], "<>"), line: i + 1})
		}
		if m := refDef.FindStringSubmatch(code); m != nil {
			pg.links = append(pg.links, link{target: strings.Trim(m[1], "<>"), line: i + 1})
		}
	}
	return pg
}

// plain is a heading's text as GitHub renders it: links give their text,
// code spans their content.
func plain(s string) string {
	s = linkText.ReplaceAllString(s, "$1")
	return strings.ReplaceAll(s, "`", "")
}

// stripCode blanks the code spans of a line.
func stripCode(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] == '\\' && i+1 < len(line) {
			b.WriteString(line[i : i+2])
			i += 2
			continue
		}
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		run := strings.Repeat("`", n)
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], run)
			if k < 0 {
				break
			}
			k += j
			if (k+n == len(line) || line[k+n] != '`') && (k == 0 || line[k-1] != '`') {
				end = k
				break
			}
			j = k + 1
			for j < len(line) && line[j] == '`' {
				j++
			}
		}
		if end < 0 { // no closing run: the backticks are text
			b.WriteString(run)
			i += n
			continue
		}
		b.WriteString(strings.Repeat(" ", end+n-i))
		i = end + n
	}
	return b.String()
}

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// '-' and '_' dropped (letters, digits and marks of any script stay),
// spaces turned into '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
