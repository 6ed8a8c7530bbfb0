package views

import (
	"fmt"
	"strconv"
	"strings"

	"lockstep/runner/records"
)

// AttemptDiff renders what changed from attempt a to attempt b
// (records.Compare): the outcome, the variables, the plan's text (a
// unified diff), each step's outcome, and the metrics with their deltas.
// JSON is the Comparison.
func AttemptDiff(a, b *records.Attempt, f Format) (string, error) {
	c := records.Compare(a, b)
	return render(f, c, func(p doc) { attemptDiff(p, a, b, c) })
}

func attemptDiff(p doc, a, b *records.Attempt, c records.Comparison) {
	plan := a.Plan
	if b.Plan != a.Plan {
		plan = a.Plan + " / " + b.Plan
	}
	p.heading(1, fmt.Sprintf("%s: attempt %d → attempt %d", plan, a.Number, b.Number))
	kv := []string{
		"outcome", arrow(c.Outcome),
		"started", when(a.Started) + " → " + when(b.Started),
		"took", took(a.Duration()) + " → " + took(b.Duration()),
	}
	if c.Note != nil {
		kv = append(kv, "note", arrow(*c.Note))
	}
	for _, w := range c.Where {
		kv = append(kv, w.Name, arrow(w))
	}
	p.fields(kv...)

	p.heading(2, "variables")
	if len(c.Variables) == 0 {
		p.line("no variable changed")
	} else {
		g := &grid{head: []string{"name", fmt.Sprint(a.Number), fmt.Sprint(b.Number)}}
		for _, v := range c.Variables {
			g.add(v.Name, orNone(v.A), orNone(v.B))
		}
		p.table(g)
	}
	if len(c.Sensitive) > 0 {
		p.line("not compared (sensitive): " + strings.Join(c.Sensitive, ", "))
	}

	p.heading(2, "plan")
	switch {
	case c.PlanSame:
		p.line("unchanged (sha256 " + short(a.Start.PlanSHA256) + ")")
	case len(c.PlanDiff) > 0:
		p.verbatim("", "diff", c.PlanDiff)
	default:
		p.line(fmt.Sprintf("changed (sha256 %s → %s); no copy of the plan was kept to show how", short(a.Start.PlanSHA256), short(b.Start.PlanSHA256)))
	}

	p.heading(2, "steps")
	g := &grid{head: []string{"step", fmt.Sprint(a.Number), fmt.Sprint(b.Number), ""}}
	for _, s := range c.Steps {
		mark := ""
		if s.A != s.B {
			mark = "changed"
		}
		g.add(s.Name, orNone(s.A), orNone(s.B), mark)
	}
	p.table(g)

	if len(c.Metrics) > 0 {
		p.heading(2, "metrics")
		g := &grid{head: []string{"metric", fmt.Sprint(a.Number), fmt.Sprint(b.Number), "delta", "%", ""}, right: []bool{false, true, true, true, true, false}}
		for _, m := range c.Metrics {
			g.add(m.Metric, partialNum(m.A, m.PartialA), partialNum(m.B, m.PartialB), signed(m.Delta), percent(m.Percent), verdict(m))
		}
		p.table(g)
	}
}

// verdict says which way a metric moved, and whether the runs' spread
// covers the move.
func verdict(m records.MetricChange) string {
	v := m.Verdict
	if m.WithinSpread {
		if v == "" {
			return "within the spread of runs"
		}
		v += ", within the spread of runs"
	}
	return v
}

func arrow(c records.Change) string {
	if c.A == c.B {
		return orNone(c.A) + " (same)"
	}
	return orNone(c.A) + " → " + orNone(c.B)
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// partialNum is optNum, marked when the value is partial.
func partialNum(v *float64, partial bool) string {
	if v != nil && partial {
		return optNum(v) + " (partial)"
	}
	return optNum(v)
}

func optNum(v *float64) string {
	if v == nil {
		return "-"
	}
	return Metric(*v)
}

func signed(v *float64) string {
	if v == nil {
		return ""
	}
	if *v > 0 {
		return "+" + Metric(*v)
	}
	return Metric(*v)
}

func percent(v *float64) string {
	if v == nil {
		return ""
	}
	sign := ""
	if *v > 0 {
		sign = "+"
	}
	return sign + strconv.FormatFloat(*v, 'f', 1, 64) + "%"
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
