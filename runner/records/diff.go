package records

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"lockstep/loads"
	"lockstep/runner/events"
	"lockstep/schema"
)

// Change is one thing that differs between two attempts.
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
	// Verdict is "better" or "worse" for a change of a metric whose
	// direction is known (schema.Metric.Better), "" otherwise or when
	// nothing changed.
	Verdict string `json:"verdict,omitempty"`
	// WithinSpread: a side ran repeat = N, and the change is within the
	// spread of its runs (the two attempts' ranges, min to max,
	// overlap): noise alone could make it.
	WithinSpread bool `json:"within_spread,omitempty"`
}

// Comparison is what Compare finds between attempt A and attempt B.
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

// Compare finds what changed from attempt a to attempt b.
func Compare(a, b *Attempt) Comparison {
	c := Comparison{Plan: a.Plan, A: a.Number, B: b.Number}
	c.Outcome = Change{Name: "outcome", A: a.Verdict(), B: b.Verdict()}
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
		if va == Redacted || vb == Redacted {
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

	for _, m := range MetricsOf([]*Attempt{a, b}) {
		mc := MetricChange{Metric: m.Label, Step: m.Step, PartialA: m.Partial(a), PartialB: m.Partial(b)}
		if v, ok := m.Value(a); ok {
			mc.A = &v
		}
		if v, ok := m.Value(b); ok {
			mc.B = &v
		}
		if mc.A != nil && mc.B != nil {
			d := *mc.B - *mc.A
			mc.Delta = &d
			if *mc.A != 0 {
				pc := d / math.Abs(*mc.A) * 100
				mc.Percent = &pc
			}
			switch b := betterOf(m.Name); {
			case d == 0:
			case b == schema.Higher && d > 0, b == schema.Lower && d < 0:
				mc.Verdict = "better"
			case b != schema.Neither:
				mc.Verdict = "worse"
			}
			if d != 0 {
				mc.WithinSpread = overlap(spreadOf(a, m, *mc.A), spreadOf(b, m, *mc.B))
			}
		}
		c.Metrics = append(c.Metrics, mc)
	}
	return c
}

// betterOf is the direction of the metric a load reports under name
// (the load kinds agree where they share a name); Neither for a name no
// load reports, such as a command benchmark's own metric.
func betterOf(name string) schema.Better {
	for _, k := range loads.Kinds() {
		for _, m := range k.Metrics {
			if m.Name == name {
				return m.Better
			}
		}
	}
	return schema.Neither
}

// spread is the range of a metric's runs in one attempt; repeated says
// the attempt ran it more than once.
type spread struct {
	lo, hi   float64
	repeated bool
}

func spreadOf(a *Attempt, m Metric, v float64) spread {
	for _, s := range a.Steps {
		if s.Addr == m.Step && s.Outcome != nil {
			if st, ok := s.Outcome.Stats[m.Name]; ok && len(st.Values) > 1 {
				return spread{lo: st.Min, hi: st.Max, repeated: true}
			}
		}
	}
	return spread{lo: v, hi: v}
}

// overlap says whether two attempts' runs overlap, when at least one of
// them was repeated: a change that noise alone could make.
func overlap(a, b spread) bool {
	return (a.repeated || b.repeated) && a.lo <= b.hi && b.lo <= a.hi
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
		if w := Why(s.Outcome); w != "" && s.Status != events.Skipped {
			l += ": " + w
		}
		return l
	}
	return ""
}
