package records

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"lockstep/runner/events"
)

// Report is what `lockstep report` shows of a plan's attempts, as data:
// the table of attempts, each chosen metric across them, the latency
// distributions each benchmark measured, and where each attempt's time
// went. Views render it (HTML with charts, Markdown without).
type Report struct {
	Plan      string
	Table     Table
	Metrics   []MetricSeries
	Latencies []Latency
	Sweeps    []Sweep
	Timelines []Timeline
}

// Sweep is one latency against one throughput across the levels of a
// benchmark step that swept (or searched), one curve per attempt that
// ran it: TTFT p99 and ITL p99 against output tokens/s for an openai
// load, latency p99 against requests/s for an http one.
type Sweep struct {
	Step   string // "benchmark.sweep"
	X, Y   string // metric names: "output_tokens_per_s", "ttft_p99_ms"
	Curves []Curve
}

// Curve is one attempt's levels of a sweep, in increasing level (a
// search's probes come out of order).
type Curve struct {
	Attempt int
	Points  []SweepPoint
	Partial bool
}

// SweepPoint is one level: what it ran at and the two metrics.
type SweepPoint struct {
	Level string // "c=8", "12.5/s"
	X, Y  float64
	Good  *bool // a goodput search's verdict on the level
}

// sweepAxes are the curves a sweep is drawn as, by the throughput its
// levels report: the first whose metrics a level has.
var sweepAxes = []struct {
	x  string
	ys []string
}{
	{"output_tokens_per_s", []string{"ttft_p99_ms", "itl_p99_ms"}},
	{"requests_per_s", []string{"latency_p99_ms"}},
}

// MetricSeries is one metric's value in each attempt that measured it.
type MetricSeries struct {
	Label  string
	Points []MetricPoint
}

// MetricPoint is a metric's value in one attempt.
type MetricPoint struct {
	Attempt int
	Value   float64
	Partial bool // measured by a step cut short: never a result to judge by
}

// Latency is one latency distribution a benchmark step measured in one
// attempt: the percentiles of one kind of latency (latency, ttft, tpot,
// itl), in milliseconds, in increasing order.
type Latency struct {
	Attempt   int
	Step      string // "benchmark.chat"
	Of        string // "ttft"
	Quantiles []Quantile
	Partial   bool
}

// Quantile is one percentile of a distribution.
type Quantile struct {
	Name string // "p50", "max"
	MS   float64
}

// Timeline is one attempt's steps in the order they ran.
type Timeline struct {
	Attempt int
	Status  string
	Spans   []Span
}

// Span is one step of an attempt: its start and end in seconds from the
// attempt's start, and how it ended ("not run" steps have none).
type Span struct {
	Step       string
	Start, End float64
	Status     string
}

// quantiles are the percentiles a load reports, by their metric suffix.
var quantiles = []string{"p50", "p90", "p99", "p999", "max"}

// BuildReport gathers a report of atts, attempts of one plan in the order
// given. metrics chooses the metric labels to follow across attempts; nil
// takes the key metrics (KeyMetrics).
func BuildReport(atts []*Attempt, metrics []string) Report {
	r := Report{}
	if len(atts) == 0 {
		return r
	}
	r.Plan = atts[0].Plan
	tables := Tables(atts, metrics)
	if len(tables) > 0 {
		r.Table = tables[0]
	}
	metrics = r.Table.KeyMetrics
	all := MetricsOf(atts)
	for _, label := range metrics {
		i := slices.IndexFunc(all, func(m Metric) bool { return m.Label == label })
		if i < 0 {
			continue
		}
		s := MetricSeries{Label: label}
		for _, a := range atts {
			if v, ok := all[i].Value(a); ok {
				s.Points = append(s.Points, MetricPoint{Attempt: a.Number, Value: v, Partial: all[i].Partial(a)})
			}
		}
		r.Metrics = append(r.Metrics, s)
	}
	for _, a := range atts {
		t := Timeline{Attempt: a.Number, Status: a.State()}
		for _, s := range a.Steps {
			if s.Outcome != nil && s.Kind == "benchmark" {
				r.Latencies = append(r.Latencies, latencies(a.Number, s)...)
			}
			if s.Started.IsZero() || a.Started.IsZero() {
				continue
			}
			end := s.Finished
			if end.IsZero() {
				end = a.lastTime()
			}
			t.Spans = append(t.Spans, Span{
				Step:   s.Addr,
				Start:  s.Started.Sub(a.Started).Seconds(),
				End:    max(end.Sub(a.Started).Seconds(), s.Started.Sub(a.Started).Seconds()),
				Status: s.State(a),
			})
		}
		r.Timelines = append(r.Timelines, t)
	}
	r.Sweeps = sweeps(atts)
	return r
}

