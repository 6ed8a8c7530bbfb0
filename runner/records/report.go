package records

import (
	"slices"
	"strings"
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
	Timelines []Timeline
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
	return r
}

// latencies finds the distributions among a benchmark step's metrics:
// every PREFIX_p50_ms with its siblings.
func latencies(attempt int, s *Step) []Latency {
	var out []Latency
	for name := range s.Outcome.Metrics {
		of, ok := strings.CutSuffix(name, "_p50_ms")
		if !ok {
			continue
		}
		l := Latency{Attempt: attempt, Step: s.Addr, Of: of, Partial: s.Outcome.Partial}
		for _, q := range quantiles {
			if v, ok := s.Outcome.Metrics[of+"_"+q+"_ms"]; ok {
				l.Quantiles = append(l.Quantiles, Quantile{Name: q, MS: v})
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Latency) int { return strings.Compare(a.Of, b.Of) })
	return out
}
