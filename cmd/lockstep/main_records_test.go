package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/runner/records"
)

const planSrc = `plan "web" {
  description = "serve and measure"
}

variable "workers" {
  default = 2
}
`

// record writes an attempt of plan under root the way the runner would:
// finished (with a benchmark result) unless killed.
func record(t *testing.T, root, plan, workers string, rps float64, killed bool) {
	t.Helper()
	w, err := records.Open(root, plan)
	if err != nil {
		t.Fatal(err)
	}
	w.SavePlan([]byte(planSrc))
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC).Add(time.Duration(w.Number()) * time.Hour)
	steps := []events.Step{
		{Addr: "launch.server", Kind: "launch", Name: "server", Index: 0, Count: 2, Target: "local"},
		{Addr: "benchmark.load", Kind: "benchmark", Name: "load", Index: 1, Count: 2, Target: "local"},
	}
	emit := func(e events.Event) { e.Plan = plan; w.Emit(e) }
	emit(events.Event{Type: events.AttemptStarted, Time: t0, Start: &events.Start{
		PlanFile: "web.hcl", Vars: map[string]string{"workers": workers}, Defaults: map[string]string{"workers": "2"},
		Host: "h", User: "u", Steps: steps,
	}})
	emit(events.Event{Type: events.StepStarted, Time: t0, Step: &steps[0]})
	emit(events.Event{Type: events.StepAction, Time: t0, Step: &steps[0], Action: &events.Action{Command: "./server", PID: 7}})
	emit(events.Event{Type: events.StepFinished, Time: t0.Add(time.Second), Step: &steps[0], Outcome: &events.Outcome{Status: events.Confirmed, Duration: time.Second}})
	emit(events.Event{Type: events.StepStarted, Time: t0.Add(time.Second), Step: &steps[1]})
	if !killed {
		emit(events.Event{Type: events.StepFinished, Time: t0.Add(3 * time.Second), Step: &steps[1], Outcome: &events.Outcome{
			Status: events.Confirmed, Duration: 2 * time.Second, Metrics: map[string]float64{"requests_per_s": rps, "latency_p99_ms": 1000 / rps},
		}})
		emit(events.Event{Type: events.AttemptFinished, Time: t0.Add(3 * time.Second), Outcome: &events.Outcome{Status: events.Confirmed, Duration: 3 * time.Second}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// fixture makes a directory holding web.hcl and its records beside it:
// attempts 1 (defaults), 2 (workers = 4, faster), 3 (killed).
func fixture(t *testing.T) (dir, planFile string) {
	t.Helper()
	dir = t.TempDir()
	planFile = filepath.Join(dir, "web.hcl")
	if err := os.WriteFile(planFile, []byte(planSrc), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, ".lockstep")
	record(t, root, "web", "2", 100, false)
	record(t, root, "web", "4", 180, false)
	record(t, root, "web", "4", 0, true)
	t.Setenv(records.EnvRoot, "")
	return dir, planFile
}

func runAttemptsCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = attemptsCmd(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestAttemptsTableOfAPlanFile(t *testing.T) {
	_, planFile := fixture(t)
	code, out, stderr := runAttemptsCmd(t, planFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "web: 3 attempts" {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(lines[1], "requests_per_s") || !strings.Contains(lines[1], "latency_p99_ms") {
		t.Errorf("header %q lacks the key metrics", lines[1])
	}
	if !strings.Contains(lines[3], "workers=4") || !strings.Contains(lines[3], "180") || strings.Contains(lines[2], "workers=") {
		t.Errorf("rows 1 and 2:\n%s\n%s", lines[2], lines[3])
	}
	if !strings.Contains(lines[4], "interrupted") || !strings.Contains(lines[4], "benchmark.load") {
		t.Errorf("killed attempt row %q", lines[4])
	}
}

func TestAttemptsFindsTheOnlyPlanInTheRecords(t *testing.T) {
	dir, _ := fixture(t)
	t.Chdir(dir)
	code, out, stderr := runAttemptsCmd(t, "show", "last", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var a records.Attempt
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("show --format json: %v\n%s", err, out)
	}
	if a.Plan != "web" || a.Number != 3 || a.Outcome.Status != events.Interrupted || a.InStep != "benchmark.load" {
		t.Errorf("show last: plan %s attempt %d status %s in %s", a.Plan, a.Number, a.Outcome.Status, a.InStep)
	}

	code, out, stderr = runAttemptsCmd(t, "diff", "1", "2", "web", "--format=markdown")
	if code != 0 {
		t.Fatalf("diff exit %d: %s", code, stderr)
	}
	for _, want := range []string{"## web: attempt 1 → attempt 2", "| workers | 2 | 4 |", "| requests_per_s | 100 | 180 | +80 | +80.0% |"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
}

func TestAttemptsRecordsFlagAndEnvironment(t *testing.T) {
	dir, _ := fixture(t)
	root := filepath.Join(dir, ".lockstep")
	t.Chdir(t.TempDir()) // no records here

	code, out, _ := runAttemptsCmd(t)
	if code != 0 || !strings.Contains(out, "no attempts yet") {
		t.Errorf("empty directory: exit %d, %q", code, out)
	}
	code, out, stderr := runAttemptsCmd(t, "--records", root, "show", "2")
	if code != 0 || !strings.HasPrefix(out, "web attempt 2: confirmed\n") {
		t.Errorf("--records: exit %d %s\n%s", code, stderr, out)
	}
	t.Setenv(records.EnvRoot, root)
	code, out, stderr = runAttemptsCmd(t, "--format", "json")
	var rows []records.Row
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 3 {
		t.Errorf("$%s: exit %d %s, %d rows, %v", records.EnvRoot, code, stderr, len(rows), err)
	}
}

func TestAttemptsShowAsJUnit(t *testing.T) {
	_, planFile := fixture(t)
	code, out, stderr := runAttemptsCmd(t, "show", "3", planFile, "--format", "junit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Suites []struct {
			Errors int `xml:"errors,attr"`
			Cases  []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil || len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || len(doc.Suites[0].Cases) != 2 {
		t.Errorf("junit: %v %+v\n%s", err, doc, out)
	}
}

func TestAttemptsErrors(t *testing.T) {
	dir, planFile := fixture(t)
	t.Chdir(dir)
	other := filepath.Join(dir, ".lockstep")
	record(t, other, "api", "2", 1, false)

	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"show", "9", planFile}, 1, "lockstep: plan web has no attempt 9 (attempts: 1-3)\n"},
		{[]string{"show", "1"}, 2, "lockstep: several plans have attempts (api, web): name one\n"},
		{[]string{"show"}, 2, "lockstep: attempts show needs 1 attempt number\n"},
		{[]string{"diff", "1"}, 2, "lockstep: attempts diff needs 2 attempt numbers\n"},
		{[]string{"show", "x"}, 2, `lockstep: "x" is not an attempt number` + "\n"},
		{[]string{"--format", "yaml"}, 2, `lockstep: unknown format "yaml" (want text, markdown or json)` + "\n"},
		{[]string{"--format", "junit"}, 2, "lockstep: --format junit is for attempts show\n"},
		{[]string{"nope"}, 1, "lockstep: nope is neither a plan file nor a plan with attempts in .lockstep (plans: api, web)\n"},
		{[]string{"web", "extra"}, 2, "lockstep: unexpected arguments: extra\n"},
		{[]string{"--bogus"}, 2, "lockstep: flag provided but not defined: -bogus\n"},
	}
	for _, c := range cases {
		code, out, stderr := runAttemptsCmd(t, c.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != c.code || first+"\n" != c.stderr || out != "" {
			t.Errorf("attempts %v: exit %d, stderr %q, stdout %q; want exit %d, %q", c.args, code, stderr, out, c.code, c.stderr)
		}
		if c.code == 2 && !strings.Contains(stderr, "lockstep attempts -h") {
			t.Errorf("attempts %v: no hint to the usage: %q", c.args, stderr)
		}
	}
	// Both plans listed when none is named.
	code, out, _ := runAttemptsCmd(t, "--format", "markdown")
	if code != 0 || !strings.Contains(out, "### api: 1 attempt\n") || !strings.Contains(out, "### web: 3 attempts\n") {
		t.Errorf("all plans: exit %d\n%s", code, out)
	}
	code, out, _ = runAttemptsCmd(t, "-h")
	if code != 0 || !strings.HasPrefix(out, "usage: lockstep attempts") {
		t.Errorf("-h: exit %d %q", code, out)
	}
}

func TestPlanNameFromTheFile(t *testing.T) {
	dir := t.TempDir()
	for file, want := range map[string]string{
		"a.hcl": "plan \"named\" {\n}\n",
		"b.hcl": "step \"run\" \"x\" {\n  command = \"true\"\n}\n",
		"c.hcl": "plan \"broken\" {\n",
		// JSON syntax, as run reads it.
		"d.json": `{"plan": {"from_json": {}}}`,
	} {
		p := filepath.Join(dir, file)
		os.WriteFile(p, []byte(want), 0o600)
	}
	for file, want := range map[string]string{"a.hcl": "named", "b.hcl": "b", "c.hcl": "c", "d.json": "from_json"} {
		if got, err := plans.NameOf(filepath.Join(dir, file)); err != nil || got != want {
			t.Errorf("plans.NameOf(%s) = %q, %v; want %q", file, got, err, want)
		}
	}
}
