package charts

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Size of every chart: a report shows them two abreast on a laptop.
const (
	width  = 6 * vg.Inch
	height = 3.6 * vg.Inch
)

// palette is Okabe and Ito's eight colours, told apart by readers with
// any common colour blindness.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{0, 0, 0, 255},       // black
}

// Point is one measured point; Label names it on the chart ("c=64").
type Point struct {
	X, Y  float64
	Label string
}

// Series is a line of points, drawn in the order given.
type Series struct {
	Name   string
	Points []Point
	// Front draws the series' Pareto front (Front) as a dashed line over
	// it, for a sweep of throughput (X, higher is better) against latency
	// (Y, lower is better).
	Front bool
}

// Chart is what Lines draws.
type Chart struct {
	Title, X, Y string
	Series      []Series
	// LogX draws the x axis on a log scale (concurrency 1 to 1024).
	LogX bool
}

// ErrNoData is returned for a chart with nothing to draw: the report then
// says so instead of drawing empty axes.
var ErrNoData = errors.New("nothing to draw")

// Lines draws c's series as lines with points.
func Lines(c Chart) ([]byte, error) {
	p := newPlot(c.Title, c.X, c.Y)
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	n := 0
	for i, s := range c.Series {
		xys := make(plotter.XYs, 0, len(s.Points))
		var labels []string
		for _, pt := range s.Points {
			if !finite(pt.X) || !finite(pt.Y) || (c.LogX && pt.X <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			labels = append(labels, pt.Label)
		}
		if len(xys) == 0 {
			continue
		}
		n++
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.Title, err)
		}
		col := palette[i%len(palette)]
		line.Color, points.Color = col, col
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		if s.Name != "" {
			p.Legend.Add(s.Name, line, points)
		}
		if slices.ContainsFunc(labels, func(l string) bool { return l != "" }) {
			l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
			if err != nil {
				return nil, fmt.Errorf("chart %q: %w", c.Title, err)
			}
			for i := range l.TextStyle {
				l.TextStyle[i].Font.Size = vg.Points(7)
				l.TextStyle[i].XAlign = draw.XCenter
			}
			l.Offset = vg.Point{Y: vg.Points(4)}
			p.Add(l)
		}
		if s.Front {
			front := Front(s.Points)
			if len(front) > 1 {
				fxy := make(plotter.XYs, len(front))
				for i, pt := range front {
					fxy[i] = plotter.XY{X: pt.X, Y: pt.Y}
				}
				fl, err := plotter.NewLine(fxy)
				if err != nil {
					return nil, fmt.Errorf("chart %q: %w", c.Title, err)
				}
				fl.Color = col
				fl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(fl)
				p.Legend.Add(s.Name+" (Pareto front)", fl)
			}
		}
	}
	if n == 0 {
		return nil, ErrNoData
	}
	return render(p)
}

// Front is the Pareto front of points where a higher X and a lower Y are
// better (tokens/s against p99 latency): the points no other point beats
// on both, in increasing X. A point equal to another on both is kept once.
func Front(points []Point) []Point {
	var ps []Point
	for _, p := range points {
		if finite(p.X) && finite(p.Y) {
			ps = append(ps, p)
		}
	}
	// Highest X first; for equal X, lowest Y first: then a point is on the
	// front exactly when its Y is below every Y seen before it.
	slices.SortStableFunc(ps, func(a, b Point) int {
		if a.X != b.X {
			return cmpFloat(b.X, a.X)
		}
		return cmpFloat(a.Y, b.Y)
	})
	var front []Point
	best := math.Inf(1)
	for _, p := range ps {
		if p.Y < best {
			front = append(front, p)
			best = p.Y
		}
	}
	slices.Reverse(front)
	return front
}

// Bars draws one bar per name, in the order given.
func Bars(title, ylabel string, names []string, values []float64) ([]byte, error) {
	if len(names) != len(values) {
		return nil, fmt.Errorf("chart %q: %d names for %d values", title, len(names), len(values))
	}
	var vs plotter.Values
	var ns []string
	for i, v := range values {
		if finite(v) {
			vs = append(vs, v)
			ns = append(ns, names[i])
		}
	}
	if len(vs) == 0 {
		return nil, ErrNoData
	}
	p := newPlot(title, "", ylabel)
	b, err := plotter.NewBarChart(vs, vg.Points(max(8, 240/float64(len(vs)))))
	if err != nil {
		return nil, fmt.Errorf("chart %q: %w", title, err)
	}
	b.Color = palette[0]
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(ns...)
	return render(p)
}

// Span is one step of one attempt on a timeline: its start and end in
// seconds from the attempt's start, and how it ended.
type Span struct {
	Row        string // the attempt: "#3"
	Name       string // the step: "launch.server"
	Start, End float64
	Outcome    string // confirmed, failed, errored, timed_out, interrupted, skipped
}

// outcomeColors are the timeline's colours by outcome; others are grey.
var outcomeColors = map[string]color.Color{
	"confirmed":   palette[2],
	"failed":      palette[1],
	"errored":     palette[3],
	"timed_out":   palette[4],
	"interrupted": palette[5],
}

// Timeline draws each row's spans as boxes on one time axis, rows top to
// bottom in the order they first appear, a box's colour its outcome.
func Timeline(title string, spans []Span) ([]byte, error) {
	var rows []string
	for _, s := range spans {
		if !slices.Contains(rows, s.Row) {
			rows = append(rows, s.Row)
		}
	}
	if len(rows) == 0 {
		return nil, ErrNoData
	}
	p := newPlot(title, "seconds from the attempt's start", "")
	seen := map[string]bool{}
	for _, s := range spans {
		if !finite(s.Start) || !finite(s.End) || s.End < s.Start {
			continue
		}
		y := float64(len(rows) - 1 - slices.Index(rows, s.Row))
		end := max(s.End, s.Start+0.001)
		box, err := plotter.NewPolygon(plotter.XYs{{X: s.Start, Y: y - 0.35}, {X: end, Y: y - 0.35}, {X: end, Y: y + 0.35}, {X: s.Start, Y: y + 0.35}})
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", title, err)
		}
		col, ok := outcomeColors[s.Outcome]
		if !ok {
			col = color.Gray{Y: 170}
		}
		box.Color = col
		box.LineStyle.Color = color.White
		box.LineStyle.Width = vg.Points(0.5)
		p.Add(box)
		if !seen[s.Outcome] && s.Outcome != "" {
			seen[s.Outcome] = true
			p.Legend.Add(strings.ReplaceAll(s.Outcome, "_", " "), box)
		}
	}
	p.NominalY(reversed(rows)...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
	return render(p)
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	return p
}

// render writes p as an SVG element to inline in HTML: the XML prelude
// is dropped, the rest is the <svg> element with its viewBox.
func render(p *plot.Plot) ([]byte, error) {
	c := vgsvg.New(width, height)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("chart %q: %w", p.Title.Text, err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	return out, nil
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
