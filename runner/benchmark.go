package runner

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/plans"
	"lockstep/probes"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/steps"
)

// benchmark runs the step's load or command and keeps its metrics; the
// confirm loop then judges them (thresholds are postconditions).
func (s *stepRun) benchmark(ctx, outer context.Context) (events.Outcome, bool) {
	if s.st.Load != nil {
		return s.runLoad(ctx, outer)
	}
	return s.runCommandBenchmark(ctx, outer)
}

func (s *stepRun) runLoad(ctx, outer context.Context) (events.Outcome, bool) {
	ectx := s.evalContext(s.r.o.Scope)
	attrs := map[string]cty.Value{}
	url := ""
	// shown is how a sensitive attribute shows (plans.Show): what the
	// record keeps of it.
	shown := map[string]string{}
	for name, expr := range s.st.Load.Attrs {
		v, diags := expr.Value(ectx)
		if diags.HasErrors() {
			return s.errored(fmt.Errorf("load: %s: %s", name, diagText(diags))), true
		}
		// A load's errors (and each request's) show its sensitive inputs
		// (a token in the URL, an Authorization header) as shown.
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
		return s.errored(fmt.Errorf("no load kind %q", s.st.Load.Kind)), true
	}
	// The decoder validate ran, on the kind's defaults: what validated runs.
	l := kind.Defaults()
	if err := schema.DecodeChecked(attrs, l); err != nil {
		return s.errored(fmt.Errorf("load %q: %s", s.st.Load.Kind, s.inputs.text(joinLine(err)))), true
	}
	s.load = recordedConfig(l.Resolved(), shown, s.inputs)
	s.r.emit(events.Event{Type: events.StepAction, Step: &s.ev, Action: &events.Action{Command: fmt.Sprintf("load %q against %s", s.st.Load.Kind, url)}})
	if loads.Swept(l) {
		return s.runLevels(ctx, outer, l)
	}
	// With repeat = N the load runs N times and each metric is the runs'
	// summary, as a command benchmark's (keepRuns).
	runs := s.repeat()
	values := map[string][]float64{}
	for i := range runs {
		res, err := l.Run(ctx, s.t.Dial, func(p loads.Progress) {
			s.r.emit(events.Event{Type: events.Progressed, Step: &s.ev, Progress: &events.Progress{Elapsed: p.Elapsed, Done: p.Done, Errors: p.Errors, Rate: p.Rate}})
		})
		if ctx.Err() != nil {
			// Cut short: what the load measured until then is kept, marked
			// partial; the thresholds are not judged on it. After some
			// runs of a repeated load, theirs are kept.
			out := s.ended(ctx, outer)
			switch {
			case len(values) > 0:
				s.keepRuns(values)
				out.Partial = true
			case len(res.Metrics) > 0:
				s.keepLoad(res)
				out.Partial = true
			}
			return out, true
		}
		if err != nil {
			if runs > 1 {
				err = fmt.Errorf("run %d of %d: %w", i+1, runs, err)
			}
			return s.errored(fmt.Errorf("load: %w", err)), true
		}
		s.keepLoad(res)
		for k, v := range res.Metrics {
			values[k] = append(values[k], v)
		}
	}
	if runs > 1 {
		s.keepRuns(values)
	}
	return events.Outcome{}, false
}

// runLevels runs a sweep's levels, or a goodput search's probes, one
// after another (loads.RunLevels), keeping each level's metrics; the
// step's metrics are the last level's, with the search's answer.
func (s *stepRun) runLevels(ctx, outer context.Context, l loads.Config) (events.Outcome, bool) {
	if runs := s.repeat(); runs > 1 {
		return s.errored(fmt.Errorf("repeat = %d with a sweep: a sweep runs each of its levels once; repeat a single level, or compare sweeps across attempts", runs)), true
	}
	var levels []events.Level
	lv, err := loads.RunLevels(ctx, l, s.t.Dial, func(p loads.LevelProgress) {
		s.r.emit(events.Event{Type: events.Progressed, Step: &s.ev, Progress: &events.Progress{
			Elapsed: p.Elapsed, Done: p.Done, Errors: p.Errors, Rate: p.Rate,
			LastLine: fmt.Sprintf("level %d: %s", p.Index+1, p.Level),
		}})
	}, nil)
	for i, lr := range lv.Levels {
		levels = append(levels, events.Level{Concurrency: lr.Level.Concurrency, Rate: lr.Level.Rate, Metrics: lr.Result.Metrics, Good: lr.Good})
		from := len(s.requests)
		s.keepLoad(lr.Result)
		for j := from; j < len(s.requests); j++ {
			s.requests[j].Level = i
		}
	}
	s.levels = levels
	s.metrics = maps.Clone(s.metrics) // the last level's, which the search's answer joins
	if lv.Best >= 0 && lv.Best < len(levels) {
		s.best = &lv.Best
	}
	for k, v := range lv.Metrics {
		if s.metrics == nil {
			s.metrics = map[string]float64{}
		}
		s.metrics[k] = v
	}
	for k, v := range lv.Notes {
		if s.notes == nil {
			s.notes = map[string]string{}
		}
		s.notes[k] = v
	}
	if ctx.Err() != nil {
		// Cut short: the levels that ended are kept, and the one that
		// was running as far as it got, all marked partial.
		out := s.ended(ctx, outer)
		if len(levels) > 0 {
			if len(lv.Levels) > 0 && err != nil {
				s.levels[len(s.levels)-1].Partial = true
			}
			out.Partial = true
		}
		return out, true
	}
	if err != nil {
		return s.errored(fmt.Errorf("load: %w", err)), true
	}
	return events.Outcome{}, false
}

