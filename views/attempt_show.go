package views

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"lockstep/runner/events"
	"lockstep/runner/records"
)

// historyShown is how many recorded observations show lists for a step
// that ended without evidence (the run was killed in it).
const historyShown = 8

// Show renders one attempt whole: what ran, where, with which variables;
// each step's action, outcome, evidence, waiting history and log tails;
// the metrics; what was cleaned up; the warnings. JSON is the Attempt.
func Show(a *records.Attempt, f Format) (string, error) {
	return render(f, a, func(p doc) { show(p, a) })
}

func show(p doc, a *records.Attempt) {
	p.heading(1, fmt.Sprintf("%s attempt %d: %s", a.Plan, a.Number, a.State()))
	switch {
	case a.Running:
		p.line("still running" + inStep(a))
	case a.Outcome.Status != events.Confirmed:
		p.line(whyLine(a.Outcome.Failed, &a.Outcome))
	}
	p.fields(
		"note", a.Start.Note,
		"ran", a.Resumed(),
		"started", stamp(a),
		"took", tookLine(a),
		"plan", planLine(a.Start),
		"command", strings.Join(a.Start.Args, " "),
		"lockstep", a.Start.Lockstep,
		"record", a.Dir,
	)
	if a.Torn || a.Unreadable > 0 {
		p.line(damageLine(a))
	}
	if len(a.Targets) > 0 {
		p.heading(2, "targets")
		p.list("", a.Targets)
	}

	if len(a.Start.Vars) > 0 {
		p.heading(2, "variables")
		g := &grid{head: []string{"name", "value", "default"}}
		for _, name := range slices.Sorted(maps.Keys(a.Start.Vars)) {
			v := a.Start.Vars[name]
			d, ok := a.Start.Defaults[name]
			switch {
			case v == records.Redacted:
				d = ""
			case !ok:
				d = "(none)"
			case d == v:
				d = "(same)"
			}
			g.add(name, v, d)
		}
		p.table(g)
	}

	p.heading(2, "steps")
	for _, s := range a.Steps {
		showStep(p, a, s)
	}

	if ms := records.MetricsOf([]*records.Attempt{a}); len(ms) > 0 {
		p.heading(2, "metrics")
		g := &grid{head: []string{"step", "metric", "value", "spread"}, right: []bool{false, false, true, false}}
		for _, m := range ms {
			v, _ := m.Value(a)
			g.add(m.Step, m.Name, metricCell(m, a, v), spread(a, m))
		}
		p.table(g)
	}

	for _, s := range a.Steps {
		if s.Outcome == nil || len(s.Outcome.Levels) == 0 {
			continue
		}
		p.heading(2, "levels of "+s.Addr)
		cols := records.LevelColumns(s.Outcome.Levels)
		g := &grid{head: append([]string{"#", "level"}, cols...), right: []bool{true, false}}
		for range cols {
			g.right = append(g.right, true)
		}
		for i, l := range s.Outcome.Levels {
			mark := ""
			if s.Outcome.Best != nil && *s.Outcome.Best == i {
				mark = " (best)"
			}
			if l.Partial {
				mark += " (partial)"
			}
			row := []string{strconv.Itoa(i + 1), records.LevelLabel(l) + goodMark(l.Good) + mark}
			for _, c := range cols {
				v, ok := l.Metrics[c]
				row = append(row, optNum(ptrIf(v, ok)))
			}
			g.add(row...)
		}
		p.table(g)
	}

	if len(a.Warnings) > 0 {
		p.heading(2, "warnings")
		var lines []string
		for _, w := range a.Warnings {
			l := w.Time.Format("15:04:05") + "  "
			if w.Step != "" {
				l += w.Step + ": "
			}
			lines = append(lines, l+w.Message)
		}
		p.list("", lines)
	}
}

