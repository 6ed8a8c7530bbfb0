package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/steps"
	"lockstep/targets"
)

// act does the step's action, as its kind does it (steps.Config.Act), in
// the step's env. done is true when the step ended in it; how it ended
// is the action's error, as steps.Env says.
func (s *stepRun) act(ctx, outer context.Context) (events.Outcome, bool) {
	if out, done, handled := s.reconfirm(ctx, outer); handled {
		return out, done
	}
	if out, done := s.answeredBefore(ctx); done {
		return out, true
	}
	err := s.cfg.Act(ctx, &stepEnv{s})
	var failure *steps.Failure
	switch {
	case err == nil:
		return events.Outcome{}, false
	case ctx.Err() != nil:
		out := s.ended(ctx, outer)
		// What the action measured until then is kept; the thresholds
		// are not judged on it.
		out.Partial = len(s.metrics) > 0
		return out, true
	case errors.As(err, &failure):
		return events.Outcome{Status: events.Failed, Reason: s.inputs.text(failure.Reason), Evidence: s.evidence(nil)}, true
	}
	return s.errored(err), true
}

// stepEnv is the run as a step's action sees it (steps.Env).
type stepEnv struct{ s *stepRun }

var _ steps.Env = (*stepEnv)(nil)

func (e *stepEnv) Target() targets.Target { return e.s.t }

func (e *stepEnv) Name() string { return e.s.st.Name }

func (e *stepEnv) Emit(a events.Action) {
	if l := e.s.own; l != nil && a.PID != 0 && a.Process == nil {
		a.Process = l.held() // what a later attempt adopts it by
	}
	e.s.r.emit(events.Event{Type: events.StepAction, Step: &e.s.ev, Action: &a})
}

func (e *stepEnv) Progress(p events.Progress) {
	e.s.r.emit(events.Event{Type: events.Progressed, Step: &e.s.ev, Progress: &p})
}

// Shown evaluates the attribute again only to show it: the action uses
// it as its kind decoded it.
func (e *stepEnv) Shown(name string) (string, error) {
	_, shown, err := e.s.evalString(e.s.st.Attrs[name], e.s.evalContext(e.s.r.o.Scope))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return shown, nil
}

func (e *stepEnv) Redact(text string) string { return e.s.inputs.text(text) }

func (e *stepEnv) Sensitive(v cty.Value) cty.Value { return v.Mark(plans.Sensitive) }

// SetSelf: what comes back from the world keeps to the plan's limits,
// as a probe's value does (observe).
func (e *stepEnv) SetSelf(self map[string]cty.Value) error {
	if err := plans.CheckValue(cty.ObjectVal(self)); err != nil {
		return err
	}
	for k, v := range self {
		e.s.self[k] = v
	}
	return nil
}

func (e *stepEnv) Ran(ctx context.Context, res targets.Result) {
	e.s.cmdOut = &res
	e.s.leftBy(ctx, res)
}

func (e *stepEnv) LogDir() string {
	if e.s.st.Target == "local" && e.s.r.o.LogDir != "" {
		return e.s.r.o.LogDir
	}
	return filepath.Join("/tmp/lockstep", e.s.r.o.Plan.Name)
}

// SinceFiles: a path that cannot be evaluated yet, or a target that
// cannot be opened, is left out.
func (e *stepEnv) SinceFiles() []steps.File {
	var files []steps.File
	for _, sp := range e.s.r.sinceProbes()[e.s.st.Addr()] {
		expr := sp.probe.Attrs["path"]
		ectx := e.s.r.o.Scope.EvalContext(map[string]cty.Value{"step": e.s.r.stepRoot(sp.probe.AttrRefs["path"].Steps())})
		path, _, err := evalText(expr, ectx)
		if err != nil || path == "" {
			continue
		}
		t, err := e.s.r.target(sp.step.Target)
		if err != nil {
			continue
		}
		files = append(files, steps.File{Target: t, Path: path})
	}
	return files
}

// sinceProbe is a log probe with path that reads since a launch.
type sinceProbe struct {
	step  *plans.Step
	probe *plans.Probe
}

// sinceProbes are the plan's log probes with path and since, by the
// launch they read since: found once per run, not once per launch.
func (r *run) sinceProbes() map[string][]sinceProbe {
	if r.since == nil {
		r.since = map[string][]sinceProbe{}
		for _, st := range r.o.Plan.Steps {
			for _, pb := range st.Probes {
				if _, ok := pb.Attrs["path"]; ok && pb.Kind == "log" && pb.Since != "" {
					r.since[pb.Since] = append(r.since[pb.Since], sinceProbe{st, pb})
				}
			}
		}
	}
	return r.since
}

