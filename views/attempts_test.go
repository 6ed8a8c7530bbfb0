package views_test

import (
	"bytes"
	"encoding/xml"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"

	"lockstep/runner/events"
	"lockstep/runner/records"
	"lockstep/runner/records/recordstest"
	"lockstep/views"
)

// golden compares got with testdata/attempts/NAME, or rewrites it with
// -update. The records root, a temporary directory, reads as ROOT.
func golden(t *testing.T, root, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, root, "ROOT")
	path := filepath.Join("testdata", "attempts", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", name, got)
	}
}

// fixtureRoot records four attempts of glm5: a baseline, a server that
// dies while loading, a faster configuration on a changed plan, and a run
// killed in wait.ready whose last line is torn.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	record := func(plan string, r recordstest.Run, cut func(events.Event) bool) *records.Writer {
		r.Plan = plan
		w, err := records.Open(root, "glm5")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SavePlan([]byte(plan)); err != nil {
			t.Fatal(err)
		}
		for _, e := range recordstest.Events(r) {
			if cut != nil && cut(e) {
				break
			}
			w.Emit(e)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	record(recordstest.PlanV1, recordstest.Run{Backend: "flashinfer_cutlass", Note: "baseline", Tokens: 4000, P99: 800}, nil)
	record(recordstest.PlanV1, recordstest.Run{Backend: "flashinfer_trtllm", Note: "try trtllm", Dies: true, Start: 10 * 60e9}, nil)
	record(recordstest.PlanV2, recordstest.Run{Backend: "flashinfer_trtllm", Note: "trtllm | longer timeout", Tokens: 5200.5, P99: 612.25, Start: 20 * 60e9}, nil)
	w := record(recordstest.PlanV2, recordstest.Run{Backend: "flashinfer_trtllm", Note: "rerun", Tokens: 1, P99: 1, Start: 30 * 60e9}, func(e events.Event) bool {
		return e.Type == events.StepFinished && e.Step.Addr == "wait.ready"
	})
	f, err := os.OpenFile(filepath.Join(w.Dir(), records.EventsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"observed","ti`)
	f.Close()
	return root
}

func load(t *testing.T, root string, n int) *records.Attempt {
	t.Helper()
	a, err := records.Load(records.AttemptDir(root, "glm5", n))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var formats = map[views.Format]string{views.Text: "txt", views.Markdown: "md", views.JSON: "json"}

func TestRenderingsMatchGoldens(t *testing.T) {
	root := fixtureRoot(t)
	atts, err := records.List(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	for format, ext := range formats {
		t.Run(format.String(), func(t *testing.T) {
			out, err := views.Attempts(records.Tables(atts, nil), format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, root, "table."+ext, out)

			matrix, err := records.LoadAll(root, "glm5", []int{1, 3})
			if err != nil {
				t.Fatal(err)
			}
			out, err = views.Attempts(records.Tables(matrix, nil), format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, root, "matrix-1-3."+ext, out)

			for _, n := range []int{2, 3, 4} {
				out, err := views.Show(load(t, root, n), format)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, root, "show-"+string(rune('0'+n))+"."+ext, out)
			}

			out, err = views.AttemptDiff(load(t, root, 1), load(t, root, 3), format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, root, "diff-1-3."+ext, out)
			out, err = views.AttemptDiff(load(t, root, 2), load(t, root, 4), format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, root, "diff-2-4."+ext, out)
		})
	}
	for _, n := range []int{2, 4} {
		var b bytes.Buffer
		if err := views.JUnit(&b, load(t, root, n)); err != nil {
			t.Fatal(err)
		}
		golden(t, root, "junit-"+string(rune('0'+n))+".xml", b.String())
	}
}

// What a reader checks first, asserted apart from the goldens so that an
// -update cannot bless a regression in them.
func TestTableSaysWhatDiffersAndWhy(t *testing.T) {
	root := fixtureRoot(t)
	atts, _ := records.List(root, "glm5")
	out, err := views.Attempts(records.Tables(atts, nil), views.Text)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || lines[0] != "glm5: 4 attempts" {
		t.Fatalf("table:\n%s", out)
	}
	head := strings.Fields(lines[1])
	for _, col := range []string{"total_tokens_per_s", "output_tokens_per_s", "ttft_p99_ms", "latency_p99_ms"} {
		if !strings.Contains(lines[1], col) {
			t.Errorf("no %s column in %q", col, head)
		}
	}
	if strings.Contains(lines[1], "achieved_concurrency") || strings.Contains(lines[1], "requests_per_s") {
		t.Errorf("more than four key metrics: %q", lines[1])
	}
	checks := []struct {
		row  int
		want []string
		not  []string
	}{
		{2, []string{"confirmed", "baseline", "4000", "800"}, []string{"moe_backend", "api_token"}},
		{3, []string{"moe_backend=flashinfer_trtllm", "failed", "wait.ready", "the server reported an error while loading"}, []string{"api_token"}},
		{4, []string{"moe_backend=flashinfer_trtllm", "confirmed", "5200.5", "612.2"}, nil},
		{5, []string{"interrupted", "wait.ready", "killed in step wait.ready"}, nil},
	}
	for _, c := range checks {
		for _, w := range c.want {
			if !strings.Contains(lines[c.row], w) {
				t.Errorf("row %q lacks %q", lines[c.row], w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(lines[c.row], w) {
				t.Errorf("row %q has %q", lines[c.row], w)
			}
		}
	}
}

func TestShowSaysAKilledRunWasInterrupted(t *testing.T) {
	root := fixtureRoot(t)
	out, err := views.Show(load(t, root, 4), views.Text)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"glm5 attempt 4: interrupted",
		"the run was killed in step wait.ready",
		"2/4 wait.ready on gpu: interrupted",
		"last observations (3 recorded)",
		"3/4 assert.coherent on gpu: not run",
		"its last line was cut short",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

func TestDiffGivesDeltasAndThePlanChange(t *testing.T) {
	root := fixtureRoot(t)
	c := records.Compare(load(t, root, 1), load(t, root, 3))
	if len(c.Variables) != 1 || c.Variables[0] != (records.Change{Name: "moe_backend", A: `"flashinfer_cutlass"`, B: `"flashinfer_trtllm"`}) {
		t.Errorf("variables %+v", c.Variables)
	}
	if len(c.Sensitive) != 1 || c.Sensitive[0] != "api_token" {
		t.Errorf("sensitive %v", c.Sensitive)
	}
	diff := strings.Join(c.PlanDiff, "\n")
	if c.PlanSame || !strings.Contains(diff, `-  timeout = "30m"`) || !strings.Contains(diff, `+  interval = "5s"`) {
		t.Errorf("plan diff:\n%s", diff)
	}
	var tokens *records.MetricChange
	for i, m := range c.Metrics {
		if m.Metric == "total_tokens_per_s" {
			tokens = &c.Metrics[i]
		}
	}
	if tokens == nil || *tokens.Delta != 1200.5 || math.Abs(*tokens.Percent-30.0125) > 1e-9 {
		t.Errorf("total_tokens_per_s change %+v", tokens)
	}
	same := records.Compare(load(t, root, 1), load(t, root, 2))
	if !same.PlanSame || same.PlanDiff != nil {
		t.Errorf("same plan reads changed: %v", same.PlanDiff)
	}
	if same.Steps[1].A != "confirmed" || !strings.HasPrefix(same.Steps[1].B, "failed: the server reported") {
		t.Errorf("wait.ready %+v", same.Steps[1])
	}
}

func TestUnknownFormatIsRefused(t *testing.T) {
	a := &records.Attempt{Plan: "p", Number: 1}
	if _, err := views.ParseFormat("yaml"); err == nil || !strings.Contains(err.Error(), `unknown format "yaml"`) {
		t.Errorf("ParseFormat: %v", err)
	}
	if _, err := views.Attempts(records.Tables([]*records.Attempt{a}, nil), 0); err == nil {
		t.Error("Attempts accepted an unknown format")
	}
	if _, err := views.Show(a, 0); err == nil {
		t.Error("Show accepted an unknown format")
	}
	if _, err := views.AttemptDiff(a, a, 0); err == nil {
		t.Error("AttemptDiff accepted an unknown format")
	}
}

// A sensitive value reaches neither the record nor any rendering, even
// when the runner slips and leaves it in a default or on the command line.
func TestSensitiveValueIsWrittenNowhere(t *testing.T) {
	root := t.TempDir()
	w, err := records.Open(root, "glm5")
	if err != nil {
		t.Fatal(err)
	}
	evs := recordstest.Events(recordstest.Run{Backend: "flashinfer_cutlass", Tokens: 1, P99: 1})
	start := *evs[0].Start
	start.Defaults = map[string]string{"moe_backend": `"flashinfer_cutlass"`, "api_token": `"` + recordstest.Secret + `"`}
	start.Args = []string{"lockstep", "run", "glm5.hcl", "-var", "api_token=" + recordstest.Secret, "-var=api_token=" + recordstest.Secret, "--var", "port=30001"}
	evs[0].Start = &start
	emitAll(t, w, evs)
	if start.Args[4] != "api_token="+recordstest.Secret {
		t.Error("the runner's Start was changed")
	}

	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(recordstest.Secret)) {
				t.Errorf("%s holds the recordstest.Secret", path)
			}
		}
		return nil
	})
	a := load(t, root, 1)
	if got := a.Start.Args; strings.Join(got, " ") != "lockstep run glm5.hcl -var api_token=(sensitive) -var=api_token=(sensitive) --var port=30001" {
		t.Errorf("args %q", got)
	}
	var outs []string
	for format := range formats {
		for _, f := range []func() (string, error){
			func() (string, error) { return views.Attempts(records.Tables([]*records.Attempt{a}, nil), format) },
			func() (string, error) { return views.Show(a, format) },
			func() (string, error) { return views.AttemptDiff(a, a, format) },
		} {
			out, err := f()
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, out)
		}
	}
	var b bytes.Buffer
	views.JUnit(&b, a)
	outs = append(outs, b.String())
	for _, out := range outs {
		if strings.Contains(out, recordstest.Secret) {
			t.Errorf("a rendering holds the recordstest.Secret:\n%s", out)
		}
	}
}

// The JUnit output reads back, with encoding/xml, as the common shape, and
// through go-junit, the parser CI report tools build on.
func TestJUnitParses(t *testing.T) {
	root := fixtureRoot(t)
	var b bytes.Buffer
	if err := views.JUnit(&b, load(t, root, 2)); err != nil {
		t.Fatal(err)
	}

	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Classname string `xml:"classname,attr"`
				Name      string `xml:"name,attr"`
				Time      string `xml:"time,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped   *struct{} `xml:"skipped"`
				SystemOut string    `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("encoding/xml: %v\n%s", err, b.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "glm5 attempt 2" || s.Tests != 4 || s.Failures != 1 || s.Skipped != 2 || len(s.Cases) != 4 {
		t.Errorf("suite %q tests %d failures %d skipped %d cases %d", s.Name, s.Tests, s.Failures, s.Skipped, len(s.Cases))
	}
	wait := s.Cases[1]
	if wait.Classname != "glm5" || wait.Name != "wait.ready" || wait.Time != "23.000" || wait.Failure == nil {
		t.Fatalf("wait.ready case %+v", wait)
	}
	if wait.Failure.Message != "the server reported an error while loading" ||
		!strings.Contains(wait.Failure.Text, "held     abort_if can(regex(") ||
		!strings.Contains(wait.SystemOut, "RuntimeError: CUDA error") {
		t.Errorf("wait.ready failure %+v out %q", wait.Failure, wait.SystemOut)
	}
	if s.Cases[0].Failure != nil || s.Cases[0].Skipped != nil || s.Cases[2].Skipped == nil {
		t.Errorf("launch.server or assert.coherent wrong: %+v %+v", s.Cases[0], s.Cases[2])
	}

	suites, err := junit.IngestReader(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("go-junit: %v", err)
	}
	if len(suites) != 1 {
		t.Fatalf("go-junit: %d suites", len(suites))
	}
	suites[0].Aggregate()
	tot := suites[0].Totals
	if tot.Tests != 4 || tot.Passed != 1 || tot.Failed != 1 || tot.Skipped != 2 || tot.Error != 0 {
		t.Errorf("go-junit totals %+v", tot)
	}
	if got := suites[0].Tests[1]; got.Status != junit.StatusFailed || got.Message != "the server reported an error while loading" || got.Duration.Seconds() != 23 {
		t.Errorf("go-junit wait.ready %+v", got)
	}

	// A log with terminal escapes and a CDATA end still makes valid XML.
	a := load(t, root, 2)
	a.Steps[1].Outcome.Evidence.LogTail["launch.server"] = []string{"\x1b[31mred\x1b[0m", "a ]]> b", "nul\x00"}
	b.Reset()
	if err := views.JUnit(&b, a); err != nil {
		t.Fatal(err)
	}
	doc.Suites = nil
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("encoding/xml on hostile log: %v\n%s", err, b.String())
	}
	if out := doc.Suites[0].Cases[1].SystemOut; !strings.Contains(out, "\uFFFD[31mred") || !strings.Contains(out, "a ]]> b") {
		t.Errorf("hostile log tail reads back as %q", out)
	}

	// The killed attempt: the step it was killed in is an error.
	b.Reset()
	views.JUnit(&b, load(t, root, 4))
	suites, err = junit.IngestReader(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	suites[0].Aggregate()
	if tot := suites[0].Totals; tot.Passed != 1 || tot.Error != 1 || tot.Skipped != 2 {
		t.Errorf("killed attempt totals %+v", tot)
	}
}

// A failed run step shows its command once, also from a record written
// when the exit action repeated it, and the end of its output.
func TestShowGivesACommandOnceAndItsOutput(t *testing.T) {
	code := 3
	out := &events.Outcome{Status: events.Failed, Reason: "the command exited with status 3", Evidence: &events.Evidence{
		Output: map[string][]string{"self.stderr": {"RuntimeError: table users is locked"}, "self.stdout": {"applied 41 of 42"}},
	}}
	for name, actions := range map[string][]events.Action{
		"now":    {{Command: "./migrate.sh"}, {ExitCode: &code}},
		"before": {{Command: "./migrate.sh"}, {Command: "./migrate.sh", ExitCode: &code}},
	} {
		t.Run(name, func(t *testing.T) {
			a := &records.Attempt{Plan: "db", Number: 1, Outcome: events.Outcome{Status: events.Failed, Failed: "run.migrate"}, Steps: []*records.Step{{
				Step:    events.Step{Addr: "run.migrate", Kind: "run", Name: "migrate", Count: 1},
				Status:  events.Failed,
				Actions: actions,
				Outcome: out,
			}}}
			got, err := views.Show(a, views.Text)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(got, "./migrate.sh"); n != 1 {
				t.Errorf("the command is shown %d times:\n%s", n, got)
			}
			for _, want := range []string{"exit code  3", "last lines of self.stderr\n      | RuntimeError: table users is locked\n", "last lines of self.stdout\n      | applied 41 of 42\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("show lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// What a server wrote reaches the reader's terminal as text: its colours,
// cursor moves and \r redraws are not passed on to redraw the show.
func TestShowPrintsNoRawControls(t *testing.T) {
	out := &events.Outcome{Status: events.Failed, Reason: "the server crashed", Evidence: &events.Evidence{
		LogLines: []string{"\x1b[31mTraceback\x1b[0m (most recent call last):"},
		LogTail:  map[string][]string{"launch.server": {"shards:  50%\rshards: 100%\x1b[2K", "bell\a here"}},
	}}
	a := &records.Attempt{Plan: "srv", Number: 1, Outcome: events.Outcome{Status: events.Failed, Failed: "wait.ready"}, Steps: []*records.Step{{
		Step: events.Step{Addr: "wait.ready", Kind: "wait", Name: "ready", Count: 1}, Status: events.Failed, Outcome: out,
	}}}
	for _, format := range []views.Format{views.Text, views.Markdown} {
		got, err := views.Show(a, format)
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexFunc(got, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
			t.Errorf("%s: a raw control character at %d: %q", format, i, got)
		}
		for _, want := range []string{"Traceback (most recent call last):\n", "shards:  50% shards: 100%\n", "bell here\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: show lacks %q:\n%s", format, want, got)
			}
		}
	}
}

func emitAll(t *testing.T, w *records.Writer, evs []events.Event) {
	t.Helper()
	for _, e := range evs {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// A clean interrupt is not a killed run: the step's own reason shows, and
// the metrics it measured are kept and marked partial.
func TestShowAnInterruptedBenchmark(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := events.Step{Addr: "benchmark.load", Kind: "benchmark", Name: "load", Count: 1}
	a := &records.Attempt{Plan: "p", Number: 1, Started: t0, Finished: t0.Add(time.Minute),
		Outcome: events.Outcome{Status: events.Interrupted, Reason: "interrupted by SIGINT (Ctrl-C)", Failed: st.Addr},
		Steps: []*records.Step{{Step: st, Status: events.Interrupted, Started: t0, Finished: t0.Add(time.Minute), Outcome: &events.Outcome{
			Status: events.Interrupted, Reason: "interrupted by SIGINT (Ctrl-C)", Partial: true, Metrics: map[string]float64{"requests_per_s": 812.5},
		}}}}
	out, err := views.Show(a, views.Text)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p attempt 1: interrupted\n", "reason   interrupted by SIGINT (Ctrl-C)", "metrics  partial: what was measured until the step was cut short", "812.5 (partial)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "killed") {
		t.Errorf("a clean interrupt shows as killed:\n%s", out)
	}
	whole := &records.Attempt{Plan: "p", Number: 2, Outcome: events.Outcome{Status: events.Confirmed},
		Steps: []*records.Step{{Step: st, Status: events.Confirmed, Outcome: &events.Outcome{Status: events.Confirmed, Metrics: map[string]float64{"requests_per_s": 1000}}}}}
	if d, err := views.AttemptDiff(a, whole, views.Text); err != nil || !strings.Contains(d, "812.5 (partial)") {
		t.Errorf("diff does not mark the partial value: %v\n%s", err, d)
	}
	table, err := views.Attempts(records.Tables([]*records.Attempt{a}, nil), views.JSON)
	if err != nil || !strings.Contains(table, `"partial_metrics": [`) {
		t.Errorf("table json: %v\n%s", err, table)
	}
}
