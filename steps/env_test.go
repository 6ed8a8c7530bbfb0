//go:build unix

package steps_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/steps"
	"lockstep/targets"
)

// env is a run as an action sees it, on the local machine, keeping what
// the action asked of it: the kinds' actions are tested without the
// runner.
type env struct {
	t        targets.Target
	shown    map[string]string
	logDir   string
	metrics  []loads.MetricSpec
	actions  []events.Action
	progress []events.Progress
	self     map[string]cty.Value
	ran      []targets.Result
	watched  []steps.Launched
	followed []*probes.Follower
	kept     map[string]float64
	stats    map[string]events.MetricStats
	// onProgress, when set, is called after each progress is told.
	onProgress func()
}

var _ steps.Env = (*env)(nil)

func newEnv(t *testing.T) *env {
	return &env{t: targets.NewLocal(), shown: map[string]string{}, self: map[string]cty.Value{}, logDir: t.TempDir()}
}

func (e *env) Target() targets.Target                  { return e.t }
func (e *env) Name() string                            { return "server" }
func (e *env) Emit(a events.Action)                    { e.actions = append(e.actions, a) }
func (e *env) Shown(name string) (string, error)       { return e.shown[name], nil }
func (e *env) Redact(text string) string               { return strings.ReplaceAll(text, "hunter2", "(sensitive)") }
func (e *env) Sensitive(v cty.Value) cty.Value         { return v.Mark("sensitive") }
func (e *env) Ran(_ context.Context, r targets.Result) { e.ran = append(e.ran, r) }
func (e *env) LogDir() string                          { return e.logDir }
func (e *env) SinceFiles() []steps.File                { return nil }
func (e *env) Watch(l steps.Launched)                  { e.watched = append(e.watched, l) }
func (e *env) Adopt(context.Context) (bool, error)     { return false, nil }
func (e *env) Follow(f *probes.Follower)               { e.followed = append(e.followed, f) }
func (e *env) Load() (*steps.Load, error)              { return nil, nil }
func (e *env) MetricBlocks() []loads.MetricSpec        { return e.metrics }
func (e *env) RecordLoad(loads.Result)                 {}

func (e *env) Progress(p events.Progress) {
	e.progress = append(e.progress, p)
	if e.onProgress != nil {
		e.onProgress()
	}
}

func (e *env) SetSelf(self map[string]cty.Value) error {
	for k, v := range self {
		e.self[k] = v
	}
	return nil
}

func (e *env) SetMetrics(m map[string]float64, stats map[string]events.MetricStats) {
	e.kept, e.stats = m, stats
}

func (e *env) SetLevels(levels []events.Level, best *int) {}

func TestRunActsThroughItsEnv(t *testing.T) {
	e := newEnv(t)
	e.shown["command"] = "echo out; echo err >&2; exit 3 # as shown"
	cfg := decode[*steps.RunConfig](t, "run", map[string]cty.Value{"command": cty.StringVal("echo out; echo err >&2; exit 3")})
	// A command that exits non-zero is the confirm loop's to judge: the
	// action itself went as it should.
	if err := cfg.Act(context.Background(), e); err != nil {
		t.Fatalf("Act: %v", err)
	}
	if len(e.actions) != 2 || e.actions[0].Command != e.shown["command"] || e.actions[1].ExitCode == nil || *e.actions[1].ExitCode != 3 {
		t.Errorf("told %+v, want the command as shown, then exit 3", e.actions)
	}
	if got := e.self["exit_code"]; !got.RawEquals(cty.NumberIntVal(3)) {
		t.Errorf("self.exit_code = %#v", got)
	}
	if got := e.self["stdout"]; !got.RawEquals(cty.StringVal("out\n")) {
		t.Errorf("self.stdout = %#v", got)
	}
	if len(e.ran) != 1 || string(e.ran[0].Stderr) != "err\n" {
		t.Errorf("the runner was told of %d runs, want 1 with its stderr", len(e.ran))
	}
}

// counting is a command whose nth run prints "rps n*10", and fails on the
// run named by $FAIL.
const counting = `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; [ "$n" = "${FAIL:-0}" ] && exit 1; echo "rps $((n*10))"`

func benchmark(t *testing.T, repeat int, env map[string]string) *steps.BenchmarkConfig {
	vals := map[string]cty.Value{
		"command": cty.StringVal(counting),
		"repeat":  cty.NumberIntVal(int64(repeat)),
		"workdir": cty.StringVal(t.TempDir()),
	}
	if env != nil {
		m := map[string]cty.Value{}
		for k, v := range env {
			m[k] = cty.StringVal(v)
		}
		vals["env"] = cty.MapVal(m)
	}
	return decode[*steps.BenchmarkConfig](t, "benchmark", vals)
}

