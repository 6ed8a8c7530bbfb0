package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"golang.org/x/term"

	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/runner/records"
	"lockstep/views"
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
	from     string
	only     []string
	stop     bool
	part     plans.Part // from and only, resolved against the plan
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
  --from STEP          run from STEP on (KIND.NAME, or NAME when unique): the
                       steps before are re-confirmed, not run; a launch
                       adopts the process an earlier attempt left running
                       (and never starts one)
  --only STEP[,STEP]   run only these steps; the steps they read are
                       re-confirmed, the others left out
  --stop               stop at the end the processes adopted (by default
                       they are left running, as they were found)
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
usage, 3 the record (or the --junit report) could not be written in full,
129 SIGHUP, 130 SIGINT (Ctrl-C), 131 SIGQUIT, 143 SIGTERM: launched
processes are stopped and the record says why the run ended.

Examples:
  lockstep run examples/quickstart.hcl
  lockstep run glm5.hcl -var moe_backend=flashinfer_trtllm --note "try trtllm"
  lockstep run redis.hcl --matrix policy=allkeys-lru,noeviction
  lockstep run glm5.hcl --keep                 # then, the server still up:
  lockstep run glm5.hcl --from benchmark.throughput
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
	fs.StringVar(&f.from, "from", "", "")
	fs.Var((*stepsFlag)(&f.only), "only", "")
	fs.BoolVar(&f.stop, "stop", false, "")
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
	part, err := p.PartOf(f.from, f.only)
	if err != nil {
		return usageError(stderr, "run: "+err.Error(), "lockstep explain "+f.plan+" lists the steps")
	}
	f.part = part
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
	// From here a failed write to stdout or stderr never ends the run.
	out, errs := newOutput("stdout", stdout), newOutput("stderr", stderr)
	defer func() {
		for _, o := range []*output{out, errs} {
			if n := o.close(); n > 0 {
				errorf(errs, "%d bytes of %s were dropped: its reader did not keep up (the record has everything)", n, o.name)
			}
		}
	}()
	ctx, force, signalled, stop := interrupts(errs)
	defer stop()

	code := 0
	var numbers []int
	for i, scope := range scopes {
		note := f.note
		if len(combos) > 1 {
			note = strings.TrimSpace(strings.Join(combos[i], " ") + " " + note)
		}
		n, c := runAttempt(ctx, force, signalled, f, p, scope, root, note, args, out, errs)
		if n > 0 {
			numbers = append(numbers, n)
		}
		code = max(code, c)
		if ctx.Err() != nil || (c != 0 && f.failFast) || c == exitUsage {
			break
		}
	}
	if f.junit != "" && len(numbers) > 0 {
		// One report for the whole run: a testsuite per attempt.
		if err := writeJUnit(f.junit, root, p.Name, numbers); err != nil {
			errorf(errs, "the JUnit report was not written: %v", err)
			hintf(errs, "exit status %d: a report asked for is lost", exitLost)
			code = max(code, exitLost)
		}
	}
	if len(combos) > 1 && len(numbers) > 0 && !f.json {
		if table, err := matrixTable(root, p.Name, numbers); err == nil {
			fmt.Fprintln(out)
			fmt.Fprint(out, table)
		} else {
			errorf(errs, "the table of attempts: %v", err)
		}
	}
	return code
}

// runAttempt runs the plan once and returns the attempt's number and the
// exit code.
func runAttempt(ctx, force context.Context, signalled func() *ending, f runFlags, p *plans.Plan, scope *plans.Scope, root, note string, args []string, stdout, stderr *output) (int, int) {
	view, closeView := newView(f, stdout)
	at, err := runner.RunRecorded(ctx, runner.Recorded{
		Options: runner.Options{
			Plan:     p,
			Scope:    scope,
			Observer: view,
			Start:    events.Start{Host: hostname(), User: username(), Note: note, Args: redactArgs(p, args), Lockstep: buildVersion()},
			Keep:     f.keep,
			Force:    force,
			Part:     f.part,
			Stop:     f.stop,
		},
		Records: root,
		Opened: func(w *records.Writer) {
			// A write to stdout or stderr that fails is kept in the record
			// as a warning: the record says why the output stops.
			lost := func(msg string) { w.Emit(events.Event{Type: events.Warning, Time: time.Now(), Message: msg}) }
			stdout.onLost(lost)
			stderr.onLost(lost)
		},
		RecordFailed: func(err error) {
			errorf(stderr, "the record cannot be written: %v", err)
			hintf(stderr, "the run goes on, but will not exit 0: its record is not whole (exit status %d)", exitLost)
		},
		PlanNotKept: func(err error) { errorf(stderr, "cannot keep the plan in the record: %v", err) },
		NotKept: func(n int) string {
			return fmt.Sprintf("the record of attempt %d is incomplete (exit status %d)", n, exitLost)
		},
	})
	if err != nil {
		closeView()
		errorf(stderr, "cannot keep the attempt's record: %v", err)
		hintf(stderr, "choose another folder with --records DIR")
		return 0, exitUsage
	}
	code := at.Result.ExitCode()
	if e := signalled(); e != nil && at.Result.Status == events.Interrupted {
		code = e.code
	}
	closeView()
	stdout.onLost(nil)
	stderr.onLost(nil)
	if at.RecordErr != nil {
		errorf(stderr, "%v", at.RecordErr)
		hintf(stderr, "exit status %d: a run whose record is not whole has no verdict to keep; free the space or restore the permissions of %s, then run again", exitLost, at.Dir)
		code = max(code, exitLost)
	}
	return at.Number, code
}

