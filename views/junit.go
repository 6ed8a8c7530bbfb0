package views

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// The JUnit XML shape CI systems read (Jenkins, GitLab, GitHub actions
// that publish test reports): testsuites > testsuite > testcase, with
// failure, error and skipped children.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  *junitText      `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitText is text kept readable in a CDATA section.
type junitText struct {
	Text string `xml:",cdata"`
}

func outText(s string) *junitText {
	if s == "" {
		return nil
	}
	return &junitText{xmlSafe(s)}
}

// xmlSafe replaces what XML 1.0 cannot carry at all (a log's terminal
// escapes, NULs), which a CDATA section does not escape.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t', r == '\n', r == '\r',
			r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// JUnit renders attempts as JUnit XML: one testsuite per attempt (a
// matrix run gives several), one testcase per step (classname the plan,
// name the step's address, time in seconds).
// A step that failed, aborted or timed out is a failure carrying the
// plan's error_message and the evidence; one lockstep could not evaluate,
// or that the run was interrupted in, is an error; one not run is
// skipped. Log lines and log tails go to system-out.
func JUnit(w io.Writer, recs ...*records.Attempt) error {
	root := junitSuites{Name: "lockstep"}
	var took time.Duration
	for _, rec := range recs {
		s := junitSuiteOf(rec)
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Skipped += s.Skipped
		took += rec.Duration()
		root.Suites = append(root.Suites, s)
	}
	root.Time = seconds(took)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// junitSuiteOf is one attempt as a testsuite.
func junitSuiteOf(rec *records.Attempt) junitSuite {
	s := junitSuite{
		Name:      fmt.Sprintf("%s attempt %d", rec.Plan, rec.Number),
		Time:      seconds(rec.Duration()),
		Hostname:  rec.Start.Host,
		SystemOut: outText(suiteOut(rec)),
	}
	if !rec.Started.IsZero() {
		s.Timestamp = rec.Started.Format(time.RFC3339)
	}
	prop := func(name, value string) {
		if value != "" {
			s.Properties = append(s.Properties, junitProperty{name, value})
		}
	}
	prop("attempt", fmt.Sprint(rec.Number))
	prop("outcome", rec.State())
	prop("note", rec.Start.Note)
	prop("plan_file", rec.Start.PlanFile)
	prop("plan_sha256", rec.Start.PlanSHA256)
	prop("user", rec.Start.User)
	prop("command", strings.Join(rec.Start.Args, " "))
	for _, name := range slices.Sorted(maps.Keys(rec.Start.Vars)) {
		prop("var."+name, rec.Start.Vars[name])
	}
	for _, st := range rec.Steps {
		c := junitCase{Classname: rec.Plan, Name: st.Addr, SystemOut: outText(stepOut(st))}
		if st.Outcome != nil {
			c.Time = seconds(st.Outcome.Duration)
		} else {
			c.Time = seconds(0)
		}
		state := st.State(rec)
		switch {
		case st.Outcome != nil && st.Status.OK():
		case st.Status == events.Failed, st.Status == events.Aborted, st.Status == events.TimedOut:
			c.Failure = &junitProblem{Message: records.Why(st.Outcome), Type: string(st.Status), Text: xmlSafe(evidenceText(st))}
			s.Failures++
		case st.Status == events.Errored, state == string(events.Interrupted), st.Status == events.Interrupted:
			msg := records.Why(st.Outcome)
			if st.Outcome == nil {
				msg = "the run was killed in this step"
			}
			c.Error = &junitProblem{Message: msg, Type: state, Text: xmlSafe(evidenceText(st))}
			s.Errors++
		default: // skipped, not run, running
			msg := state
			if st.Outcome != nil && st.Outcome.Reason != "" {
				msg = st.Outcome.Reason
			}
			c.Skipped = &junitSkipped{Message: msg}
			s.Skipped++
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	return s
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// evidenceText is what decided a step, as the body of its failure.
func evidenceText(st *records.Step) string {
	var b strings.Builder
	o := st.Outcome
	if o != nil && o.Reason != "" {
		b.WriteString(o.Reason + "\n")
	}
	if o == nil || o.Evidence == nil {
		if n := len(st.Observations); n > 0 {
			b.WriteString("last observed: " + st.Observations[n-1].Summary + "\n")
			for _, c := range st.Observations[n-1].Conditions {
				b.WriteString(condLine(c) + "\n")
			}
		}
		return b.String()
	}
	ev := o.Evidence
	for _, c := range ev.Conditions {
		b.WriteString(condLine(c) + "\n")
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Values)) {
		b.WriteString(k + " = " + ev.Values[k] + "\n")
	}
	if len(ev.History) > 0 {
		b.WriteString("history:\n")
		for _, h := range ev.History {
			b.WriteString("  " + h.Time.Format("15:04:05") + "  " + h.Summary + "\n")
		}
	}
	return b.String()
}

// stepOut is a step's commands and logs, for its system-out.
func stepOut(st *records.Step) string {
	var b strings.Builder
	for _, a := range st.Actions {
		if a.Command != "" {
			b.WriteString("$ " + a.Command + "\n")
		}
		if l := processLine(a); l != "" {
			b.WriteString(l + "\n")
		}
	}
	if st.Outcome != nil && len(st.Outcome.Metrics) > 0 {
		if st.Outcome.Partial {
			b.WriteString("partial metrics: what was measured until the step was cut short\n")
		}
		for _, k := range slices.Sorted(maps.Keys(st.Outcome.Metrics)) {
			b.WriteString(k + " = " + Metric(st.Outcome.Metrics[k]) + "\n")
		}
	}
	if st.Outcome != nil && st.Outcome.Evidence != nil {
		ev := st.Outcome.Evidence
		if len(ev.LogLines) > 0 {
			b.WriteString("log lines:\n" + strings.Join(ev.LogLines, "\n") + "\n")
		}
		for _, addr := range slices.Sorted(maps.Keys(ev.LogTail)) {
			b.WriteString("log tail of " + addr + ":\n" + strings.Join(ev.LogTail[addr], "\n") + "\n")
		}
		for _, k := range slices.Sorted(maps.Keys(ev.Output)) {
			b.WriteString("last lines of " + k + ":\n" + strings.Join(ev.Output[k], "\n") + "\n")
		}
	}
	for _, c := range st.Cleanups {
		b.WriteString(fmt.Sprintf("cleanup: pid %d %s\n", c.PID, c.Result))
	}
	return b.String()
}

// suiteOut says how the attempt ended and what it warned about.
func suiteOut(a *records.Attempt) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("%s attempt %d: %s\n", a.Plan, a.Number, a.Verdict()))
	for _, w := range a.Warnings {
		b.WriteString("warning: " + w.Message + "\n")
	}
	return b.String()
}