// sweeps gathers the curves of every step that ran levels, in plan
// order, one Sweep per step and latency.
func sweeps(atts []*Attempt) []Sweep {
	var out []Sweep
	at := map[string]int{} // step and y -> index in out
	for _, a := range atts {
		for _, s := range a.Steps {
			if s.Outcome == nil || len(s.Outcome.Levels) == 0 {
				continue
			}
			lv := s.Outcome.Levels
			for _, ax := range sweepAxes {
				if _, ok := lv[0].Metrics[ax.x]; !ok {
					continue
				}
				for _, y := range ax.ys {
					c := Curve{Attempt: a.Number, Partial: s.Outcome.Partial}
					// In the order of their level: a search probes out of order.
					lv := slices.Clone(lv)
					slices.SortStableFunc(lv, func(a, b events.Level) int {
						return cmp.Or(cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.Concurrency, b.Concurrency))
					})
					for _, l := range lv {
						yv, ok := l.Metrics[y]
						if !ok {
							continue
						}
						c.Points = append(c.Points, SweepPoint{Level: levelLabel(l), X: l.Metrics[ax.x], Y: yv, Good: l.Good})
					}
					key := s.Addr + " " + y
					i, ok := at[key]
					if !ok {
						i = len(out)
						at[key] = i
						out = append(out, Sweep{Step: s.Addr, X: ax.x, Y: y})
					}
					out[i].Curves = append(out[i].Curves, c)
				}
				break
			}
		}
	}
	return out
}

// LevelColumns are the metrics a table of levels shows: the throughput
// and latencies a sweep is drawn with, and errors.
func LevelColumns(levels []events.Level) []string {
	if len(levels) == 0 {
		return nil
	}
	for _, ax := range sweepAxes {
		if _, ok := levels[0].Metrics[ax.x]; ok {
			return append(append([]string{ax.x}, ax.ys...), "errors")
		}
	}
	return []string{"errors"}
}

// LevelLabel names a level as a chart labels its point: c=8, or 12.5/s.
func LevelLabel(l events.Level) string { return levelLabel(l) }

// levelLabel names a level as a chart labels its point: c=8, or 12.5/s.
func levelLabel(l events.Level) string {
	if l.Rate > 0 {
		return strconv.FormatFloat(l.Rate, 'g', 4, 64) + "/s"
	}
	return "c=" + strconv.Itoa(l.Concurrency)
}

// latencies finds the distributions among a benchmark step's metrics:
// every PREFIX_p50_ms (the http load's) or PREFIX_median_ms (the openai
// load's, bench_serving's names) with its siblings.
func latencies(attempt int, s *Step) []Latency {
	var out []Latency
	for name := range s.Outcome.Metrics {
		of, ok := strings.CutSuffix(name, "_p50_ms")
		median := false
		if !ok {
			if of, ok = strings.CutSuffix(name, "_median_ms"); !ok {
				continue
			}
			median = true
		}
		l := Latency{Attempt: attempt, Step: s.Addr, Of: of, Partial: s.Outcome.Partial}
		for _, q := range quantiles {
			suffix := q
			if q == "p50" && median {
				suffix = "median"
			}
			if v, ok := s.Outcome.Metrics[of+"_"+suffix+"_ms"]; ok {
				l.Quantiles = append(l.Quantiles, Quantile{Name: q, MS: v})
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Latency) int { return strings.Compare(a.Of, b.Of) })
	return out
}
