package records

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"lockstep/runner/events"
)

// Change is one thing that differs between two attempts, as the json
// format of Diff gives it.
type Change struct {
	Name string `json:"name"`
	A    string `json:"a"` // empty: not there in A
	B    string `json:"b"`
}

// MetricChange is a metric in both attempts, or in one.
type MetricChange struct {
	Metric  string   `json:"metric"` // label, as in the table
	Step    string   `json:"step"`
	A       *float64 `json:"a"`
	B       *float64 `json:"b"`
	Delta   *float64 `json:"delta,omitempty"`
	Percent *float64 `json:"percent,omitempty"` // of A; absent when A is 0
	// PartialA, PartialB: that attempt's value was measured by a step cut
	// short; the delta compares a part with a whole.
	PartialA bool `json:"partial_a,omitempty"`
	PartialB bool `json:"partial_b,omitempty"`
}

// Comparison is what Diff finds between attempt A and attempt B.
type Comparison struct {
	Plan      string         `json:"plan"`
	A         int            `json:"a"`
	B         int            `json:"b"`
	Outcome   Change         `json:"outcome"`
	Note      *Change        `json:"note,omitempty"`
	Where     []Change       `json:"where,omitempty"`     // host, user
	Variables []Change       `json:"variables,omitempty"` // those that differ
	Sensitive []string       `json:"sensitive,omitempty"` // variables that cannot be compared
	PlanSame  bool           `json:"plan_same"`
	PlanDiff  []string       `json:"plan_diff,omitempty"` // unified diff, one line each
	Steps     []Change       `json:"steps"`               // every step: A's state, B's state
	Metrics   []MetricChange `json:"metrics,omitempty"`
}

// Diff renders what changed from attempt a to attempt b: the outcome, the
// variables, the plan's text (a unified diff), each step's outcome, and
// the metrics with their deltas.
func Diff(a, b *Attempt, format string) (string, error) {
	format, err := checkFormat(format)
	if err != nil {
		return "", err
	}
	c := Compare(a, b)
	if format == JSON {
		return toJSON(c)
	}
	p := newPage(format)
	plan := a.Plan
	if b.Plan != a.Plan {
		plan = a.Plan + " / " + b.Plan
	}
	p.heading(1, fmt.Sprintf("%s: attempt %d → attempt %d", plan, a.Number, b.Number))
	kv := []string{
		"outcome", arrow(c.Outcome),
		"started", when(a.Started) + " → " + when(b.Started),
		"took", dur(a.Duration()) + " → " + dur(b.Duration()),
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
		g := &grid{head: []string{"metric", fmt.Sprint(a.Number), fmt.Sprint(b.Number), "delta", "%"}, right: []bool{false, true, true, true, true}}
		for _, m := range c.Metrics {
			g.add(m.Metric, partialNum(m.A, m.PartialA), partialNum(m.B, m.PartialB), signed(m.Delta), percent(m.Percent))
		}
		p.table(g)
	}
	return p.String(), nil
}

// Compare finds what changed from attempt a to attempt b.
func Compare(a, b *Attempt) Comparison {
	c := Comparison{Plan: a.Plan, A: a.Number, B: b.Number}
	c.Outcome = Change{Name: "outcome", A: outcomeLine(a), B: outcomeLine(b)}
	if a.Start.Note != b.Start.Note {
		c.Note = &Change{Name: "note", A: a.Start.Note, B: b.Start.Note}
	}
	if a.Start.Host != b.Start.Host {
		c.Where = append(c.Where, Change{Name: "host", A: a.Start.Host, B: b.Start.Host})
	}
	if a.Start.User != b.Start.User {
		c.Where = append(c.Where, Change{Name: "user", A: a.Start.User, B: b.Start.User})
	}

	names := map[string]bool{}
	for n := range a.Start.Vars {
		names[n] = true
	}
	for n := range b.Start.Vars {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		va, vb := a.Start.Vars[n], b.Start.Vars[n]
		if va == redacted || vb == redacted {
			c.Sensitive = append(c.Sensitive, n)
			continue
		}
		if va != vb {
			c.Variables = append(c.Variables, Change{Name: n, A: va, B: vb})
		}
	}

	// The copies tell best; without both, the hashes.
	if a.PlanSource != nil && b.PlanSource != nil {
		c.PlanDiff = unified(
			fmt.Sprintf("attempt %d/%s", a.Number, PlanFile),
			fmt.Sprintf("attempt %d/%s", b.Number, PlanFile),
			string(a.PlanSource), string(b.PlanSource))
		c.PlanSame = len(c.PlanDiff) == 0
	} else {
		c.PlanSame = a.Start.PlanSHA256 != "" && a.Start.PlanSHA256 == b.Start.PlanSHA256
	}

	for _, addr := range stepAddrs(a, b) {
		c.Steps = append(c.Steps, Change{Name: addr, A: stepLine(a, addr), B: stepLine(b, addr)})
	}

	for _, m := range metricsOf([]*Attempt{a, b}) {
		mc := MetricChange{Metric: m.label, Step: m.step, PartialA: m.partial(a), PartialB: m.partial(b)}
		if v, ok := m.value(a); ok {
			mc.A = &v
		}
		if v, ok := m.value(b); ok {
			mc.B = &v
		}
		if mc.A != nil && mc.B != nil {
			d := *mc.B - *mc.A
			mc.Delta = &d
			if *mc.A != 0 {
				pc := d / math.Abs(*mc.A) * 100
				mc.Percent = &pc
			}
		}
		c.Metrics = append(c.Metrics, mc)
	}
	return c
}

// stepAddrs is the steps of both attempts, in a's order then b's new ones.
func stepAddrs(a, b *Attempt) []string {
	var addrs []string
	seen := map[string]bool{}
	for _, att := range []*Attempt{a, b} {
		for _, s := range att.Steps {
			if !seen[s.Addr] {
				seen[s.Addr] = true
				addrs = append(addrs, s.Addr)
			}
		}
	}
	return addrs
}

func stepLine(a *Attempt, addr string) string {
	for _, s := range a.Steps {
		if s.Addr != addr {
			continue
		}
		l := s.State(a)
		if w := why(s.Outcome); w != "" && s.Status != events.Skipped {
			l += ": " + w
		}
		return l
	}
	return ""
}

func outcomeLine(a *Attempt) string {
	l := status(a)
	if w := why(&a.Outcome); w != "" {
		if a.Outcome.Failed != "" && a.Outcome.Status != events.Interrupted {
			l += " in " + a.Outcome.Failed
		}
		l += ": " + w
	}
	return l
}

func arrow(c Change) string {
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
