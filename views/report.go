package views

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"lockstep/runner/records"
	"lockstep/terminal"
	"lockstep/views/charts"
)

// ReportHTML renders a report (records.BuildReport) as one self-contained
// HTML page: no script, no request for anything, the charts inline SVG
// (package charts), so it reads offline and attaches to anything. The
// sections have ids (attempts, metrics, sweeps, latency, timeline) for whoever
// links into them, and the tests find them by.
func ReportHTML(r records.Report, generated time.Time) ([]byte, error) {
	page := reportPage{Plan: r.Plan, Generated: generated.UTC().Format("2006-01-02 15:04 UTC"), Attempts: len(r.Table.Rows)}
	page.Head, page.Rows = reportTable(r.Table)
	for _, m := range r.Metrics {
		var pts []charts.Point
		for _, p := range m.Points {
			label := "#" + strconv.Itoa(p.Attempt)
			if p.Partial {
				label += " (partial)"
			}
			pts = append(pts, charts.Point{X: float64(p.Attempt), Y: p.Value, Label: label})
		}
		svg, err := charts.Lines(charts.Chart{Title: m.Label, X: "attempt", Y: m.Label, Series: []charts.Series{{Points: pts}}})
		if err := page.add(&page.Metrics, m.Label, svg, err); err != nil {
			return nil, err
		}
	}
	for _, l := range r.Latencies {
		var names []string
		var values []float64
		for _, q := range l.Quantiles {
			names = append(names, q.Name)
			values = append(values, q.MS)
		}
		title := fmt.Sprintf("#%d %s: %s", l.Attempt, l.Step, l.Of)
		if l.Partial {
			title += " (partial)"
		}
		svg, err := charts.Bars(title, "ms", names, values)
		if err := page.add(&page.Latency, title, svg, err); err != nil {
			return nil, err
		}
	}
	for _, sw := range r.Sweeps {
		c := charts.Chart{Title: fmt.Sprintf("%s: %s against %s", sw.Step, sw.Y, sw.X), X: sw.X, Y: sw.Y}
		for _, cv := range sw.Curves {
			name := "#" + strconv.Itoa(cv.Attempt)
			if cv.Partial {
				name += " (partial)"
			}
			se := charts.Series{Name: name, Front: true}
			for _, p := range cv.Points {
				se.Points = append(se.Points, charts.Point{X: p.X, Y: p.Y, Label: p.Level + goodMark(p.Good)})
			}
			c.Series = append(c.Series, se)
		}
		svg, err := charts.Lines(c)
		if err := page.add(&page.Sweeps, c.Title, svg, err); err != nil {
			return nil, err
		}
	}
	var spans []charts.Span
	for _, t := range r.Timelines {
		for _, s := range t.Spans {
			spans = append(spans, charts.Span{Row: "#" + strconv.Itoa(t.Attempt), Name: s.Step, Start: s.Start, End: s.End, Outcome: s.Status})
			page.Spans = append(page.Spans, []string{"#" + strconv.Itoa(t.Attempt), s.Step, strconv.FormatFloat(s.Start, 'f', 2, 64) + "s", tookSeconds(s.End - s.Start), terminal.Printable(s.Status)})
		}
	}
	svg, err := charts.Timeline("where the time went", spans)
	if err := page.add(&page.Timeline, "timeline", svg, err); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := reportTemplate.Execute(&b, page); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return b.Bytes(), nil
}

// ReportMarkdown renders the same report for a pull request comment:
// its tables, no charts.
func ReportMarkdown(r records.Report) (string, error) {
	return render(Markdown, r, func(d doc) {
		d.heading(1, "lockstep report: "+r.Plan)
		head, rows := reportTable(r.Table)
		g := &grid{head: head}
		for _, row := range rows {
			g.add(row...)
		}
		d.heading(2, "Attempts")
		d.table(g)
		if len(r.Metrics) > 0 {
			d.heading(2, "Metrics across attempts")
			g := &grid{head: []string{"metric"}}
			var nums []int
			for _, row := range r.Table.Rows {
				nums = append(nums, row.Attempt)
				g.head = append(g.head, "#"+strconv.Itoa(row.Attempt))
			}
			for _, m := range r.Metrics {
				cells := []string{m.Label}
				for _, n := range nums {
					cells = append(cells, "")
					for _, p := range m.Points {
						if p.Attempt == n {
							cells[len(cells)-1] = metricText(p.Value, p.Partial)
						}
					}
				}
				g.add(cells...)
			}
			d.table(g)
		}
		if len(r.Sweeps) > 0 {
			d.heading(2, "Sweeps")
			for _, sw := range r.Sweeps {
				d.heading(3, fmt.Sprintf("%s: %s against %s", sw.Step, sw.Y, sw.X))
				g := &grid{head: []string{"attempt", "level", sw.X, sw.Y}}
				for _, cv := range sw.Curves {
					for _, p := range cv.Points {
						g.add("#"+strconv.Itoa(cv.Attempt), p.Level+goodMark(p.Good), metricText(p.X, cv.Partial), metricText(p.Y, cv.Partial))
					}
				}
				d.table(g)
			}
		}
		if len(r.Latencies) > 0 {
			d.heading(2, "Latency distributions (ms)")
			g := &grid{head: []string{"attempt", "step", "of"}}
			for _, q := range []string{"p50", "p90", "p99", "p999", "max"} {
				g.head = append(g.head, q)
			}
			for _, l := range r.Latencies {
				cells := []string{"#" + strconv.Itoa(l.Attempt), l.Step, l.Of}
				for _, q := range g.head[3:] {
					cell := ""
					for _, lq := range l.Quantiles {
						if lq.Name == q {
							cell = metricText(lq.MS, l.Partial)
						}
					}
					cells = append(cells, cell)
				}
				g.add(cells...)
			}
			d.table(g)
		}
		d.heading(2, "Where the time went")
		g = &grid{head: []string{"attempt", "outcome", "steps"}}
		for _, t := range r.Timelines {
			var parts []string
			for _, s := range t.Spans {
				parts = append(parts, fmt.Sprintf("%s %s %s", s.Step, tookSeconds(s.End-s.Start), s.Status))
			}
			g.add("#"+strconv.Itoa(t.Attempt), t.Status, strings.Join(parts, "; "))
		}
		d.table(g)
	})
}

