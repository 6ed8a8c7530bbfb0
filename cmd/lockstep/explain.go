package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"

	"lockstep/plans"
	"lockstep/views"
)

const explainHelp = `Usage: lockstep explain PLAN [--format text|markdown] [-var NAME=VALUE]... [-var-file FILE]...
       lockstep explain --diff OLD NEW [--format text|markdown]

Says, step by step and in file order, what the plan does and what each
step must observe before the plan moves on: the action (the command as
written and, once variables resolve, as it will run; sensitive values
show as (sensitive)), the probes, the postconditions with their error
messages and the checks each kind makes on its own, what stops a step at
once, when it gives up, and whether it always runs. Then the variables.

With --diff, compares two versions of a plan (the base branch's and a
pull request's) as plans, not as text, and says what the change changes
in what the plan does and checks: steps added, removed or moved (steps
run in file order), and for each step kept (same KIND.NAME) its target,
command, log, timeouts (with the kind's defaults written out), always,
keep, postconditions, abort_ifs, probes and load; then variables (a
sensitive default shows as (sensitive)), locals and targets. A summary
line comes first. Values are shown as written: -var and -var-file do
not apply. It exits 0 when it rendered, changes or not, and 2 when
either plan is invalid.

Variables resolve as in lockstep run: -var first, then -var-file, then
LOCKSTEP_VAR_NAME in the environment, then the default. Without a value
for a required variable, commands are shown as written.

Flags:
  --format text|markdown   markdown is for pasting into a pull request (default text)
  --diff OLD NEW           what changed from plan OLD to plan NEW
  --from STEP              what lockstep run --from STEP would re-confirm and run
  --only STEP[,STEP]       what lockstep run --only would re-confirm, run and leave out
  -var NAME=VALUE          set a variable (repeatable)
  -var-file FILE           read variables from an HCL file (repeatable)

Examples:
  lockstep explain examples/glm5.hcl
  lockstep explain examples/glm5.hcl -var moe_backend=flashinfer_trtllm --format markdown
  git show origin/main:plans/glm5.hcl > /tmp/glm5.base.hcl
  lockstep explain --diff /tmp/glm5.base.hcl plans/glm5.hcl --format markdown
`

// explainFlags is explain's command line, parsed before anything runs.
type explainFlags struct {
	Plan   string
	Format views.Format
	Inputs plans.Inputs
	// Diff is set by --diff: Plan is then the new version and Old the old.
	Diff bool
	Old  string
	// From and Only explain a run of part of the plan.
	From string
	Only []string
}

func parseExplainFlags(args []string) (explainFlags, error) {
	var f explainFlags
	format := "text"
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.StringVar(&format, "format", "text", "")
	fs.BoolVar(&f.Diff, "diff", false, "")
	fs.StringVar(&f.From, "from", "", "")
	fs.Var((*stepsFlag)(&f.Only), "only", "")
	varFlags(fs, &f.Inputs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	switch format {
	case "text":
		f.Format = views.Text
	case "markdown":
		f.Format = views.Markdown
	default:
		return f, fmt.Errorf("unknown format %q: use text or markdown", format)
	}
	if f.Diff {
		if len(f.Inputs.Vars) > 0 || len(f.Inputs.VarFiles) > 0 {
			return f, fmt.Errorf("--diff compares plans as written: -var and -var-file do not apply")
		}
		if len(pos) != 2 {
			return f, fmt.Errorf("--diff takes two plan files, OLD and NEW, not %d", len(pos))
		}
		f.Old, f.Plan = pos[0], pos[1]
		return f, nil
	}
	switch {
	case len(pos) == 0:
		return f, fmt.Errorf("explain needs a plan file")
	case len(pos) > 1:
		return f, fmt.Errorf("explain takes one plan file, not %d (--diff compares two)", len(pos))
	}
	f.Plan = pos[0]
	return f, nil
}

func explainCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseExplainFlags(args)
	if err != nil {
		return flagsFailed("explain", err, explainHelp, stdout, stderr)
	}
	if f.Diff {
		return explainDiff(f, stdout, stderr)
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
			mv, ok := d.Extra.(plans.MissingValue)
			if !ok { // a warning, such as a var file's undeclared name
				writeDiagnostics(stderr, scope.Files, hcl.Diagnostics{d})
				continue
			}
			errorf(stderr, "var.%s has no value, so values are shown as written", mv.Name)
			hintf(stderr, "give one with -var %s=VALUE to see them resolved", mv.Name)
		}
		scope = nil
	} else {
		writeDiagnostics(stderr, scope.Files, rdiags) // warnings
	}
	part, err := p.PartOf(f.From, f.Only)
	if err != nil {
		return usageError(stderr, "explain: "+err.Error(), "")
	}
	x := plans.Explain(p, scope)
	part.Explain(p, &x)
	out, err := views.Explain(x, f.Format)
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

// explainDiff prints what changed from f.Old to f.Plan; both must be
// valid plans.
func explainDiff(f explainFlags, stdout, stderr io.Writer) int {
	var parsed []*plans.Plan
	invalid := false
	for _, path := range []string{f.Old, f.Plan} {
		p, diags := plans.ParseFile(path)
		if diags.HasErrors() {
			writeDiagnostics(stderr, p.Files, diags)
			errorf(stderr, "%s is invalid; lockstep validate %s shows the same", path, path)
			invalid = true
		}
		parsed = append(parsed, p)
	}
	if invalid {
		return exitInvalid
	}
	out, err := views.PlanDiff(plans.Diff(parsed[0], parsed[1]), f.Format)
	if err != nil {
		errorf(stderr, "%v", err)
		return exitUsage
	}
	fmt.Fprint(stdout, out)
	return exitOK
}
