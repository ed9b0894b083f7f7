package plugin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// isTerminal says whether r is a terminal, where a person can answer a
// question (/dev/null or a pipe is not).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// confirm asks on the terminal whether to do what, unless yes (--yes)
// answers for the user. Without a terminal and without --yes it refuses:
// a script must say --yes.
func (e *env) confirm(what string, yes bool) error {
	if yes {
		return nil
	}
	if !e.interactive {
		return fmt.Errorf("%s\nrefused: no terminal to confirm on; pass --yes to go ahead", what)
	}
	fmt.Fprintf(e.streams.ErrOut, "%s\nGo ahead? [y/N] ", what)
	answer, err := bufio.NewReader(e.streams.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed: nothing done")
}

// addYes adds --yes to a verb that asks for confirmation.
func addYes(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "Do not ask for confirmation (needed without a terminal)")
}

// outputFormats are the values of -o.
var outputFormats = []string{"json", "yaml"}

// addOutput adds -o to a verb that can print a machine-readable form.
func addOutput(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "", "Print json or yaml instead of text")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses a -o other than json or yaml, before any connection.
func checkOutput(output string) error {
	if output == "" || output == "json" || output == "yaml" {
		return nil
	}
	return fmt.Errorf("--output %q: want json or yaml", output)
}

// writeStructured writes v as indented JSON or as YAML.
func writeStructured(w io.Writer, output string, v any) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
