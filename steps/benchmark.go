package steps

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/loads"
	"lockstep/runner/events"
	"lockstep/schema"
	"lockstep/targets"
)

// BenchmarkConfig is a benchmark step: a load (its load block) or a
// command whose output its metric blocks read, run repeat times, its
// metrics recorded.
type BenchmarkConfig struct {
	Common
	Command string `hcl:"command" doc:"shell command whose output the metric blocks read"`
	commandAttrs
	Repeat Repeat `hcl:"repeat,const" doc:"run the load or command this many times; metrics then hold values, median, min, max, stddev"`
}

// MetricConfig is a benchmark's metric block: a number read from its
// command's output, self.metrics.NAME.
type MetricConfig struct {
	Regex string `hcl:"regex,const" doc:"regular expression whose first capture group is the number"`
	JSON  string `hcl:"json,const" doc:"path into stdout parsed as JSON, e.g. results.throughput or items[0].value"`
}

// MaxRepeat is how often a benchmark may repeat its action.
const MaxRepeat = 1000

func benchmarkKind() Kind {
	return Kind{
		Name: "benchmark", Doc: "runs a load (or a command) and records its metrics",
		Defaults: func() Config { return &BenchmarkConfig{Common: common(time.Hour, time.Second), Repeat: 1} },
		Blocks: []schema.Block{
			{Type: "load", Labels: []string{"KIND"}, Doc: "generates load itself: http or openai"},
			{
				Type: "metric", Labels: []string{"NAME"}, Many: true,
				Doc:   "a number read from the command's output: self.metrics.NAME",
				Attrs: schema.Attrs(MetricConfig{}),
			},
		},
		Self: []schema.Output{
			{Name: "metrics", Type: cty.DynamicPseudoType, Doc: "NAME -> number; with repeat, NAME -> {values, median, min, max, stddev}"},
			{Name: "levels", Type: cty.DynamicPseudoType, Doc: "a sweep's levels (concurrency or rate a list) or a goodput search's probes, in order: each {concurrency, rate, metrics, good}; metrics is then the last level's"},
			{Name: "best", Type: cty.DynamicPseudoType, Doc: "of levels, the one with the most of the load's throughput (http: requests_per_s, openai: output_tokens_per_s), or the highest rate a search found good; null when none"},
			{Name: "exit_code", Type: cty.Number, Doc: "the command's exit status (0 for a load)"},
			{Name: "stdout", Type: cty.String, Doc: "the command's standard output"},
		},
		Confirms:  []string{"the load or command completes (a command with status 0)"},
		Elsewhere: map[string]string{"repeat": "Only a benchmark repeats its action."},
		Explain:   Explain{Command: "Runs"},
	}
}

func (*BenchmarkConfig) Check() error { return nil }

// Repeat is how many times a benchmark runs its action: a whole number
// from 1 to MaxRepeat.
type Repeat int

func (*Repeat) CtyType() cty.Type { return cty.Number }
func (r *Repeat) Show() string    { return strconv.Itoa(int(*r)) }
func (r *Repeat) SetCty(v cty.Value) error {
	n, err := schema.WholeOf(v)
	if err != nil || n < 1 || n > MaxRepeat {
		return &schema.Invalid{Summary: "Invalid repeat", Err: fmt.Errorf("repeat must be a whole number from 1 to %d.", MaxRepeat), Whole: true}
	}
	*r = Repeat(n)
	return nil
}

