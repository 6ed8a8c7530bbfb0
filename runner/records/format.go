package records

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lockstep/runner/events"
)

// Formats the renderings take.
const (
	Text     = "text"
	Markdown = "markdown"
	JSON     = "json"
)

// checkFormat accepts the formats, "" meaning text.
func checkFormat(format string) (string, error) {
	switch format {
	case "", Text:
		return Text, nil
	case Markdown, "md":
		return Markdown, nil
	case JSON:
		return JSON, nil
	}
	return "", fmt.Errorf("unknown format %q (want text, markdown or json)", format)
}

func toJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode json: %w", err)
	}
	return string(b) + "\n", nil
}

// grid renders rows as aligned text columns or a Markdown table. In text a
// cell wider than maxCell is cut, so one long error message does not push
// the other columns off the screen.
type grid struct {
	head  []string
	rows  [][]string
	right []bool // right-aligned columns (numbers)
}

const maxCell = 60

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) render(format string) string {
	var b strings.Builder
	if format == Markdown {
		row := func(cells []string) {
			b.WriteString("|")
			for _, c := range cells {
				b.WriteString(" " + mdCell(c) + " |")
			}
			b.WriteString("\n")
		}
		row(g.head)
		b.WriteString("|")
		for i := range g.head {
			if i < len(g.right) && g.right[i] {
				b.WriteString("---:|")
			} else {
				b.WriteString("---|")
			}
		}
		b.WriteString("\n")
		for _, r := range g.rows {
			row(r)
		}
		return b.String()
	}
	rows := append([][]string{g.head}, g.rows...)
	width := make([]int, len(g.head))
	for _, r := range rows {
		for i, c := range r {
			r[i] = cut(oneLine(c), maxCell)
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < len(g.right) && g.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	return b.String()
}

func mdCell(s string) string {
	s = strings.ReplaceAll(oneLine(s), "|", `\|`)
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Metric renders a metric (or a rate) as every view shows it, live and
// in reports: whole numbers as such, others to a sensible precision.
func Metric(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// dur renders a duration at the precision a reader wants for it.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// when renders a time in the zone it was recorded in.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04")
}

// value renders a variable's HCL value for a table: a plain string without
// its quotes, as it would be given to -var.
func value(v string) string {
	if s, err := strconv.Unquote(v); err == nil && s != "" && !strings.ContainsAny(s, " ,=\"'\n\t") {
		return s
	}
	return v
}

// changed lists the variables whose values differ from the plan's
// defaults, as NAME=VALUE sorted by name. A sensitive value cannot be
// compared and is left out.
func changed(s events.Start) []string {
	var out []string
	for _, name := range changedNames(s) {
		out = append(out, name+"="+value(s.Vars[name]))
	}
	return out
}

// changedNames lists, sorted, the variables that differ from the plan's
// defaults (or have none).
func changedNames(s events.Start) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(s.Vars)) {
		v := s.Vars[name]
		if v == redacted {
			continue
		}
		if d, ok := s.Defaults[name]; ok && d == v {
			continue
		}
		out = append(out, name)
	}
	return out
}

// redacted is how the runner renders a sensitive value.
const redacted = "(sensitive)"

// status is an attempt's outcome in one word.
func status(a *Attempt) string {
	if a.Running {
		return "running"
	}
	if a.Outcome.Status == events.Unknown {
		return "unknown"
	}
	return string(a.Outcome.Status)
}

// why is the one line that says why an attempt or step did not confirm:
// the plan's error_message when there is one, else the runner's reason.
func why(o *events.Outcome) string {
	if o == nil || o.Status == events.Confirmed {
		return ""
	}
	if o.ErrorMessage != "" {
		return o.ErrorMessage
	}
	return o.Reason
}
