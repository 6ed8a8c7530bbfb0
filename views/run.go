package views

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"lockstep/runner/events"
	"lockstep/terminal"
)

// The run views render the runner's events as they come: JSON lines,
// plain lines, or the live terminal view. Each is an events.Observer.
// None of them decides anything: the exit code comes from the runner's
// result.

var (
	_ events.Observer = (*JSONLines)(nil)
	_ events.Observer = (*Lines)(nil)
	_ events.Observer = (*Live)(nil)
)

// JSONLines prints one JSON object per event (`lockstep run --json`).
type JSONLines struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewJSONLines writes the events to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{enc: json.NewEncoder(w)} }

func (v *JSONLines) Emit(e events.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.enc.Encode(e)
}

// style colours text unless NO_COLOR is set or the output is not a
// terminal.
type style struct{ color bool }

func (s style) wrap(code, text string) string {
	if !s.color {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}
func (s style) green(t string) string { return s.wrap("32", t) }
func (s style) red(t string) string   { return s.wrap("31", t) }
func (s style) dim(t string) string   { return s.wrap("2", t) }
func (s style) bold(t string) string  { return s.wrap("1", t) }
func (s style) yellow(t string) string {
	return s.wrap("33", t)
}

// Lines prints one plain line per event worth a line: for CI logs and
// pipes.
type Lines struct {
	mu           sync.Mutex
	w            io.Writer
	s            style
	lastProgress time.Time
}

// progressEvery is how often the line view reports progress.
const progressEvery = 10 * time.Second

// progressText says how far a step is: a load's counters, or the fraction
// and the log's last line.
func progressText(p *events.Progress) string {
	var parts []string
	if p.Fraction != nil {
		parts = append(parts, fmt.Sprintf("%.0f%%", *p.Fraction*100))
	}
	if p.Done > 0 {
		parts = append(parts, loadText(p))
	}
	if p.LastLine != "" {
		parts = append(parts, terminal.Printable(p.LastLine))
	}
	return "progress: " + strings.Join(parts, ", ") + " (" + elapsed(p.Elapsed) + ")"
}

// loadText is a load's counters.
func loadText(p *events.Progress) string {
	return fmt.Sprintf("%d done, %s/s, %d errors", p.Done, Metric(p.Rate), p.Errors)
}

// NewLines writes the lines to w, in colour if color is set (a terminal,
// without NO_COLOR).
func NewLines(w io.Writer, color bool) *Lines { return &Lines{w: w, s: style{color: color}} }

func (v *Lines) Emit(e events.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.Type == events.Progressed {
		// A long load or wait shows it is alive, every 10 seconds.
		if e.Progress.Done == 0 && e.Progress.Fraction == nil || e.Time.Sub(v.lastProgress) < progressEvery {
			return
		}
		v.lastProgress = e.Time
		fmt.Fprintf(v.w, "%s: %s\n", stepPrefix(e.Step), v.s.dim(progressText(e.Progress)))
		return
	}
	for _, l := range eventLines(e, v.s) {
		fmt.Fprintln(v.w, l)
	}
}

func stepPrefix(st *events.Step) string {
	if st == nil {
		return ""
	}
	if st.Count == 0 {
		return st.Addr
	}
	return fmt.Sprintf("[%d/%d] %s", st.Index+1, st.Count, st.Addr)
}

// eventLines is the plain rendering of an event, shared by the line view
// and the live view's permanent lines.
func eventLines(e events.Event, s style) []string {
	p := stepPrefix(e.Step)
	switch e.Type {
	case events.AttemptStarted:
		line := fmt.Sprintf("lockstep: plan %s, attempt %d", e.Plan, e.Attempt)
		if e.Start != nil && e.Start.Note != "" {
			line += " (" + e.Start.Note + ")"
		}
		if e.Start != nil && len(e.Start.Reconfirm) > 0 {
			line += ", re-confirming " + strings.Join(e.Start.Reconfirm, ", ")
		}
		return []string{s.bold(line)}
	case events.StepStarted:
		what := e.Step.Kind
		if e.Step.Target != "" && e.Step.Target != "local" {
			what += " on " + e.Step.Target
		}
		return []string{fmt.Sprintf("%s: %s", p, s.dim("started ("+what+")"))}
	case events.StepAction:
		a := e.Action
		if e.Host != "" {
			return nil // the fleet step's own action line tells it once
		}
		switch {
		case a.Hosts > 0:
			return []string{fmt.Sprintf("%s: on %d hosts: $ %s", p, a.Hosts, firstLineOf(a.Command))}
		case a.Daemonized:
			return []string{fmt.Sprintf("%s: daemonized into pid %d: %s", p, a.PID, firstLineOf(a.Command))}
		case a.Adopted != nil:
			l := fmt.Sprintf("%s: adopted from attempt %d, pid %d (found by %s): %s", p, a.Adopted.Attempt, a.PID, a.Adopted.Found, firstLineOf(a.Command))
			if a.Log != "" {
				l += s.dim(" (log " + a.Log + ", read from its start)")
			}
			return []string{l}
		case a.PID != 0:
			l := fmt.Sprintf("%s: launched pid %d: %s", p, a.PID, firstLineOf(a.Command))
			if a.Log != "" {
				l += s.dim(" (log " + a.Log + ")")
			}
			if a.MovedLog != "" {
				l += s.dim(", old log moved to " + a.MovedLog)
			}
			return []string{l}
		case a.ExitCode != nil:
			return []string{fmt.Sprintf("%s: exited with status %d", p, *a.ExitCode)}
		default:
			return []string{fmt.Sprintf("%s: $ %s", p, firstLineOf(a.Command))}
		}
	case events.Observed:
		return []string{fmt.Sprintf("%s: %s", p, s.dim("waiting: "+terminal.PrintableCut(e.Observation.Summary, terminal.MaxShownReason)))}
	case events.Progressed:
		return nil
	case events.StepFinished:
		return outcomeLines(p, e.Outcome, s)
	case events.HostFinished:
		return hostLines(p, e.Host, e.Outcome, s)
	case events.ProcessStopped:
		if e.Host != "" {
			return nil // the launch's line for all its hosts tells it
		}
		return []string{fmt.Sprintf("%s: %s", p, e.Cleanup.Result)}
	case events.Warning:
		if e.Step != nil && e.Host != "" {
			return []string{s.yellow("lockstep: warning: " + e.Step.Addr + " on " + e.Host + ": " + e.Message)}
		}
		if e.Step != nil {
			return []string{s.yellow("lockstep: warning: " + e.Step.Addr + ": " + e.Message)}
		}
		return []string{s.yellow("lockstep: warning: " + e.Message)}
	case events.TargetOpened:
		return []string{s.dim(e.Message)}
	case events.AttemptFinished:
		o := e.Outcome
		if o.NotKept != "" {
			return []string{s.red(fmt.Sprintf("not kept: %s %s, but %s", e.Plan, o.Status, o.NotKept))}
		}
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(o.ServedBy)) {
			sv := o.ServedBy[k]
			lines = append(lines, s.yellow(fmt.Sprintf("not this attempt's: %s was answered by pid %d (%s) on %s", k, sv.PID, terminal.PrintableCut(sv.Command, 80), sv.Address)))
		}
		switch o.Status {
		case events.Confirmed:
			return append(lines, s.green(fmt.Sprintf("confirmed: every step of %s held (attempt %d, %s)", e.Plan, e.Attempt, elapsed(o.Duration))))
		case events.Interrupted:
			l := fmt.Sprintf("interrupted: attempt %d of %s stopped after %s", e.Attempt, e.Plan, elapsed(o.Duration))
			if o.Reason != "" {
				l += ": " + o.Reason
			}
			return append(lines, s.red(l))
		}
		l := fmt.Sprintf("failed: %s did not confirm (attempt %d, %s)", o.Failed, e.Attempt, elapsed(o.Duration))
		return append(lines, s.red(l))
	}
	return nil
}

