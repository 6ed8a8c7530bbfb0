package records

import (
	"time"
)

// Table is a plan's attempts side by side, one Row each, and the key
// metrics worth a column (see KeyMetrics).
type Table struct {
	Plan       string
	KeyMetrics []string // labels
	Rows       []Row
}

// Row is one attempt in a table, as the json format gives it.
type Row struct {
	Plan       string        `json:"plan"`
	Attempt    int           `json:"attempt"`
	Started    time.Time     `json:"started,omitzero"`
	Duration   time.Duration `json:"-"`
	DurationS  float64       `json:"duration_s"`
	Status     string        `json:"status"`
	FailedStep string        `json:"failed_step,omitempty"`
	Why        string        `json:"why,omitempty"` // the error_message, else the reason
	Note       string        `json:"note,omitempty"`
	// Resumed marks an attempt that ran part of its plan or adopted a
	// process (Attempt.Resumed).
	Resumed    string             `json:"resumed,omitempty"`
	Changed    map[string]string  `json:"changed,omitempty"`         // variables that differ from the plan's defaults
	Metrics    map[string]float64 `json:"metrics,omitempty"`         // every metric, by label
	KeyMetrics []string           `json:"key_metrics,omitempty"`     // the labels shown as columns
	Partial    []string           `json:"partial_metrics,omitempty"` // labels of metrics measured by a step cut short
	Unreadable int                `json:"unreadable_lines,omitempty"`
}

// Tables lays attempts side by side: number, when, how long, the
// variables that differ from the plan's defaults, outcome, the step that
// failed and why, the note, and every metric. Attempts of several plans
// make one table per plan, in the order given. The matrix of `lockstep
// run --matrix` is the same table of the attempts it ran.
//
// columns chooses the metrics shown as columns, by label; nil takes the
// key metrics (KeyMetrics).
func Tables(atts []*Attempt, columns []string) []Table {
	var out []Table
	for _, g := range byPlan(atts) {
		t := Table{Plan: g[0].Plan, KeyMetrics: columns}
		if columns == nil {
			for _, m := range KeyMetrics(g) {
				t.KeyMetrics = append(t.KeyMetrics, m.Label)
			}
		}
		t.Rows = tableRows(g, t.KeyMetrics)
		out = append(out, t)
	}
	return out
}

// LoadAll loads the given attempts of plan under root, in that order.
func LoadAll(root, plan string, numbers []int) ([]*Attempt, error) {
	atts := make([]*Attempt, 0, len(numbers))
	for _, n := range numbers {
		a, err := Load(AttemptDir(root, plan, n))
		if err != nil {
			return nil, err
		}
		atts = append(atts, a)
	}
	return atts, nil
}

func tableRows(atts []*Attempt, keys []string) []Row {
	all := MetricsOf(atts)
	var rows []Row
	for _, a := range atts {
		r := Row{
			Plan:       a.Plan,
			Attempt:    a.Number,
			Started:    a.Started,
			Duration:   a.Duration(),
			DurationS:  a.Duration().Seconds(),
			Status:     a.State(),
			FailedStep: a.Outcome.Failed,
			Why:        Why(&a.Outcome),
			Note:       a.Start.Note,
			Resumed:    a.Resumed(),
			Unreadable: a.Unreadable,
			KeyMetrics: keys,
		}
		for _, name := range ChangedVars(a.Start) {
			if r.Changed == nil {
				r.Changed = map[string]string{}
			}
			r.Changed[name] = a.Start.Vars[name]
		}
		for _, m := range all {
			if v, ok := m.Value(a); ok {
				if r.Metrics == nil {
					r.Metrics = map[string]float64{}
				}
				r.Metrics[m.Label] = v
				if m.Partial(a) {
					r.Partial = append(r.Partial, m.Label)
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// byPlan groups attempts by plan, keeping the order of first appearance.
func byPlan(atts []*Attempt) [][]*Attempt {
	var groups [][]*Attempt
	index := map[string]int{}
	for _, a := range atts {
		i, ok := index[a.Plan]
		if !ok {
			i = len(groups)
			index[a.Plan] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], a)
	}
	return groups
}
