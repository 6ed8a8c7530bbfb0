package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/term"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/runner/records"
)

// runFlags are `lockstep run`'s flags, parsed before anything runs.
type runFlags struct {
	plan     string
	vars     []string
	varFiles []string
	keep     bool
	json     bool
	plain    bool
	junit    string
	note     string
	records  string
	matrix   []string
	failFast bool
}

const runUsage = `usage: lockstep run PLAN [flags]

Runs the plan's steps in order. A step's confirm loop observes its probes
until every postcondition holds, an abort_if holds, or its timeout passes;
the plan never moves on before. Every run is an attempt, recorded under
.lockstep/attempts/PLAN/N/ beside the plan.

Flags:
  -var NAME=VALUE      set a variable (repeatable; wins over -var-file and
                       LOCKSTEP_VAR_NAME in the environment)
  -var-file FILE       read variables from an HCL file (repeatable)
  --keep               leave launched processes running at the end
  --note TEXT          a one-line reason for this attempt, kept in its record
  --json               print one JSON object per event
  --plain              print plain lines even on a terminal
  --junit FILE         write a JUnit XML report of the attempt
  --records DIR        keep records under DIR instead of .lockstep beside
                       the plan (also LOCKSTEP_RECORDS)
  --matrix NAME=V1,V2  run one attempt per value (repeatable: every
                       combination), then print the table of those attempts
  --fail-fast          stop a matrix at its first failed attempt

Exit codes: 0 every step confirmed, 1 a step failed, 2 invalid plan or
usage, 130 interrupted.

Examples:
  lockstep run examples/quickstart.hcl
  lockstep run glm5.hcl -var moe_backend=flashinfer_trtllm --note "try trtllm"
  lockstep run redis.hcl --matrix policy=allkeys-lru,noeviction
`

func parseRunFlags(args []string) (runFlags, error) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.Var((*listFlag)(&f.vars), "var", "")
	fs.Var((*listFlag)(&f.varFiles), "var-file", "")
	fs.BoolVar(&f.keep, "keep", false, "")
	fs.BoolVar(&f.json, "json", false, "")
	fs.BoolVar(&f.plain, "plain", false, "")
	fs.StringVar(&f.junit, "junit", "", "")
	fs.StringVar(&f.note, "note", "", "")
	fs.StringVar(&f.records, "records", "", "")
	fs.Func("matrix", "", func(s string) error {
		name, vals, ok := strings.Cut(s, "=")
		if !ok || name == "" || vals == "" {
			return fmt.Errorf("want NAME=V1,V2,..., not %q", s)
		}
		f.matrix = append(f.matrix, s)
		return nil
	})
	fs.BoolVar(&f.failFast, "fail-fast", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) != 1 {
		return f, errors.New("run takes one plan file")
	}
	f.plan = pos[0]
	if f.note != "" && strings.ContainsAny(f.note, "\n\r") {
		return f, errors.New("--note is one line")
	}
	return f, nil
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	f, err := parseRunFlags(args)
	if err != nil {
		return flagsFailed("run", err, runUsage, stdout, stderr)
	}
	p, diags := plans.ParseFile(f.plan)
	if diags.HasErrors() {
		writeDiagnostics(stderr, planFiles(p), diags)
		errorf(stderr, "%s is invalid: nothing was run", f.plan)
		return exitInvalid
	}
	writeDiagnostics(stderr, planFiles(p), diags) // warnings
	combos, err := matrixCombos(f.matrix)
	if err != nil {
		return flagsFailed("run", err, runUsage, stdout, stderr)
	}
	// Every combination is resolved before the first runs: a bad value
	// fails the whole matrix up front, with nothing half-done.
	scopes := make([]*plans.Scope, len(combos))
	for i, c := range combos {
		s, diags := p.Resolve(plans.Inputs{Vars: append(append([]string{}, f.vars...), c...), VarFiles: f.varFiles, Environ: os.Environ()})
		if diags.HasErrors() {
			writeDiagnostics(stderr, s.Files, diags)
			errorf(stderr, "the variables of %s do not resolve: nothing was run", f.plan)
			return exitInvalid
		}
		if i == 0 {
			// Warnings (a var file setting a variable the plan does not
			// declare) are the same for every combination: say them once.
			writeDiagnostics(stderr, s.Files, diags)
		}
		scopes[i] = s
	}
	root := records.Root(f.records, f.plan)
	ctx, force, stop := interrupts(stderr)
	defer stop()

	code := 0
	var numbers []int
	for i, scope := range scopes {
		note := f.note
		if len(combos) > 1 {
			note = strings.TrimSpace(strings.Join(combos[i], " ") + " " + note)
		}
		n, c := runAttempt(ctx, force, f, p, scope, root, note, args, stdout, stderr)
		if n > 0 {
			numbers = append(numbers, n)
		}
		if c > code {
			code = c
		}
		if c == 130 || (c != 0 && f.failFast) || c == 2 {
			break
		}
	}
	if len(combos) > 1 && len(numbers) > 0 && !f.json {
		if table, err := records.Matrix(root, p.Name, numbers, "text"); err == nil {
			fmt.Fprintln(stdout)
			fmt.Fprint(stdout, table)
		} else {
			errorf(stderr, "the table of attempts: %v", err)
		}
	}
	return code
}