func outcomeLines(p string, o *events.Outcome, s style) []string {
	switch {
	case o.Status == events.Confirmed && len(o.Hosts) > 0:
		return []string{fmt.Sprintf("%s: %s on %s in %s%s", p, s.green("confirmed"), hostCount(o.Hosts), elapsed(o.Duration), hostFailures(o.Hosts))}
	case len(o.Hosts) > 0 && o.Status != events.Skipped:
		lines := []string{fmt.Sprintf("%s: %s after %s (%s): %s", p, s.red(string(o.Status)), elapsed(o.Duration), hostCount(o.Hosts), terminal.PrintableCut(o.Reason, terminal.MaxShownReason))}
		if o.ErrorMessage != "" {
			lines = append(lines, "    "+s.bold(o.ErrorMessage))
		}
		return append(lines, evidenceLines(o.Evidence, o.Reason, s)...)
	}
	switch o.Status {
	case events.Confirmed:
		lines := []string{fmt.Sprintf("%s: %s in %s", p, s.green("confirmed"), elapsed(o.Duration))}
		return append(lines, metricsLines(o.Metrics)...)
	case events.Skipped:
		return []string{fmt.Sprintf("%s: %s", p, s.dim("skipped: "+o.Reason))}
	}
	lines := []string{fmt.Sprintf("%s: %s after %s: %s", p, s.red(string(o.Status)), elapsed(o.Duration), terminal.PrintableCut(o.Reason, terminal.MaxShownReason))}
	if o.ErrorMessage != "" {
		lines = append(lines, "    "+s.bold(o.ErrorMessage))
	}
	if o.Partial && len(o.Metrics) > 0 {
		lines = append(lines, "    partial metrics, measured until the step was cut short:")
		lines = append(lines, metricsLines(o.Metrics)...)
	}
	return append(lines, evidenceLines(o.Evidence, o.Reason, s)...)
}