// Static: a load or a command, not both; metric blocks read a command's
// output, env and workdir apply to a command.
func (*BenchmarkConfig) Static(s Shape) hcl.Diagnostics {
	var diags hcl.Diagnostics
	loads := s.Parts("load")
	_, command := s.Attrs["command"]
	switch {
	case !s.Has("load") && !s.Has("command"):
		diags = append(diags, problem("Missing load or command", `A benchmark needs a load "http" or load "openai" block, or command = "..." with metric blocks that read its output.`, s.Decl))
	case len(loads) > 0 && command:
		diags = append(diags, problem("Conflicting load and command", "A benchmark runs either a load block or a command, not both. Split them into two benchmark steps.", loads[0].Range))
	}
	metrics := s.Parts("metric")
	if len(loads) > 0 {
		for _, m := range metrics {
			diags = append(diags, problem("Metric with a load", fmt.Sprintf("metric %q reads a command's output, but this benchmark runs a load, which reports its own metrics (self.metrics.requests_per_s, ...). Remove the metric block, or run a command instead.", m.Label), m.Range))
		}
		for _, a := range []string{"env", "workdir"} {
			if e, ok := s.Attrs[a]; ok {
				diags = append(diags, problem("Environment without a command", "env and workdir apply to a benchmark's command; this benchmark runs a load. Remove them.", e.Range()))
				break
			}
		}
	}
	if command && len(loads) == 0 && len(metrics) == 0 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Benchmark records no metrics",
			Detail:   `This benchmark's command has no metric blocks, so self.metrics is empty. Add metric "NAME" { regex = "..." } to record a number from its output.`,
			Subject:  s.Decl.Ptr(),
		})
	}
	return diags
}

// ConfirmsFor says which of the two the benchmark does.
func (*BenchmarkConfig) ConfirmsFor(s Shape) []string {
	if len(s.Parts("load")) > 0 {
		return []string{"the load completes"}
	}
	return []string{"the command exits with status 0"}
}

func (*BenchmarkConfig) Once() bool { return true }

// Conditions: none of its own; a command that exits non-zero, or a load
// that fails, fails the step in its action.
func (*BenchmarkConfig) Conditions(Observed) []events.Condition { return nil }

// Act runs the load, or the command, repeat times, and keeps the
// metrics; the confirm loop then judges them (thresholds are
// postconditions).
func (c *BenchmarkConfig) Act(ctx context.Context, env Env) error {
	l, err := env.Load()
	if err != nil {
		return err
	}
	if l != nil {
		return c.runLoad(ctx, env, *l)
	}
	return c.runCommand(ctx, env)
}

// runLoad runs the load repeat times. With repeat = N each metric is the
// runs' summary, as a command benchmark's (keepRuns).
func (c *BenchmarkConfig) runLoad(ctx context.Context, env Env, l Load) error {
	env.Emit(events.Action{Command: fmt.Sprintf("load %q against %s", l.Kind, l.URL)})
	if loads.Swept(l.Config) {
		return c.runLevels(ctx, env, l.Config)
	}
	runs := int(c.Repeat)
	values := map[string][]float64{}
	for i := range runs {
		res, err := loadRun(ctx, env, l.Config)
		if ctx.Err() != nil {
			// Cut short: what the load measured until then is kept (the
			// runner marks it partial; the thresholds are not judged on
			// it). After some runs of a repeated load, theirs are kept.
			switch {
			case len(values) > 0:
				keepRuns(env, values, runs)
			case len(res.Metrics) > 0:
				keepLoad(env, res)
			}
			return ctx.Err()
		}
		if err != nil {
			if runs > 1 {
				err = fmt.Errorf("run %d of %d: %w", i+1, runs, err)
			}
			return fmt.Errorf("load: %w", err)
		}
		keepLoad(env, res)
		for k, v := range res.Metrics {
			values[k] = append(values[k], v)
		}
	}
	if runs > 1 {
		keepRuns(env, values, runs)
	}
	return nil
}

