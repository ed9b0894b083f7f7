// Command mdlinks checks the relative links of the repository's Markdown
// files: every linked file or folder exists, and every anchor (#section) is
// a heading of the page it points into, as GitHub makes anchors. Links with a
// scheme (https:, mailto:) are left alone, and so is text in code. `make
// verify-generated` runs it on the repository; it prints each broken link as
// file:line and fails when there is one.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "the repository")
	flag.Parse()
	problems, err := Check(*root, pending)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mdlinks:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "mdlinks: %d broken links\n", len(problems))
		os.Exit(1)
	}
}

// pending are pages that are linked before they are written, in another
// branch: a link to one is not an error while it does not exist. Once it
// exists it is checked like any other; remove it from here then.
var pending []string