// evidenceLines shows what decided a failed step, as Terraform shows the
// values behind a failed condition. A condition's error that the outcome's
// reason (told just above) already gives is not given again.
func evidenceLines(ev *events.Evidence, reason string, s style) []string {
	if ev == nil {
		return nil
	}
	var out []string
	for _, c := range ev.Conditions {
		if c.Kind == "abort_if" && c.State == events.CondFalse {
			continue
		}
		mark := map[events.CondState]string{events.CondHeld: "held", events.CondFalse: "false", events.CondNotYet: "not yet", events.CondError: "error"}[c.State]
		l := fmt.Sprintf("    %s %s: %s", c.Kind, s.bold(mark), c.Source)
		if c.Range != "" {
			l += s.dim("  (" + c.Range + ")")
		}
		out = append(out, l)
		if c.Reason != "" && c.State != events.CondHeld && !(c.State == events.CondError && strings.Contains(reason, c.Reason)) {
			out = append(out, "        "+terminal.PrintableCut(c.Reason, terminal.MaxShownReason))
		}
	}
	if len(ev.Values) > 0 {
		out = append(out, "    values:")
		for _, k := range slices.Sorted(maps.Keys(ev.Values)) {
			out = append(out, fmt.Sprintf("      %s = %s", k, terminal.Printable(ev.Values[k])))
		}
	}
	for _, addr := range slices.Sorted(maps.Keys(ev.LogTail)) {
		tail := ev.LogTail[addr]
		if len(tail) == 0 {
			// A daemon that writes its own log file (redis' logfile)
			// leaves the launch's log empty.
			out = append(out, fmt.Sprintf("    %s's log is empty", addr))
			continue
		}
		out = append(out, fmt.Sprintf("    last %d lines of %s's log:", len(tail), addr))
		for _, l := range tail {
			out = append(out, "      | "+terminal.Printable(l))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Output)) {
		out = append(out, fmt.Sprintf("    last %d lines of %s:", len(ev.Output[k]), k))
		for _, l := range ev.Output[k] {
			out = append(out, "      | "+terminal.Printable(l))
		}
	}
	if len(ev.LogTail) == 0 && len(ev.LogLines) > 0 {
		out = append(out, "    log:")
		for _, l := range ev.LogLines {
			out = append(out, "      | "+terminal.Printable(l))
		}
	}
	if len(ev.History) > 1 {
		out = append(out, "    history:")
		for _, h := range ev.History {
			out = append(out, fmt.Sprintf("      %s  %s", h.Time.Format("15:04:05.000"), terminal.PrintableCut(h.Summary, terminal.MaxShownReason)))
		}
	}
	return out
}

