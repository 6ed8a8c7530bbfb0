package charts_test

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lockstep/views/charts"
)

// elements parses svg as XML and counts its elements by name; the text
// of every <text> is collected.
func elements(t *testing.T, svg []byte) (map[string]int, []string) {
	t.Helper()
	if !strings.HasPrefix(string(svg), "<svg") {
		t.Fatalf("not an inline svg element: %.60q", svg)
	}
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	counts := map[string]int{}
	var texts []string
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			counts[tok.Name.Local]++
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(tok)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return counts, texts
}

func has(texts []string, want string) bool {
	for _, s := range texts {
		if s == want {
			return true
		}
	}
	return false
}

func TestFront(t *testing.T) {
	pts := []charts.Point{
		{X: 100, Y: 10, Label: "c=1"},
		{X: 400, Y: 12, Label: "c=8"},
		{X: 300, Y: 20, Label: "c=16"}, // beaten by c=8 on both
		{X: 900, Y: 40, Label: "c=64"},
		{X: 900, Y: 55, Label: "c=256"}, // same throughput, worse latency
		{X: math.NaN(), Y: 1},
	}
	var got []string
	for _, p := range charts.Front(pts) {
		got = append(got, p.Label)
	}
	if strings.Join(got, ",") != "c=1,c=8,c=64" {
		t.Errorf("front %v, want c=1,c=8,c=64", got)
	}
}

func TestLinesDrawsEverySeriesWithItsFront(t *testing.T) {
	svg, err := charts.Lines(charts.Chart{
		Title: "TTFT p99 against output tokens/s", X: "output tokens/s", Y: "ms",
		Series: []charts.Series{
			{Name: "attempt 3 <b>", Front: true, Points: []charts.Point{{X: 100, Y: 10, Label: "c=1"}, {X: 400, Y: 12, Label: "c=8"}, {X: 300, Y: 20, Label: "c=16"}}},
			{Name: "attempt 4", Points: []charts.Point{{X: 120, Y: 9}, {X: 500, Y: 30}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	counts, texts := elements(t, svg)
	for _, want := range []string{"TTFT p99 against output tokens/s", "attempt 3 <b>", "attempt 3 <b> (Pareto front)", "attempt 4", "c=8", "output tokens/s"} {
		if !has(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	if strings.Contains(string(svg), "<b>") {
		t.Error("a name's markup reached the svg unescaped")
	}
	if counts["path"] < 5 {
		t.Errorf("%d paths: lines and points missing", counts["path"])
	}
	if os.Getenv("CHARTS_OUT") != "" { // a look by eye
		os.WriteFile(filepath.Join(os.Getenv("CHARTS_OUT"), "lines.svg"), svg, 0o644)
	}
}

func TestNothingToDraw(t *testing.T) {
	if _, err := charts.Lines(charts.Chart{Series: []charts.Series{{Points: []charts.Point{{X: math.Inf(1), Y: 1}}}}}); !errors.Is(err, charts.ErrNoData) {
		t.Errorf("lines: %v", err)
	}
	if _, err := charts.Bars("t", "ms", []string{"p50"}, []float64{math.NaN()}); !errors.Is(err, charts.ErrNoData) {
		t.Errorf("bars: %v", err)
	}
	if _, err := charts.Timeline("t", nil); !errors.Is(err, charts.ErrNoData) {
		t.Errorf("timeline: %v", err)
	}
	if _, err := charts.Bars("t", "ms", []string{"a", "b"}, []float64{1}); err == nil {
		t.Error("bars with more names than values drew")
	}
}

func TestBarsAndTimeline(t *testing.T) {
	svg, err := charts.Bars("latency", "ms", []string{"p50", "p90", "p99"}, []float64{1.2, 3.4, 9.9})
	if err != nil {
		t.Fatal(err)
	}
	if _, texts := elements(t, svg); !has(texts, "p99") || !has(texts, "latency") {
		t.Errorf("bars: texts %q", texts)
	}
	svg, err = charts.Timeline("where the time went", []charts.Span{
		{Row: "#1", Name: "launch.server", Start: 0, End: 2, Outcome: "confirmed"},
		{Row: "#1", Name: "wait.ready", Start: 2, End: 60, Outcome: "confirmed"},
		{Row: "#2", Name: "launch.server", Start: 0, End: 1, Outcome: "failed"},
		{Row: "#2", Name: "wait.ready", Start: 1, End: 1, Outcome: "skipped"},
	})
	if err != nil {
		t.Fatal(err)
	}
	counts, texts := elements(t, svg)
	for _, want := range []string{"#1", "#2", "confirmed", "failed", "skipped"} {
		if !has(texts, want) {
			t.Errorf("timeline: no text %q in %q", want, texts)
		}
	}
	if counts["path"] < 4 {
		t.Errorf("timeline: %d paths, want a box per span", counts["path"])
	}
}
