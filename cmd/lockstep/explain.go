package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"

	"lockstep/plans"
)

const explainHelp = `Usage: lockstep explain PLAN [--format text|markdown] [-var NAME=VALUE]... [-var-file FILE]...

Says, step by step and in file order, what the plan does and what each
step must observe before the plan moves on: the action (the command as
written and, once variables resolve, as it will run; sensitive values
show as (sensitive)), the probes, the postconditions with their error
messages and the checks each kind makes on its own, what stops a step at
once, when it gives up, and whether it always runs. Then the variables.

Variables resolve as in lockstep run: -var first, then -var-file, then
LOCKSTEP_VAR_NAME in the environment, then the default. Without a value
for a required variable, commands are shown as written.

Flags:
  --format text|markdown   markdown is for pasting into a pull request (default text)
  -var NAME=VALUE          set a variable (repeatable)
  -var-file FILE           read variables from an HCL file (repeatable)

Examples:
  lockstep explain examples/glm5.hcl
  lockstep explain examples/glm5.hcl -var moe_backend=flashinfer_trtllm --format markdown
`

// explainFlags is explain's command line, parsed before anything runs.
type explainFlags struct {
	Plan   string
	Format string
	Inputs plans.Inputs
}

func parseExplainFlags(args []string) (explainFlags, error) {
	f := explainFlags{Format: "text"}
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.StringVar(&f.Format, "format", "text", "")
	varFlags(fs, &f.Inputs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	switch {
	case len(pos) == 0:
		return f, fmt.Errorf("explain needs a plan file")
	case len(pos) > 1:
		return f, fmt.Errorf("explain takes one plan file, not %d", len(pos))
	}
	if f.Format != "text" && f.Format != "markdown" {
		return f, fmt.Errorf("unknown format %q: use text or markdown", f.Format)
	}
	f.Plan = pos[0]
	return f, nil
}

func explainCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseExplainFlags(args)
	if err != nil {
		return flagsFailed("explain", err, explainHelp, stdout, stderr)
	}
	p, diags := plans.ParseFile(f.Plan)
	if diags.HasErrors() {
		writeDiagnostics(stderr, p.Files, diags)
		errorf(stderr, "%s is invalid; lockstep validate %s shows the same", f.Plan, f.Plan)
		return exitInvalid
	}
	f.Inputs.Environ = os.Environ()
	scope, rdiags := p.Resolve(f.Inputs)
	if rdiags.HasErrors() {
		if !onlyMissingValues(rdiags) {
			writeDiagnostics(stderr, scope.Files, rdiags)
			errorf(stderr, "the variables for %s do not resolve", f.Plan)
			return exitInvalid
		}
		// Explaining a plan before choosing its values is useful: show
		// what is written, and say why nothing is resolved.
		for _, d := range rdiags {
			name := d.Extra.(plans.MissingValue).Name
			errorf(stderr, "var.%s has no value, so values are shown as written", name)
			hintf(stderr, "give one with -var %s=VALUE to see them resolved", name)
		}
		scope = nil
	}
	out, err := plans.Explain(p, scope, f.Format)
	if err != nil {
		errorf(stderr, "%v", err)
		return exitUsage
	}
	fmt.Fprint(stdout, out)
	return exitOK
}

func onlyMissingValues(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if _, ok := d.Extra.(plans.MissingValue); d.Severity == hcl.DiagError && !ok {
			return false
		}
	}
	return true
}
