package views

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"lockstep/runner/records"
)

// Attempts renders the tables of attempts (records.Tables) one after
// another: number, when, how long, the variables changed, outcome, the
// step that failed and why, the note, and the key metrics as columns.
// JSON is every table's rows in one list.
func Attempts(tables []records.Table, f Format) (string, error) {
	rows := []records.Row{}
	for _, t := range tables {
		rows = append(rows, t.Rows...)
	}
	return render(f, rows, func(d doc) {
		for _, t := range tables {
			d.heading(2, fmt.Sprintf("%s: %d attempt%s", t.Plan, len(t.Rows), plural(len(t.Rows))))
			d.grid(attemptsGrid(t))
		}
	})
}

func attemptsGrid(t records.Table) *grid {
	g := &grid{head: []string{"#", "when", "took", "changed", "outcome", "failed step", "why", "note"}}
	g.right = []bool{true, false, true, false, false, false, false, false}
	for _, m := range t.KeyMetrics {
		g.head = append(g.head, m)
		g.right = append(g.right, true)
	}
	for _, r := range t.Rows {
		var changed []string
		for _, name := range slices.Sorted(maps.Keys(r.Changed)) {
			changed = append(changed, name+"="+varValue(r.Changed[name]))
		}
		cells := []string{
			strconv.Itoa(r.Attempt),
			when(r.Started),
			took(r.Duration),
			strings.Join(changed, " "),
			r.Status,
			r.FailedStep,
			r.Why,
			noteCell(r),
		}
		for _, m := range t.KeyMetrics {
			v, ok := r.Metrics[m]
			switch {
			case !ok:
				cells = append(cells, "")
			case slices.Contains(r.Partial, m):
				cells = append(cells, Metric(v)+" (partial)")
			default:
				cells = append(cells, Metric(v))
			}
		}
		g.add(cells...)
	}
	return g
}

// noteCell is the note, after how the attempt ran part of its plan and
// what it adopted: such an attempt is one row of the same table, marked.
func noteCell(r records.Row) string {
	if r.Resumed == "" {
		return r.Note
	}
	return strings.TrimSpace("[" + r.Resumed + "] " + r.Note)
}

// varValue renders a variable's HCL value for a table: a plain string
// without its quotes, as it would be given to -var.
func varValue(v string) string {
	if s, err := strconv.Unquote(v); err == nil && s != "" && !strings.ContainsAny(s, " ,=\"'\n\t") {
		return s
	}
	return v
}

// metricCell renders m's value v in attempt a, marked when it is partial.
func metricCell(m records.Metric, a *records.Attempt, v float64) string {
	if m.Partial(a) {
		return Metric(v) + " (partial)"
	}
	return Metric(v)
}
