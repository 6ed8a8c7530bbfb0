package steps

import (
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"lockstep/runner/events"
	"lockstep/schema"
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
			if rng, ok := s.Attrs[a]; ok {
				diags = append(diags, problem("Environment without a command", "env and workdir apply to a benchmark's command; this benchmark runs a load. Remove them.", rng))
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

func (*BenchmarkConfig) Act(a Actor) bool { return a.Benchmark() }