func showStep(p doc, a *records.Attempt, s *records.Step) {
	head := fmt.Sprintf("%d/%d %s", s.Index+1, max(s.Count, len(a.Steps)), s.Addr)
	if s.Target != "" {
		head += " on " + s.Target
	}
	state := s.State(a)
	head += ": " + state
	if s.Outcome != nil && s.Status != events.Skipped {
		head += " after " + took(s.Outcome.Duration)
	}
	p.heading(3, head)

	o := s.Outcome
	var reason, message string
	if o != nil {
		reason, message = o.Reason, o.ErrorMessage
	}
	if state == string(events.Interrupted) && o == nil {
		// No outcome: the run died in this step (SIGKILL, a crash). A
		// clean interrupt records its own reason ("interrupted by SIGINT").
		reason = "the run was killed in this step"
	}
	kv := []string{
		"about", s.Description,
		"error", message,
		"reason", reason,
	}
	for i, act := range s.Actions {
		ran := act.Command
		if i > 0 && act.ExitCode != nil && ran == s.Actions[i-1].Command {
			// Records written before the exit action stopped repeating
			// the command: show it once.
			ran = ""
		}
		kv = append(kv,
			"ran", ran,
			"process", processLine(act),
			"exit code", exitCode(act.ExitCode),
		)
	}
	if o != nil && len(o.Outputs) > 0 {
		var outs []string
		for _, k := range slices.Sorted(maps.Keys(o.Outputs)) {
			outs = append(outs, k+"="+o.Outputs[k])
		}
		kv = append(kv, "outputs", strings.Join(outs, " "))
	}
	if o != nil && len(o.Left) > 0 {
		kv = append(kv, "left running", leftLine(o.Left))
	}
	if s.Progress != nil && o == nil {
		kv = append(kv, "progress", progressLine(s.Progress))
	}
	if o != nil && o.Partial {
		kv = append(kv, "metrics", "partial: what was measured until the step was cut short")
	}
	p.fields(kv...)
	if o != nil && len(o.Notes) > 0 {
		var notes []string
		for _, k := range slices.Sorted(maps.Keys(o.Notes)) {
			notes = append(notes, k+": "+o.Notes[k])
		}
		p.list("notes", notes)
	}

	var ev *events.Evidence
	if o != nil {
		ev = o.Evidence
	}
	if ev != nil {
		var conds []string
		for _, c := range ev.Conditions {
			conds = append(conds, condLine(c))
		}
		p.list("evidence", conds)
		var vals []string
		for _, k := range slices.Sorted(maps.Keys(ev.Values)) {
			vals = append(vals, k+" = "+ev.Values[k])
		}
		p.list("values read", vals)
		var hist []string
		for _, h := range ev.History {
			hist = append(hist, h.Time.Format("15:04:05")+"  "+h.Summary)
		}
		p.list("history", hist)
		for _, k := range slices.Sorted(maps.Keys(ev.Output)) {
			p.verbatim("last lines of "+k, "", ev.Output[k])
		}
		p.verbatim("log lines", "", ev.LogLines)
		for _, addr := range slices.Sorted(maps.Keys(ev.LogTail)) {
			p.verbatim("log tail of "+addr, "", ev.LogTail[addr])
		}
	} else if len(s.Observations) > 0 {
		// No evidence (the step did not end): what was last seen.
		obs := s.Observations[max(0, len(s.Observations)-historyShown):]
		var hist []string
		for _, h := range obs {
			hist = append(hist, h.Time.Format("15:04:05")+"  "+h.Summary)
		}
		p.list(fmt.Sprintf("last observations (%d recorded)", len(s.Observations)), hist)
		last := s.Observations[len(s.Observations)-1]
		var conds []string
		for _, c := range last.Conditions {
			conds = append(conds, condLine(c))
		}
		p.list("conditions when last observed", conds)
	}
	for _, c := range s.Cleanups {
		p.fields("cleanup", fmt.Sprintf("pid %d: %s", c.PID, c.Result))
	}
}

func condLine(c events.Condition) string {
	state := string(c.State)
	switch c.State {
	case events.CondNotYet:
		state = "not yet"
	case events.CondError:
		state = "error"
	case events.CondUnknown:
		state = "unknown"
	}
	l := fmt.Sprintf("%-7s  ", state)
	if c.Kind == "abort_if" {
		l += "abort_if "
	}
	l += c.Source
	if c.Reason != "" {
		l += "  (" + c.Reason + ")"
	}
	if c.Range != "" {
		l += "  at " + c.Range
	}
	if c.ErrorMessage != "" && c.State != events.CondHeld || c.Kind == "abort_if" && c.ErrorMessage != "" {
		l += `  "` + c.ErrorMessage + `"`
	}
	return l
}