// runLevels runs a sweep's levels, or a goodput search's probes, one
// after another (loads.RunLevels), keeping each level's metrics; the
// step's metrics are the last level's, with the search's answer. Cut
// short, the levels that ended are kept and the one that was running as
// far as it got, marked partial.
func (c *BenchmarkConfig) runLevels(ctx context.Context, env Env, l loads.Config) error {
	if c.Repeat > 1 {
		return fmt.Errorf("repeat = %d with a sweep: a sweep runs each of its levels once; repeat a single level, or compare sweeps across attempts", c.Repeat)
	}
	lv, err := loads.RunLevels(ctx, l, env.Target().Dial, func(p loads.LevelProgress) {
		env.Progress(events.Progress{
			Elapsed: p.Elapsed, Done: p.Done, Errors: p.Errors, Rate: p.Rate,
			LastLine: fmt.Sprintf("level %d: %s", p.Index+1, p.Level),
		})
	}, nil)
	levels := make([]events.Level, len(lv.Levels))
	for i, lr := range lv.Levels {
		levels[i] = events.Level{Concurrency: lr.Level.Concurrency, Rate: lr.Level.Rate, Metrics: lr.Result.Metrics, Good: lr.Good}
		env.RecordLoad(lr.Result)
	}
	if err != nil && ctx.Err() != nil && len(levels) > 0 {
		levels[len(levels)-1].Partial = true
	}
	var best *int
	if lv.Best >= 0 && lv.Best < len(levels) {
		best = &lv.Best
	}
	env.SetLevels(levels, best)
	if len(levels) > 0 {
		// The last level's metrics, which the search's answer joins.
		metrics := maps.Clone(levels[len(levels)-1].Metrics)
		maps.Copy(metrics, lv.Metrics)
		env.SetMetrics(metrics, nil)
	}
	if lv.Notes != nil {
		env.RecordLoad(loads.Result{Notes: lv.Notes})
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// loadRun is one run of a load, its progress told as it goes.
func loadRun(ctx context.Context, env Env, l loads.Config) (loads.Result, error) {
	// The target's own connection is made before the load's clock starts:
	// made by the first requests, it would eat their timeout.
	if p, ok := env.Target().(targets.DialPreparer); ok {
		if err := p.PrepareDial(ctx); err != nil {
			return loads.Result{}, err
		}
	}
	return l.Run(ctx, env.Target().Dial, func(p loads.Progress) {
		env.Progress(events.Progress{Elapsed: p.Elapsed, Done: p.Done, Errors: p.Errors, Rate: p.Rate})
	})
}

// keepLoad keeps one load run's result: its metrics are the step's, and
// the record keeps what else it told.
func keepLoad(env Env, res loads.Result) {
	env.SetMetrics(res.Metrics, nil)
	env.RecordLoad(res)
}

// runCommand runs the command repeat times and reads the metrics from
// each run's output.
func (c *BenchmarkConfig) runCommand(ctx context.Context, env Env) error {
	shown, err := env.Shown("command")
	if err != nil {
		return err
	}
	cmd, specs := c.cmd(c.Command), env.MetricBlocks()
	runs := int(c.Repeat)
	values := map[string][]float64{}
	for i := range runs {
		res, err := runCommand(ctx, env, cmd, shown)
		if err != nil {
			if ctx.Err() != nil && len(values) > 0 {
				// Cut short after some runs: theirs are kept, partial.
				keepRuns(env, values, runs)
			}
			return err
		}
		if code := res.ExitCode; code != 0 {
			// Its output is the evidence (Env.Ran).
			return &Failure{Reason: fmt.Sprintf("run %d of %d exited with status %d", i+1, runs, code)}
		}
		m, err := loads.Extract(res.Stdout, specs)
		if err != nil {
			return &Failure{Reason: fmt.Sprintf("run %d of %d: %s", i+1, runs, err)}
		}
		for k, v := range m {
			values[k] = append(values[k], v)
		}
		frac := float64(i+1) / float64(runs)
		env.Progress(events.Progress{Fraction: &frac, Done: int64(i + 1)})
	}
	keepRuns(env, values, runs)
	return nil
}

// keepRuns keeps the metrics of the action's runs: each one's value, or
// after repeated runs their median and spread.
func keepRuns(env Env, values map[string][]float64, runs int) {
	metrics := map[string]float64{}
	var stats map[string]events.MetricStats
	for k, vs := range values {
		if runs > 1 {
			st := loads.Summarize(vs)
			if stats == nil {
				stats = map[string]events.MetricStats{}
			}
			stats[k] = events.MetricStats{Values: st.Values, Median: st.Median, Min: st.Min, Max: st.Max, Stddev: st.Stddev}
			// The record and the tables show the median.
			metrics[k] = st.Median
			continue
		}
		metrics[k] = vs[0]
	}
	env.SetMetrics(metrics, stats)
}
