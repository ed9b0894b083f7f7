// Command apidocs writes docs/api.md, the reference of the API in
// api/v1alpha1, from the Go source of its types: `make docs` runs it, and
// `make verify-generated` fails when the committed file differs from what it
// writes.
//
// It parses the package with go/parser and go/doc (no type checking, so it
// needs nothing built) and writes, for each kind (a type marked
// +kubebuilder:object:root=true that is not a list), its short names,
// subresources, kubectl columns and rules, its fields, then every type of
// the package its fields reach, depth first in field order: each field's
// JSON name, type, doc comment, whether it is required, and what the
// kubebuilder markers say of it (default, enum, minimum and maximum,
// lengths, pattern, the messages of its CEL rules). Then the package's
// string constants by the naming of conditions.go and labels.go: Condition*
// (condition types), Reason* (condition reasons), and *Label, *Annotation,
// *Finalizer. The output depends on the source alone: files are read in name
// order, and everything is written in source or field order.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	dir := flag.String("dir", "api/v1alpha1", "the API package's folder")
	out := flag.String("out", "docs/api.md", "the file to write")
	kinds := flag.String("kinds", "", "comma-separated kinds to put first, in this order; the others follow by name")
	flag.Parse()
	var order []string
	if *kinds != "" {
		order = strings.Split(*kinds, ",")
	}
	b, err := Generate(*dir, order)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}
