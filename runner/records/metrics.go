package records

import (
	"slices"
	"strings"
)

// Metric is one metric of one step in an attempt, labelled by its name,
// or by STEP.NAME when several steps of the plan report that name.
type Metric struct {
	Step  string // step addr
	Name  string
	Label string
	Kind  string // the step's kind
	Index int    // the step's position in the plan
}

// MetricsOf lists the metrics the attempts' steps reported, labelled,
// in plan order then name.
func MetricsOf(atts []*Attempt) []Metric {
	type key struct{ step, name string }
	seen := map[key]Metric{}
	steps := map[string]map[string]bool{} // metric name -> steps reporting it
	for _, a := range atts {
		for _, s := range a.Steps {
			if s.Outcome == nil {
				continue
			}
			for name := range s.Outcome.Metrics {
				k := key{s.Addr, name}
				if _, ok := seen[k]; !ok {
					seen[k] = Metric{Step: s.Addr, Name: name, Kind: s.Kind, Index: s.Index}
				}
				if steps[name] == nil {
					steps[name] = map[string]bool{}
				}
				steps[name][s.Addr] = true
			}
		}
	}
	var ms []Metric
	for _, m := range seen {
		m.Label = m.Name
		if len(steps[m.Name]) > 1 {
			m.Label = m.Step[strings.IndexByte(m.Step, '.')+1:] + "." + m.Name
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b Metric) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return strings.Compare(a.Label, b.Label)
	})
	return ms
}

// KeyMetrics picks the few benchmark metrics worth a column: throughputs
// (*_per_s) first, then tail latencies (p99), then error counts, at most
// maxKeyMetrics in all.
const maxKeyMetrics = 4

func KeyMetrics(atts []*Attempt) []Metric {
	var bench []Metric
	for _, m := range MetricsOf(atts) {
		if m.Kind == "benchmark" {
			bench = append(bench, m)
		}
	}
	rank := func(m Metric) int {
		switch {
		case m.Name == "total_tokens_per_s":
			return 0
		case m.Name == "output_tokens_per_s":
			return 1
		case m.Name == "requests_per_s":
			return 2
		case strings.HasSuffix(m.Name, "_per_s"):
			return 3
		case strings.Contains(m.Name, "p99"):
			return 4
		case m.Name == "errors":
			return 5
		}
		return 6
	}
	group := func(m Metric) int {
		switch r := rank(m); {
		case r <= 3:
			return 0 // throughput
		case r == 4:
			return 1 // latency
		}
		return 2
	}
	cands := slices.Clone(bench)
	slices.SortStableFunc(cands, func(a, b Metric) int { return rank(a) - rank(b) })
	// At most two throughputs and two latencies while other kinds wait,
	// so that one kind does not take every column.
	taken := make([]bool, len(cands))
	perGroup := map[int]int{}
	var out []Metric
	for pass := range 2 {
		for i, m := range cands {
			if len(out) == maxKeyMetrics || taken[i] {
				continue
			}
			if g := group(m); pass == 0 && g < 2 && perGroup[g] >= 2 {
				continue
			}
			taken[i] = true
			perGroup[group(m)]++
			out = append(out, m)
		}
	}
	// Columns read in the plan's order, throughput before latency.
	slices.SortStableFunc(out, func(a, b Metric) int {
		if a.Index != b.Index {
			return a.Index - b.Index
		}
		return rank(a) - rank(b)
	})
	return out
}

// Value is m's value in attempt a.
func (m Metric) Value(a *Attempt) (float64, bool) {
	for _, s := range a.Steps {
		if s.Addr == m.Step && s.Outcome != nil {
			v, ok := s.Outcome.Metrics[m.Name]
			return v, ok
		}
	}
	return 0, false
}

// Partial reports whether m's value in attempt a was measured by a step
// cut short.
func (m Metric) Partial(a *Attempt) bool {
	for _, s := range a.Steps {
		if s.Addr == m.Step && s.Outcome != nil {
			return s.Outcome.Partial
		}
	}
	return false
}