// metricsLines shows a step's metrics, sorted, a few to a line.
func metricsLines(m map[string]float64) []string {
	var lines []string
	line := "   "
	for _, k := range slices.Sorted(maps.Keys(m)) {
		part := fmt.Sprintf(" %s=%s", k, Metric(m[k]))
		if len(line)+len(part) > 100 {
			lines = append(lines, line)
			line = "   "
		}
		line += part
	}
	if line != "   " {
		lines = append(lines, line)
	}
	return lines
}

// Live draws, on a terminal, the finished steps as permanent lines and
// the step in progress as one line redrawn in place: a spinner, elapsed
// against timeout, a progress bar when the step has one, and the last log
// line.
type Live struct {
	mu      sync.Mutex
	w       io.Writer
	s       style
	width   func() int
	cur     *events.Step
	started time.Time
	frac    *float64
	last    string
	status  string
	drawn   bool
	stop    chan struct{}
	done    chan struct{}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// NewLive draws on the terminal w, width columns wide (asked at each
// redraw, as the terminal may be resized), in colour if color is set. It
// redraws until Close.
func NewLive(w io.Writer, color bool, width func() int) *Live {
	v := &Live{w: w, s: style{color: color}, width: width, stop: make(chan struct{}), done: make(chan struct{})}
	go v.loop()
	return v
}

func (v *Live) loop() {
	defer close(v.done)
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	for i := 0; ; i++ {
		select {
		case <-v.stop:
			return
		case <-tk.C:
			v.mu.Lock()
			v.redraw(i)
			v.mu.Unlock()
		}
	}
}

// Close stops redrawing and clears the status line.
func (v *Live) Close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
}

func (v *Live) clear() {
	if v.drawn {
		fmt.Fprint(v.w, "\r\x1b[K")
		v.drawn = false
	}
}

func (v *Live) redraw(frame int) {
	if v.cur == nil {
		return
	}
	el := time.Since(v.started)
	line := fmt.Sprintf("%s %s %s", spinner[frame%len(spinner)], stepPrefix(v.cur), elapsed(el))
	if v.cur.Timeout > 0 {
		line += "/" + elapsed(v.cur.Timeout)
	}
	if v.frac != nil {
		const width = 20
		n := int(*v.frac * width)
		line += fmt.Sprintf(" [%s%s] %3.0f%%", strings.Repeat("█", n), strings.Repeat("░", width-n), *v.frac*100)
	}
	// With a progress bar the log's last line says more than the
	// conditions still unmet; without one, the conditions do.
	switch {
	case v.frac != nil && v.last != "":
		line += "  " + v.s.dim(v.last)
	case v.status != "":
		line += "  " + v.status
	case v.last != "":
		line += "  " + v.s.dim(v.last)
	}
	if w := v.width(); w > 10 && len([]rune(line)) > w-1 {
		line = string([]rune(line)[:w-2]) + "…"
	}
	fmt.Fprint(v.w, "\r\x1b[K"+line)
	v.drawn = true
}

func (v *Live) Emit(e events.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e.Type {
	case events.StepStarted:
		v.cur, v.started, v.frac, v.last, v.status = e.Step, e.Time, nil, "", ""
		return
	case events.Progressed:
		v.frac = e.Progress.Fraction
		v.last = terminal.Printable(e.Progress.LastLine)
		if e.Progress.Done > 0 {
			v.last = loadText(e.Progress)
		}
		return
	case events.Observed:
		v.status = terminal.PrintableCut(e.Observation.Summary, terminal.MaxShownReason)
		return
	case events.StepFinished:
		v.cur = nil
	}
	lines := eventLines(e, v.s)
	if len(lines) == 0 {
		return
	}
	v.clear()
	for _, l := range lines {
		fmt.Fprintln(v.w, l)
	}
}

// firstLineOf shortens a multi-line command (a heredoc) to its first line;
// the record keeps it whole.
func firstLineOf(cmd string) string {
	first, rest, ok := strings.Cut(cmd, "\n")
	if !ok {
		return cmd
	}
	return fmt.Sprintf("%s … (%d more lines)", first, strings.Count(rest, "\n")+1)
}
