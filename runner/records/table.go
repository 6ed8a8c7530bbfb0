package records

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Row is one attempt in a table, as the json format gives it.
type Row struct {
	Plan       string             `json:"plan"`
	Attempt    int                `json:"attempt"`
	Started    time.Time          `json:"started,omitzero"`
	DurationS  float64            `json:"duration_s"`
	Status     string             `json:"status"`
	FailedStep string             `json:"failed_step,omitempty"`
	Why        string             `json:"why,omitempty"` // the error_message, else the reason
	Note       string             `json:"note,omitempty"`
	Changed    map[string]string  `json:"changed,omitempty"`         // variables that differ from the plan's defaults
	Metrics    map[string]float64 `json:"metrics,omitempty"`         // every metric, by label
	KeyMetrics []string           `json:"key_metrics,omitempty"`     // the labels shown as columns
	Partial    []string           `json:"partial_metrics,omitempty"` // labels of metrics measured by a step cut short
	Unreadable int                `json:"unreadable_lines,omitempty"`
}

// Table renders attempts side by side, one row each: number, when, how
// long, the variables that differ from the plan's defaults, outcome, the
// step that failed and why, the note, and a few key benchmark metrics.
// Attempts of several plans make one table per plan, in the order given.
// The matrix of `lockstep run --matrix` is the same table (see Matrix).
func Table(atts []*Attempt, format string) (string, error) {
	format, err := checkFormat(format)
	if err != nil {
		return "", err
	}
	groups := byPlan(atts)
	if format == JSON {
		rows := []Row{}
		for _, g := range groups {
			rows = append(rows, tableRows(g)...)
		}
		return toJSON(rows)
	}
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		title := fmt.Sprintf("%s: %d attempt%s", g[0].Plan, len(g), plural(len(g)))
		if format == Markdown {
			b.WriteString("### " + title + "\n\n")
		} else {
			b.WriteString(title + "\n")
		}
		b.WriteString(tableGrid(g).render(format))
	}
	return b.String(), nil
}

// Matrix renders the table of the given attempts of plan under root: the
// comparison `lockstep run --matrix` prints when its runs are done.
func Matrix(root, plan string, numbers []int, format string) (string, error) {
	atts := make([]*Attempt, 0, len(numbers))
	for _, n := range numbers {
		a, err := Load(AttemptDir(root, plan, n))
		if err != nil {
			return "", err
		}
		atts = append(atts, a)
	}
	return Table(atts, format)
}

func tableGrid(atts []*Attempt) *grid {
	keys := keyMetrics(atts)
	g := &grid{head: []string{"#", "when", "took", "changed", "outcome", "failed step", "why", "note"}}
	g.right = []bool{true, false, true, false, false, false, false, false}
	for _, m := range keys {
		g.head = append(g.head, m.label)
		g.right = append(g.right, true)
	}
	for _, a := range atts {
		cells := []string{
			strconv.Itoa(a.Number),
			when(a.Started),
			dur(a.Duration()),
			strings.Join(changed(a.Start), " "),
			status(a),
			a.Outcome.Failed,
			why(&a.Outcome),
			a.Start.Note,
		}
		for _, m := range keys {
			v, ok := m.value(a)
			if ok {
				cells = append(cells, m.cell(a, v))
			} else {
				cells = append(cells, "")
			}
		}
		g.add(cells...)
	}
	return g
}

func tableRows(atts []*Attempt) []Row {
	keys := keyMetrics(atts)
	all := metricsOf(atts)
	var rows []Row
	for _, a := range atts {
		r := Row{
			Plan:       a.Plan,
			Attempt:    a.Number,
			Started:    a.Started,
			DurationS:  a.Duration().Seconds(),
			Status:     status(a),
			FailedStep: a.Outcome.Failed,
			Why:        why(&a.Outcome),
			Note:       a.Start.Note,
			Unreadable: a.Unreadable,
		}
		for _, name := range changedNames(a.Start) {
			if r.Changed == nil {
				r.Changed = map[string]string{}
			}
			r.Changed[name] = a.Start.Vars[name]
		}
		for _, m := range all {
			if v, ok := m.value(a); ok {
				if r.Metrics == nil {
					r.Metrics = map[string]float64{}
				}
				r.Metrics[m.label] = v
				if m.partial(a) {
					r.Partial = append(r.Partial, m.label)
				}
			}
		}
		for _, m := range keys {
			r.KeyMetrics = append(r.KeyMetrics, m.label)
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