// writeJUnit writes the JUnit report of the given attempts, read back
// from their records, owner-only like them.
func writeJUnit(path, root, plan string, numbers []int) error {
	atts, err := records.LoadAll(root, plan, numbers)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := views.JUnit(&b, atts...); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes(), reportPerm)
}

// matrixTable is the table of the attempts a matrix ran, read back from
// their records.
func matrixTable(root, plan string, numbers []int) (string, error) {
	atts, err := records.LoadAll(root, plan, numbers)
	if err != nil {
		return "", err
	}
	return views.Attempts(records.Tables(atts, nil), views.Text)
}

// An ending is a signal that ends a run. The first one stops it cleanly:
// the current step ends, the steps marked always run, launched processes
// not kept are stopped, and the record is finished saying which signal
// came. A second one (of any of them) cuts the always steps short;
// launched processes are still stopped.
type ending struct {
	name string // "SIGHUP"
	why  string // what it usually means
	code int    // the exit status: 128 + the signal's number, as a shell reports a process a signal ended
}

func endings() map[os.Signal]ending {
	return map[os.Signal]ending{
		syscall.SIGINT:  {"SIGINT", "Ctrl-C", 128 + int(syscall.SIGINT)},
		syscall.SIGTERM: {"SIGTERM", "asked to terminate", 128 + int(syscall.SIGTERM)},
		syscall.SIGHUP:  {"SIGHUP", "the terminal closed or the ssh session dropped", 128 + int(syscall.SIGHUP)},
		syscall.SIGQUIT: {"SIGQUIT", `Ctrl-\`, 128 + int(syscall.SIGQUIT)},
		// The rest whose default is to end the process: left to Go, they
		// would end lockstep with its launches still running.
		syscall.SIGUSR1:   {"SIGUSR1", "a user signal", 128 + int(syscall.SIGUSR1)},
		syscall.SIGUSR2:   {"SIGUSR2", "a user signal", 128 + int(syscall.SIGUSR2)},
		syscall.SIGALRM:   {"SIGALRM", "a timer ran out", 128 + int(syscall.SIGALRM)},
		syscall.SIGVTALRM: {"SIGVTALRM", "a timer ran out", 128 + int(syscall.SIGVTALRM)},
		syscall.SIGXCPU:   {"SIGXCPU", "the CPU time limit was reached", 128 + int(syscall.SIGXCPU)},
		syscall.SIGXFSZ:   {"SIGXFSZ", "the file size limit was reached", 128 + int(syscall.SIGXFSZ)},
	}
}

// interruptedBy is the cause a run's context ends with: the record's and
// the interrupted step's reason.
type interruptedBy struct{ e ending }

func (i *interruptedBy) Error() string {
	return fmt.Sprintf("interrupted by %s (%s)", i.e.name, i.e.why)
}

// interrupts turns the signals that end a run into contexts: the first
// ends ctx with the signal as its cause, the second ends force.
// signalled says which came first (nil: none). SIGPIPE is taken too, so
// that a write to a closed stdout or stderr fails with EPIPE (output
// handles it) instead of killing lockstep before it stops what it
// launched; being caught, not ignored, it is back to its default in the
// processes lockstep starts.
func interrupts(stderr io.Writer) (ctx, force context.Context, signalled func() *ending, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	force, cancelForce := context.WithCancel(context.Background())
	ends := endings()
	sigs := make(chan os.Signal, 4)
	for s := range ends {
		signal.Notify(sigs, s)
	}
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	var mu sync.Mutex
	var first *ending
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-pipes:
			case s := <-sigs:
				n++
				if n == 1 {
					e := ends[s]
					mu.Lock()
					first = &e
					mu.Unlock()
					cancel(&interruptedBy{e})
					continue
				}
				errorf(stderr, "interrupted again (%s): skipping the remaining always steps; launched processes are still being stopped", ends[s].name)
				cancelForce()
			}
		}
	}()
	signalled = func() *ending {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	return ctx, force, signalled, func() {
		signal.Stop(sigs)
		signal.Stop(pipes)
		close(done)
		cancel(nil)
		cancelForce()
	}
}

// newView chooses how events are shown: JSON lines, a live view on a
// terminal, or plain lines; colour only on a terminal, never with
// NO_COLOR or TERM=dumb.
func newView(f runFlags, stdout io.Writer) (events.Observer, func()) {
	if f.json {
		return views.NewJSONLines(stdout), func() {}
	}
	file, isFile := fileOf(stdout)
	tty := isFile && term.IsTerminal(int(file.Fd()))
	color := tty && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	if tty && !f.plain && os.Getenv("TERM") != "dumb" {
		v := views.NewLive(stdout, color, func() int {
			w, _, err := term.GetSize(int(file.Fd()))
			if err != nil {
				return 80
			}
			return w
		})
		return v, v.Close
	}
	return views.NewLines(stdout, color), func() {}
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