func TestBenchmarkKeepsTheMedianOfItsRuns(t *testing.T) {
	e := newEnv(t)
	e.metrics = []loads.MetricSpec{{Name: "rps", Regex: `rps (\d+)`}}
	if err := benchmark(t, 3, nil).Act(context.Background(), e); err != nil {
		t.Fatalf("Act: %v", err)
	}
	if e.kept["rps"] != 20 {
		t.Errorf("metrics %v, want rps = 20, the median", e.kept)
	}
	if st := e.stats["rps"]; !slices.Equal(st.Values, []float64{10, 20, 30}) || st.Min != 10 || st.Max != 30 {
		t.Errorf("stats %+v, want each run's value", st)
	}
	if len(e.progress) != 3 || *e.progress[2].Fraction != 1 {
		t.Errorf("progress %+v, want one per run, the last at 1", e.progress)
	}
}

func TestBenchmarkRunThatExitsNonZeroFailsTheStep(t *testing.T) {
	e := newEnv(t)
	e.metrics = []loads.MetricSpec{{Name: "rps", Regex: `rps (\d+)`}}
	err := benchmark(t, 3, map[string]string{"FAIL": "2"}).Act(context.Background(), e)
	var f *steps.Failure
	if !errors.As(err, &f) || f.Reason != "run 2 of 3 exited with status 1" {
		t.Fatalf("Act: %v, want a failure of run 2", err)
	}
	if e.kept != nil {
		t.Errorf("metrics %v kept from a benchmark that failed", e.kept)
	}
}

func TestBenchmarkCutShortKeepsTheRunsDone(t *testing.T) {
	e := newEnv(t)
	e.metrics = []loads.MetricSpec{{Name: "rps", Regex: `rps (\d+)`}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.onProgress = cancel // after the first run: the second is cut short
	err := benchmark(t, 3, nil).Act(ctx, e)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Act: %v, want it cut short", err)
	}
	if st := e.stats["rps"]; !slices.Equal(st.Values, []float64{10}) || e.kept["rps"] != 10 {
		t.Errorf("metrics %v, stats %+v, want the first run's", e.kept, e.stats)
	}
}

func TestLaunchStartsAFreshLogAndIsWatched(t *testing.T) {
	e := newEnv(t)
	e.shown["command"] = "echo ready; exec sleep 60"
	old := filepath.Join(e.logDir, "server.log")
	if err := os.WriteFile(old, []byte("an earlier run's log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := decode[*steps.LaunchConfig](t, "launch", map[string]cty.Value{"command": cty.StringVal(e.shown["command"])})
	if err := cfg.Act(context.Background(), e); err != nil {
		t.Fatalf("Act: %v", err)
	}
	if len(e.watched) != 1 {
		t.Fatalf("watched %d processes, want 1", len(e.watched))
	}
	proc := e.watched[0].Process
	t.Cleanup(func() {
		if err := e.t.Stop(context.Background(), proc, time.Second); err != nil {
			t.Errorf("stopping the launch: %v", err)
		}
	})
	if len(e.followed) != 1 {
		t.Errorf("followed %d logs, want the launch's own", len(e.followed))
	}
	if proc.Log != old || !e.self["log_path"].RawEquals(cty.StringVal(old)) {
		t.Errorf("log %q, self.log_path %#v, want the default %s", proc.Log, e.self["log_path"], old)
	}
	if !e.self["pid"].RawEquals(cty.NumberIntVal(int64(proc.PID))) || !e.self["alive"].True() {
		t.Errorf("self %v, want the process's pid, alive", e.self)
	}
	a := e.actions[len(e.actions)-1]
	if a.PID != proc.PID || a.MovedLog == "" {
		t.Fatalf("told %+v, want the pid and where the old log went", a)
	}
	if b, err := os.ReadFile(a.MovedLog); err != nil || string(b) != "an earlier run's log\n" {
		t.Errorf("the old log moved aside holds %q (%v)", b, err)
	}
}

// decode is a kind's config decoded from vals, as validate and the run
// decode it.
func decode[C steps.Config](t *testing.T, kind string, vals map[string]cty.Value) C {
	t.Helper()
	k, ok := steps.Lookup(kind)
	if !ok {
		t.Fatalf("no kind %s", kind)
	}
	cfg, err := k.Decode(vals)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return cfg.(C)
}
