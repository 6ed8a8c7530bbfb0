package records

import (
	"slices"
	"strings"
)

// metric is one metric of one step in an attempt, labelled by its name,
// or by STEP.NAME when several steps of the plan report that name.
type metric struct {
	step  string // step addr
	name  string
	label string
	kind  string
	index int // the step's position in the plan
}

// metricsOf lists the metrics the attempts' steps reported, labelled,
// in plan order then name.
func metricsOf(atts []*Attempt) []metric {
	type key struct{ step, name string }
	seen := map[key]metric{}
	steps := map[string]map[string]bool{} // metric name -> steps reporting it
	for _, a := range atts {
		for _, s := range a.Steps {
			if s.Outcome == nil {
				continue
			}
			for name := range s.Outcome.Metrics {
				k := key{s.Addr, name}
				if _, ok := seen[k]; !ok {
					seen[k] = metric{step: s.Addr, name: name, kind: s.Kind, index: s.Index}
				}
				if steps[name] == nil {
					steps[name] = map[string]bool{}
				}
				steps[name][s.Addr] = true
			}
		}
	}
	var ms []metric
	for _, m := range seen {
		m.label = m.name
		if len(steps[m.name]) > 1 {
			m.label = m.step[strings.IndexByte(m.step, '.')+1:] + "." + m.name
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b metric) int {
		if a.index != b.index {
			return a.index - b.index
		}
		return strings.Compare(a.label, b.label)
	})
	return ms
}

// keyMetrics picks the few benchmark metrics worth a column: throughputs
// (*_per_s) first, then tail latencies (p99), then error counts, at most
// maxKeyMetrics in all.
const maxKeyMetrics = 4

func keyMetrics(atts []*Attempt) []metric {
	var bench []metric
	for _, m := range metricsOf(atts) {
		if m.kind == "benchmark" {
			bench = append(bench, m)
		}
	}
	rank := func(m metric) int {
		switch {
		case m.name == "total_tokens_per_s":
			return 0
		case m.name == "output_tokens_per_s":
			return 1
		case m.name == "requests_per_s":
			return 2
		case strings.HasSuffix(m.name, "_per_s"):
			return 3
		case strings.Contains(m.name, "p99"):
			return 4
		case m.name == "errors":
			return 5
		}
		return 6
	}
	group := func(m metric) int {
		switch r := rank(m); {
		case r <= 3:
			return 0 // throughput
		case r == 4:
			return 1 // latency
		}
		return 2
	}
	cands := slices.Clone(bench)
	slices.SortStableFunc(cands, func(a, b metric) int { return rank(a) - rank(b) })
	// At most two throughputs and two latencies while other kinds wait,
	// so that one kind does not take every column.
	taken := make([]bool, len(cands))
	perGroup := map[int]int{}
	var out []metric
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
	slices.SortStableFunc(out, func(a, b metric) int {
		if a.index != b.index {
			return a.index - b.index
		}
		return rank(a) - rank(b)
	})
	return out
}

// value is m's value in attempt a.
func (m metric) value(a *Attempt) (float64, bool) {
	for _, s := range a.Steps {
		if s.Addr == m.step && s.Outcome != nil {
			v, ok := s.Outcome.Metrics[m.name]
			return v, ok
		}
	}
	return 0, false
}

// partial reports whether m's value in attempt a was measured by a step
// cut short.
func (m metric) partial(a *Attempt) bool {
	for _, s := range a.Steps {
		if s.Addr == m.step && s.Outcome != nil {
			return s.Outcome.Partial
		}
	}
	return false
}

// cell renders m's value v in attempt a, marked when it is partial.
func (m metric) cell(a *Attempt, v float64) string {
	if m.partial(a) {
		return Metric(v) + " (partial)"
	}
	return Metric(v)
}
