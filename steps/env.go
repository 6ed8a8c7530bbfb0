package steps

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/targets"
)

// Env is the run a kind's action takes place in (Config.Act): what only
// the runner has, one method to a thing. The runner implements it, one
// for each step; the action is the kind's, here, and the turn loop, the
// watch, the record and the cleanup are the runner's.
//
// How an action ends is its error: nil goes on to the confirm loop; an
// action whose context ended was cut short (interrupted, timed out, a
// watched process died), whatever it returns, and metrics it kept are
// then partial; a *Failure fails the step; any other error is the step's
// error. The runner redacts what an error says.
type Env interface {
	// Target is where the step runs.
	Target() targets.Target
	// Name is the step's name: NAME in launch.NAME.
	Name() string
	// Emit tells of the action: the command as it starts, how it ended,
	// the process launched.
	Emit(events.Action)
	// Progress tells how far the action has come.
	Progress(events.Progress)
	// Shown is the step's attribute name (command, log) as shown:
	// sensitive parts hidden, as the plan's marks say. Redact learns the
	// real text. An attribute the step does not set is "".
	Shown(name string) (string, error)
	// Redact shows text that may hold one of the step's sensitive inputs,
	// or a sensitive value, as shown.
	Redact(text string) string
	// Sensitive is v marked as the plan marks a sensitive value: shown
	// as (sensitive), read as it is.
	Sensitive(v cty.Value) cty.Value
	// SetSelf sets self.NAME for each name in self; it is an error when
	// a value is beyond the plan's limits (a command's output of
	// gigabytes).
	SetSelf(self map[string]cty.Value) error
	// Ran takes note of a command the action ran, however it ended:
	// what it wrote is the step's evidence should the step fail, and
	// what it left running is the run's to stop at its end (unless kept),
	// told as a warning.
	Ran(ctx context.Context, res targets.Result)
	// LogDir is where a launch's log goes when its plan names none:
	// beside the attempt's record on the local target, under /tmp on a
	// remote one.
	LogDir() string
	// SinceFiles are the files that later log probes read since this
	// step (since = step.launch.NAME), on their targets: those whose
	// path and target are known now.
	SinceFiles() []File
	// Watch makes l the step's launch: watched while the run lasts (its
	// death fails the step it happens in), judged by the step's own
	// conditions (self.alive), stopped at the run's end unless kept.
	Watch(l Launched)
	// Adopt is asked by a launch before it starts its process: true when
	// the runner adopted instead the process an earlier attempt of the
	// plan launched and left running, holding a port the plan names
	// (adopt = true): it is then the step's launch, watched and followed,
	// its self set. Otherwise it tells of such a process before a second
	// one starts beside it.
	Adopt(ctx context.Context) (adopted bool, err error)
	// Follow reads f as the step's own log: self.log is what it gained,
	// and the confirm loop wakes when it grows.
	Follow(f *probes.Follower)
	// Load is the step's load block, evaluated and decoded as validate
	// decoded it, its config in the record; nil when it has none.
	Load() (*Load, error)
	// MetricBlocks are the step's metric blocks: what its command's
	// output is read for.
	MetricBlocks() []loads.MetricSpec
	// SetMetrics sets the step's metrics, self.metrics and the record's:
	// stats are each metric's spread over a repeated action's runs (nil
	// when it ran once; metrics then hold the medians).
	SetMetrics(metrics map[string]float64, stats map[string]events.MetricStats)
	// SetLevels sets a sweep's levels (or a goodput search's probes), in
	// the order they ran, and the index of the best (nil: none is):
	// self.levels and self.best, and the record's.
	SetLevels(levels []events.Level, best *int)
	// RecordLoad keeps in the step's record what a load run tells beyond
	// its metrics: notes, sample answers and each measured request,
	// redacted.
	RecordLoad(res loads.Result)
}

// Failure is an action's end that fails the step: what it did went
// wrong (a benchmark's command exited non-zero), where an error says it
// could not be done.
type Failure struct {
	Reason string
}

func (f *Failure) Error() string { return f.Reason }

// File is a file on a target.
type File struct {
	Target targets.Target
	Path   string
}

// Launched is a process a launch started, as the runner watches it.
type Launched struct {
	Process targets.Process
	// Pidfile is where its daemon writes its pid: the launch follows the
	// process it names. "" follows the topmost process left running.
	Pidfile string
	// ShownLog is the log's path as shown, when a sensitive value is part
	// of it; "" shows Process.Log.
	ShownLog string
	// Marks are the files later log probes read since this launch, as
	// they were before it started (probes.Mark keys).
	Marks map[string]targets.FileInfo
}

// Load is a benchmark's load block as its action runs it.
type Load struct {
	Kind   string // "http", "openai"
	URL    string // where it sends, as shown
	Config loads.Config
}