// levelsValue is self.levels: each level as {concurrency, rate, metrics,
// good}, a tuple, since levels may report different metrics (a
// percentile absent where nothing succeeded).
func levelsValue(levels []events.Level) cty.Value {
	vals := make([]cty.Value, len(levels))
	for i, l := range levels {
		vals[i] = levelValue(l)
	}
	return cty.TupleVal(vals)
}

func levelValue(l events.Level) cty.Value {
	good := cty.NullVal(cty.Bool)
	if l.Good != nil {
		good = cty.BoolVal(*l.Good)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"concurrency": cty.NumberIntVal(int64(l.Concurrency)),
		"rate":        cty.NumberFloatVal(l.Rate),
		"metrics":     metricsValue(l.Metrics, nil),
		"good":        good,
	})
}

// keepLoad keeps a load's result as the step's metrics, notes and
// requests (a repeated load's, each run's notes and requests).
func (s *stepRun) keepLoad(res loads.Result) {
	s.metrics = res.Metrics
	for k, v := range res.Notes {
		if s.notes == nil {
			s.notes = map[string]string{}
		}
		s.notes[k] = s.inputs.text(v)
	}
	for _, rq := range res.Requests {
		s.requests = append(s.requests, events.Request{
			StartMS: ms(rq.Start), Status: rq.Status, Error: s.inputs.text(rq.Error), TTFTMS: ms(rq.TTFT), E2EMS: ms(rq.E2E),
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

// runCommandBenchmark runs the command (repeat times) and extracts its
// metrics from each run's output.
func (s *stepRun) runCommandBenchmark(ctx, outer context.Context) (events.Outcome, bool) {
	cmd, shown, err := s.command()
	if err != nil {
		return s.errored(err), true
	}
	specs := make([]loads.MetricSpec, len(s.st.Metrics))
	for i, m := range s.st.Metrics {
		specs[i] = loads.MetricSpec{Name: m.Name, Regex: m.Regex, JSON: m.JSON}
	}
	runs := s.repeat()
	values := map[string][]float64{}
	for i := range runs {
		res, out, done := s.runCommand(ctx, outer, cmd, shown)
		if done {
			if ctx.Err() != nil && len(values) > 0 {
				// Cut short after some runs: theirs are kept, partial.
				s.keepRuns(values)
				out.Partial = true
			}
			return out, true
		}
		if code := res.ExitCode; code != 0 {
			// Its output is the evidence (outputEvidence).
			return events.Outcome{Status: events.Failed, Reason: fmt.Sprintf("run %d of %d exited with status %d", i+1, runs, code)}, true
		}
		m, err := loads.Extract(res.Stdout, specs)
		if err != nil {
			return events.Outcome{Status: events.Failed, Reason: fmt.Sprintf("run %d of %d: %s", i+1, runs, s.r.guard.text(err.Error()))}, true
		}
		for k, v := range m {
			values[k] = append(values[k], v)
		}
		frac := float64(i+1) / float64(runs)
		s.r.emit(events.Event{Type: events.Progressed, Step: &s.ev, Progress: &events.Progress{Fraction: &frac, Done: int64(i + 1)}})
	}
	s.keepRuns(values)
	return events.Outcome{}, false
}

// keepRuns keeps the metrics of a command's runs: each one's value, or
// with repeat their median and spread.
func (s *stepRun) keepRuns(values map[string][]float64) {
	s.metrics = map[string]float64{}
	for k, vs := range values {
		if s.repeat() > 1 {
			st := loads.Summarize(vs)
			if s.stats == nil {
				s.stats = map[string]events.MetricStats{}
			}
			s.stats[k] = events.MetricStats{Values: st.Values, Median: st.Median, Min: st.Min, Max: st.Max, Stddev: st.Stddev}
			// The record and the tables show the median.
			s.metrics[k] = st.Median
			continue
		}
		s.metrics[k] = vs[0]
	}
}

// repeat is how often the benchmark runs its command.
func (s *stepRun) repeat() int {
	if b, ok := s.cfg.(*steps.BenchmarkConfig); ok {
		return int(b.Repeat)
	}
	return 1
}

// lastLines is the last n lines of a command's output as a terminal
// shows them (a progress bar as last drawn).
func lastLines(s string, n int) []string { return probes.TailOf(s, n) }

// metricsValue is self.metrics: NAME -> number, or for a repeated
// command NAME -> {values, median, min, max, stddev}.
func metricsValue(m map[string]float64, stats map[string]events.MetricStats) cty.Value {
	out := map[string]cty.Value{}
	for k, v := range m {
		out[k] = cty.NumberFloatVal(v)
	}
	for k, st := range stats {
		vals := make([]cty.Value, len(st.Values))
		for i, v := range st.Values {
			vals[i] = cty.NumberFloatVal(v)
		}
		list := cty.ListValEmpty(cty.Number)
		if len(vals) > 0 {
			list = cty.ListVal(vals)
		}
		out[k] = cty.ObjectVal(map[string]cty.Value{
			"values": list,
			"median": cty.NumberFloatVal(st.Median),
			"min":    cty.NumberFloatVal(st.Min),
			"max":    cty.NumberFloatVal(st.Max),
			"stddev": cty.NumberFloatVal(st.Stddev),
		})
	}
	return cty.ObjectVal(out)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