// tookSeconds is a span's length as the tables show a duration.
func tookSeconds(s float64) string { return took(time.Duration(s * float64(time.Second))) }

// goodMark marks a goodput search's levels: good or not.
func goodMark(good *bool) string {
	switch {
	case good == nil:
		return ""
	case *good:
		return " good"
	}
	return " not good"
}

func metricText(v float64, partial bool) string {
	if partial {
		return Metric(v) + " (partial)"
	}
	return Metric(v)
}

// reportTable is the attempts table as the report shows it: the columns
// of `lockstep attempts`, what the world wrote made printable.
func reportTable(t records.Table) (head []string, rows [][]string) {
	g := attemptsGrid(t)
	for _, r := range g.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = terminal.Printable(c)
		}
		rows = append(rows, cells)
	}
	return g.head, rows
}

type reportPage struct {
	Plan, Generated                    string
	Attempts                           int
	Head                               []string
	Rows                               [][]string
	Metrics, Sweeps, Latency, Timeline []reportChart
	// Spans are the timeline's steps as a table: attempt, step, start,
	// took, outcome.
	Spans [][]string
}

// reportChart is one chart of the page: its SVG (made by package charts,
// whose text is escaped) or why there is none.
type reportChart struct {
	Title string
	SVG   template.HTML
	None  string
}

func (p *reportPage) add(to *[]reportChart, title string, svg []byte, err error) error {
	switch {
	case errors.Is(err, charts.ErrNoData):
		*to = append(*to, reportChart{Title: title, None: "nothing measured to draw"})
	case err != nil:
		return fmt.Errorf("report: %w", err)
	default:
		// The SVG is charts' own, its text escaped there: trusted here.
		*to = append(*to, reportChart{Title: title, SVG: template.HTML(svg)})
	}
	return nil
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockstep report: {{.Plan}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1300px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; } figure svg { width: 600px; max-width: 100%; height: auto; }
figcaption, .none { color: #666; font-size: 0.9em; }
</style>
</head>
<body>
<h1>lockstep report: {{.Plan}}</h1>
<p>{{.Attempts}} attempt{{if ne .Attempts 1}}s{{end}}, made {{.Generated}}. Sensitive values are shown as (sensitive), as everywhere lockstep writes.</p>
<section id="attempts">
<h2>Attempts</h2>
<table>
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</section>
{{if .Metrics}}<section id="metrics">
<h2>Metrics across attempts</h2>
<div class="charts">{{range .Metrics}}<figure class="chart">{{if .SVG}}{{.SVG}}{{else}}<p class="none">{{.None}}</p>{{end}}<figcaption>{{.Title}}</figcaption></figure>
{{end}}</div>
</section>
{{end}}{{if .Sweeps}}<section id="sweeps">
<h2>Sweeps: throughput against latency</h2>
<p>Each level of a sweep is a point, labelled by its concurrency or rate; the dashed line is each attempt's Pareto front (no other level has both more throughput and less latency).</p>
<div class="charts">{{range .Sweeps}}<figure class="chart">{{if .SVG}}{{.SVG}}{{else}}<p class="none">{{.None}}</p>{{end}}<figcaption>{{.Title}}</figcaption></figure>
{{end}}</div>
</section>
{{end}}{{if .Latency}}<section id="latency">
<h2>Latency distributions</h2>
<div class="charts">{{range .Latency}}<figure class="chart">{{if .SVG}}{{.SVG}}{{else}}<p class="none">{{.None}}</p>{{end}}<figcaption>{{.Title}}</figcaption></figure>
{{end}}</div>
</section>
{{end}}<section id="timeline">
<h2>Where the time went</h2>
<div class="charts">{{range .Timeline}}<figure class="chart">{{if .SVG}}{{.SVG}}{{else}}<p class="none">{{.None}}</p>{{end}}</figure>
{{end}}</div>
{{if .Spans}}<table class="spans">
<thead><tr><th>attempt</th><th>step</th><th>started</th><th>took</th><th>outcome</th></tr></thead>
<tbody>
{{range .Spans}}<tr class="span">{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}</section>
</body>
</html>
`))