func processLine(act events.Action) string {
	var parts []string
	if act.PID != 0 {
		parts = append(parts, "pid "+strconv.Itoa(act.PID))
	}
	if act.PGID != 0 {
		parts = append(parts, "pgid "+strconv.Itoa(act.PGID))
	}
	if act.Log != "" {
		l := "log " + act.Log
		if act.MovedLog != "" {
			l += " (the previous log moved to " + act.MovedLog + ")"
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, ", ")
}

// leftLine names what a step's command left running: "pid 123
// (redis-server *:6379), pid 124 (sleep 99)"; what became of them is the
// step's cleanup line.
func leftLine(ps []events.LeftProcess) string {
	var parts []string
	for _, p := range ps {
		l := "pid " + strconv.Itoa(p.PID)
		if p.Command != "" {
			l += " (" + p.Command + ")"
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, ", ")
}

func exitCode(c *int) string {
	if c == nil {
		return ""
	}
	return strconv.Itoa(*c)
}

func progressLine(pr *events.Progress) string {
	var parts []string
	if pr.Fraction != nil {
		parts = append(parts, fmt.Sprintf("%.0f%%", *pr.Fraction*100))
	}
	if pr.Done > 0 {
		parts = append(parts, fmt.Sprintf("%d done", pr.Done))
	}
	if pr.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d errors", pr.Errors))
	}
	if pr.LastLine != "" {
		parts = append(parts, strconv.Quote(pr.LastLine))
	}
	parts = append(parts, "at "+took(pr.Elapsed))
	return strings.Join(parts, ", ")
}

// spread says how a repeated metric varied.
func spread(a *records.Attempt, m records.Metric) string {
	for _, s := range a.Steps {
		if s.Addr != m.Step || s.Outcome == nil {
			continue
		}
		st, ok := s.Outcome.Stats[m.Name]
		if !ok {
			return ""
		}
		return fmt.Sprintf("median of %d, min %s, max %s, stddev %s", len(st.Values), Metric(st.Min), Metric(st.Max), Metric(st.Stddev))
	}
	return ""
}

func whyLine(step string, o *events.Outcome) string {
	if o.ErrorMessage == "" {
		if step == "" || strings.Contains(o.Reason, step) {
			return o.Reason
		}
		return step + ": " + o.Reason
	}
	l := o.ErrorMessage
	if step != "" {
		l = step + ": " + l
	}
	if o.Reason != "" {
		l += " (" + o.Reason + ")"
	}
	return l
}

func inStep(a *records.Attempt) string {
	if a.InStep != "" {
		return ", in step " + a.InStep
	}
	return ""
}

func stamp(a *records.Attempt) string {
	if a.Started.IsZero() {
		return ""
	}
	l := a.Started.Format("2006-01-02 15:04:05 -0700")
	if a.Start.Host != "" {
		l += " on " + a.Start.Host
	}
	if a.Start.User != "" {
		l += " as " + a.Start.User
	}
	return l
}

func tookLine(a *records.Attempt) string {
	d := a.Duration()
	switch {
	case a.Running:
		return ""
	case a.Incomplete && d > 0:
		return took(d) + " until its last recorded event"
	case d > 0:
		return took(d)
	}
	return ""
}

func planLine(s events.Start) string {
	l := s.PlanFile
	if s.PlanSHA256 != "" {
		l += " (sha256 " + short(s.PlanSHA256) + ")"
	}
	return strings.TrimSpace(l)
}

func damageLine(a *records.Attempt) string {
	var parts []string
	if a.Torn {
		parts = append(parts, "its last line was cut short")
	}
	if a.Unreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d unreadable line%s skipped", a.Unreadable, plural(a.Unreadable)))
	}
	return "the record is damaged: " + strings.Join(parts, "; ")
}

func ptrIf(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}
