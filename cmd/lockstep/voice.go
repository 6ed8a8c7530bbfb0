package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/hashicorp/hcl/v2"

	"lockstep/plans"
)

// How lockstep speaks, written once: errors on stderr, prefixed
// "lockstep: ", lower-case, with a hint where one helps.

// errShownHelp is returned by a flag parse that printed --help.
var errShownHelp = errors.New("help shown")

// newFlagSet is a flag set that prints usage text on -h and nothing on
// its own when parsing fails (the caller reports the error).
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	_ = usage
	return fs
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments (`lockstep run plan.hcl --keep`), and returns the positionals.
// A lone "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// failUsage reports a command-line mistake, or prints the usage text for
// -h, and returns the exit code (2, or 0 for help).
func failUsage(stdout, stderr io.Writer, usage string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "lockstep: %v\n", err)
	fmt.Fprintf(stderr, "%s", firstLine(usage))
	return 2
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i+1]
		}
	}
	return s + "\n"
}

// writeDiags prints diagnostics with file:line:col, the source line and
// the fix, as HCL renders them.
func writeDiags(w io.Writer, p *plans.Plan, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	var files map[string]*hcl.File
	if p != nil {
		files = p.Files
	}
	dw := hcl.NewDiagnosticTextWriter(w, files, 78, false)
	dw.WriteDiagnostics(diags)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
