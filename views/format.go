package views

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Format is what a document view is rendered as. The zero value is
// unknown: every caller names one (ParseFormat reads a flag).
type Format int

const (
	_ Format = iota
	Text
	Markdown
	// JSON is the view's data, not its document: the values a script
	// reads, with the same redactions as the text.
	JSON
)

func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case Markdown:
		return "markdown"
	case JSON:
		return "json"
	}
	return "unknown"
}

// ParseFormat reads a --format value: "text" (also ""), "markdown" (also
// "md") or "json".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "text":
		return Text, nil
	case "markdown", "md":
		return Markdown, nil
	case "json":
		return JSON, nil
	}
	return 0, fmt.Errorf("unknown format %q (want text, markdown or json)", s)
}

// render gives data as JSON, or writes the document write builds in
// the other formats.
func render(f Format, data any, write func(d doc)) (string, error) {
	if f == JSON {
		return toJSON(data)
	}
	d, err := newDoc(f)
	if err != nil {
		return "", err
	}
	write(d)
	return d.String(), nil
}

func toJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode json: %w", err)
	}
	return string(b) + "\n", nil
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

// took renders how long something recorded took, at the precision a
// reader of a report wants: 100 ms under a minute.
func took(d time.Duration) string {
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

// elapsed renders a duration in the run views, finer than took: 10 ms
// under a minute, as a step that just confirmed is watched closely.
func elapsed(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// indentMore puts pad before the second and later lines of s.
func indentMore(s, pad string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

// prefixLines puts p before every line of s.
func prefixLines(p, s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = p + l
	}
	return strings.Join(lines, "\n")
}