func (e *stepEnv) Watch(l steps.Launched) {
	s := e.s
	s.own = &launched{addr: s.ev.Addr, step: s.ev, target: s.t, proc: l.Process, keep: s.st.Keep || s.r.o.Keep, pidfile: l.Pidfile, shownLog: l.ShownLog, marks: l.Marks}
	s.r.addLaunch(s.own)
	s.self["adopted_from"] = cty.Zero
}

// Adopt: adopt.go (keptHolds).
func (e *stepEnv) Adopt(ctx context.Context) (bool, error) {
	shown, err := e.Shown("command")
	if err != nil {
		return false, err
	}
	return e.s.keptHolds(ctx, shown)
}

func (e *stepEnv) Follow(f *probes.Follower) {
	e.s.ownLog = f
	e.s.followers = append(e.s.followers, f)
}

// Load evaluates the load block's attributes as the action uses them,
// teaching the step's redactor the sensitive ones (a token in the URL, an
// Authorization header), and decodes them with the decoder validate ran,
// on the kind's defaults: what validated runs.
func (e *stepEnv) Load() (*steps.Load, error) {
	s := e.s
	if s.st.Load == nil {
		return nil, nil
	}
	ectx := s.evalContext(s.r.o.Scope)
	attrs := map[string]cty.Value{}
	url := ""
	// shown is how a sensitive attribute shows (plans.Show): what the
	// record keeps of it.
	shown := map[string]string{}
	for name, expr := range s.st.Load.Attrs {
		v, diags := expr.Value(ectx)
		if diags.HasErrors() {
			return nil, fmt.Errorf("load: %s: %s", name, diagText(diags))
		}
		s.noteInput(s.inputs, expr, ectx, v)
		sh, shDiags := plans.Show(expr, ectx)
		if shDiags.HasErrors() {
			sh.Text = redacted
		}
		if name == "url" {
			url = sh.Text
		}
		if plans.IsSensitive(v) {
			shown[name] = sh.Text
		}
		attrs[name], _ = v.UnmarkDeep()
	}
	kind := loads.KindNamed(s.st.Load.Kind)
	if kind == nil {
		return nil, fmt.Errorf("no load kind %q", s.st.Load.Kind)
	}
	l := kind.Defaults()
	if err := schema.DecodeChecked(attrs, l); err != nil {
		return nil, fmt.Errorf("load %q: %s", s.st.Load.Kind, s.inputs.text(joinLine(err)))
	}
	s.load = recordedConfig(l.Resolved(), shown, s.inputs)
	return &steps.Load{Kind: s.st.Load.Kind, URL: url, Config: l}, nil
}

func (e *stepEnv) MetricBlocks() []loads.MetricSpec {
	specs := make([]loads.MetricSpec, len(e.s.st.Metrics))
	for i, m := range e.s.st.Metrics {
		specs[i] = loads.MetricSpec{Name: m.Name, Regex: m.Regex, JSON: m.JSON}
	}
	return specs
}

func (e *stepEnv) SetMetrics(metrics map[string]float64, stats map[string]events.MetricStats) {
	e.s.metrics, e.s.stats = metrics, stats
}

func (e *stepEnv) SetLevels(levels []events.Level, best *int) {
	e.s.levels, e.s.best = levels, best
}

// RecordLoad: a note, a request's error and a sample answer may quote
// an input; a sample is guarded before it is cut, so no part of a secret
// is left to show.
func (e *stepEnv) RecordLoad(res loads.Result) {
	s := e.s
	for k, v := range res.Notes {
		if s.notes == nil {
			s.notes = map[string]string{}
		}
		s.notes[k] = s.inputs.text(v)
	}
	for _, rq := range res.Requests {
		s.requests = append(s.requests, events.Request{
			Level: rq.Level, StartMS: ms(rq.Start), Status: rq.Status, Error: s.inputs.text(rq.Error), TTFTMS: ms(rq.TTFT), E2EMS: ms(rq.E2E),
			InputTokens: rq.InputTokens, OutputTokens: rq.OutputTokens,
		})
	}
	for i, sample := range res.Samples {
		if s.notes == nil {
			s.notes = map[string]string{}
		}
		s.notes[fmt.Sprintf("sample_%d", i+1)] = cut(s.r.guard.text(sample), 500)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
