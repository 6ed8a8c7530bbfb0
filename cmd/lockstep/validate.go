package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"lockstep/plans"
)

const validateHelp = `Usage: lockstep validate [--json] PLAN...

Checks plans without running anything: syntax, every block and attribute,
references to variables, locals, targets, probes and earlier steps,
durations, regular expressions, condition types, and commands that put a
variable into a shell command without shellquote(). Every problem is
reported in one pass as FILE:LINE:COL with the source line and the fix.

Exit status: 0 when every plan is valid (warnings are printed but do not
fail), 2 when a plan has errors or the arguments are wrong.

Flags:
  --json   print the diagnostics as JSON on stdout

Examples:
  lockstep validate examples/quickstart.hcl
  lockstep validate plans/*.hcl --json
`

// validateFlags is validate's command line, parsed before anything runs.
type validateFlags struct {
	Plans []string
	JSON  bool
}

func parseValidateFlags(args []string) (validateFlags, error) {
	var f validateFlags
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.BoolVar(&f.JSON, "json", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) == 0 {
		return f, fmt.Errorf("validate needs at least one plan file")
	}
	f.Plans = pos
	return f, nil
}

func validateCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseValidateFlags(args)
	if err != nil {
		return flagsFailed("validate", err, validateHelp, stdout, stderr)
	}
	for _, path := range f.Plans {
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			return usageError(stderr, fmt.Sprintf("%s is a directory", path),
				fmt.Sprintf("name the plan files, e.g. lockstep validate %s", filepath.Join(path, "*.hcl")))
		}
	}
	out := plans.Validation{FormatVersion: plans.ValidationVersion, Valid: true}
	for _, path := range f.Plans {
		p, diags := plans.ParseFile(path)
		out.Add(path, p, diags)
		if f.JSON {
			continue
		}
		errs, warns := countDiagnostics(diags)
		writeDiagnostics(stderr, p.Files, diags)
		switch {
		case errs > 0:
			errorf(stderr, "%s is invalid: %s, %s", path, plural(errs, "error"), plural(warns, "warning"))
		case warns > 0:
			fmt.Fprintf(stdout, "%s: valid plan %q, %s, with %s\n", path, p.Name, plural(len(p.Steps), "step"), plural(warns, "warning"))
		default:
			fmt.Fprintf(stdout, "%s: valid plan %q, %s\n", path, p.Name, plural(len(p.Steps), "step"))
		}
	}
	if f.JSON {
		if err := writeJSON(stdout, out); err != nil {
			errorf(stderr, "writing json: %v", err)
			return exitFailed
		}
	}
	if !out.Valid {
		return exitInvalid
	}
	return exitOK
}