// runAttempt runs the plan once and returns the attempt's number and the
// exit code.
func runAttempt(ctx, force context.Context, f runFlags, p *plans.Plan, scope *plans.Scope, root, note string, args []string, stdout, stderr io.Writer) (int, int) {
	w, err := records.Open(root, p.Name)
	if err != nil {
		errorf(stderr, "cannot keep the attempt's record: %v", err)
		hintf(stderr, "choose another folder with --records DIR")
		return 0, 2
	}
	if err := w.SavePlan(p.Source); err != nil {
		errorf(stderr, "cannot keep the plan in the record: %v", err)
	}
	view, closeView := newView(f, stdout)
	obs := events.Observers{w, view}
	start := events.Start{Host: hostname(), User: username(), Note: note, Args: redactArgs(p, args)}
	res := runner.Run(ctx, runner.Options{
		Plan:     p,
		Scope:    scope,
		Targets:  runner.OpenTarget(p, scope),
		Observer: obs,
		Attempt:  w.Number(),
		Start:    start,
		Keep:     f.keep,
		LogDir:   filepath.Join(w.Dir(), "logs"),
		Force:    force,
	})
	closeView()
	if err := w.Close(); err != nil {
		errorf(stderr, "the attempt's record may be incomplete: %v", err)
	}
	if f.junit != "" {
		if err := writeJUnit(f.junit, w.Dir()); err != nil {
			errorf(stderr, "writing %s: %v", f.junit, err)
		}
	}
	return w.Number(), res.ExitCode()
}

func writeJUnit(path, dir string) error {
	a, err := records.Load(dir)
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := records.WriteJUnit(out, a); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// interrupts turns Ctrl-C and SIGTERM into contexts: the first signal
// ends ctx (the current step stops, always steps and cleanup follow), the
// second ends force (always steps are cut short; launched processes are
// still stopped).
func interrupts(stderr io.Writer) (ctx, force context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	force, cancelForce := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-sigs:
				n++
				if n == 1 {
					cancel()
					continue
				}
				errorf(stderr, "interrupted again: skipping the remaining always steps; launched processes are still being stopped")
				cancelForce()
			}
		}
	}()
	return ctx, force, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		cancelForce()
	}
}

// newView chooses how events are shown: JSON lines, a live view on a
// terminal, or plain lines.
func newView(f runFlags, stdout io.Writer) (events.Observer, func()) {
	if f.json {
		return newJSONView(stdout), func() {}
	}
	st := style{}
	file, isFile := stdout.(*os.File)
	tty := isFile && term.IsTerminal(int(file.Fd()))
	if tty && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" {
		st.color = true
	}
	if tty && !f.plain && os.Getenv("TERM") != "dumb" {
		v := newLiveView(stdout, st, func() int {
			w, _, err := term.GetSize(int(file.Fd()))
			if err != nil {
				return 80
			}
			return w
		})
		return v, v.Close
	}
	return newLineView(stdout, st), func() {}
}

// matrixCombos expands --matrix flags into one list of -var settings per
// attempt: every combination, the first flag varying slowest.
func matrixCombos(specs []string) ([][]string, error) {
	combos := [][]string{nil}
	seen := map[string]bool{}
	for _, spec := range specs {
		name, vals, _ := strings.Cut(spec, "=")
		if seen[name] {
			return nil, fmt.Errorf("--matrix names %s twice", name)
		}
		seen[name] = true
		var next [][]string
		for _, c := range combos {
			for _, v := range strings.Split(vals, ",") {
				next = append(next, append(append([]string{}, c...), name+"="+v))
			}
		}
		combos = next
	}
	return combos, nil
}

// redactArgs is the command line with the values of sensitive variables
// replaced, for the record.
func redactArgs(p *plans.Plan, args []string) []string {
	sensitive := map[string]bool{}
	for _, v := range p.Variables {
		if v.Sensitive {
			sensitive[v.Name] = true
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		kv := a
		if i > 0 && (args[i-1] == "-var" || args[i-1] == "--var") {
			kv = a
		} else if strings.HasPrefix(a, "-var=") || strings.HasPrefix(a, "--var=") {
			kv = a[strings.Index(a, "=")+1:]
		} else {
			continue
		}
		name, _, ok := strings.Cut(kv, "=")
		if ok && sensitive[name] {
			out[i] = strings.Replace(a, kv, name+"=(sensitive)", 1)
		}
	}
	return out
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func username() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

func planFiles(p *plans.Plan) map[string]*hcl.File {
	if p == nil {
		return nil
	}
	return p.Files
}
