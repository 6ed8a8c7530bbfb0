package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lockstep/runner/events"
)

// Launch is a process a launch step of an earlier attempt started (or
// adopted), as its record keeps it: what a later attempt needs to find it
// again and to be sure it is the same process.
type Launch struct {
	Attempt int
	Step    string // the launch's address: "launch.server"
	Held    events.Held
	Command string    // the command as the record shows it (sensitive parts hidden)
	Since   time.Time // when it was launched: adopted, when its first attempt launched it
	// Adopted is set when the attempt adopted the process rather than
	// started it: Adoption says from where.
	Adopted *events.Adoption
	// Kept: the attempt's end left it running. Stopped: the attempt
	// stopped it (or found it ended). Neither: the record ends first (the
	// run was killed, or still runs).
	Kept, Stopped bool
}

// Launches lists, newest attempt first, the processes the launches of
// plan's attempts under root started or adopted. Only the lines that
// say so are decoded, so that a long history is read in milliseconds.
func Launches(root, plan string) ([]Launch, error) {
	ns, err := Numbers(root, plan)
	if err != nil {
		return nil, err
	}
	slices.Reverse(ns)
	var out []Launch
	for _, n := range ns {
		out = append(out, attemptLaunches(AttemptDir(root, plan, n), n)...)
	}
	return out, nil
}

// ConfirmedStep is the outcome of the step addr in the newest attempt of
// plan under root where it confirmed: what re-confirming a run or a
// benchmark reads instead of acting again. Nil when none did.
func ConfirmedStep(root, plan, addr string) (*events.Outcome, int, error) {
	ns, err := Numbers(root, plan)
	if err != nil {
		return nil, 0, err
	}
	want := []byte(`"addr":` + quote(addr))
	for i := len(ns) - 1; i >= 0; i-- {
		var found *events.Outcome
		eachLine(filepath.Join(AttemptDir(root, plan, ns[i]), EventsFile), func(line []byte) {
			if !bytes.Contains(line, []byte(`"step_finished"`)) || !bytes.Contains(line, want) {
				return
			}
			var e events.Event
			if json.Unmarshal(line, &e) != nil || e.Step == nil || e.Step.Addr != addr || e.Outcome == nil {
				return
			}
			if e.Outcome.Status == events.Confirmed {
				o := *e.Outcome
				found = &o
			}
		})
		if found != nil {
			return found, ns[i], nil
		}
	}
	return nil, 0, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// eachLine calls fn with each line of path (a missing file has none).
func eachLine(path string, fn func([]byte)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
}

func attemptLaunches(dir string, n int) []Launch {
	var out []Launch
	byStep := map[string]int{} // step -> index in out of its latest launch
	eachLine(filepath.Join(dir, EventsFile), func(line []byte) {
		if !bytes.Contains(line, []byte(`"process":`)) && !bytes.Contains(line, []byte(`"process_stopped"`)) {
			return
		}
		var e events.Event
		if json.Unmarshal(line, &e) != nil || e.Step == nil {
			return
		}
		switch {
		case e.Type == events.StepAction && e.Action != nil && e.Action.Process != nil:
			a := e.Action
			if i, ok := byStep[e.Step.Addr]; ok && a.Daemonized {
				// The launch followed its daemon: the daemon is who to
				// find again, the launched process how to reach its log.
				launched := out[i].Held.HeldProcess
				out[i].Held = *a.Process
				if out[i].Held.Launched == nil {
					out[i].Held.Launched = &launched
				}
				return
			}
			l := Launch{Attempt: n, Step: e.Step.Addr, Held: *a.Process, Command: a.Command, Since: e.Time, Adopted: a.Adopted}
			if a.Adopted != nil && !a.Adopted.Since.IsZero() {
				l.Since = a.Adopted.Since
			}
			byStep[e.Step.Addr] = len(out)
			out = append(out, l)
		case e.Type == events.ProcessStopped && e.Cleanup != nil:
			i, ok := byStep[e.Step.Addr]
			if !ok {
				return
			}
			if e.Cleanup.Kept {
				out[i].Kept = true
				if e.Cleanup.Process != nil {
					out[i].Held = *e.Cleanup.Process
				}
			} else {
				out[i].Stopped = true
			}
		}
	})
	return out
}

// Resumed says how the attempt ran part of its plan and what it adopted:
// "--from benchmark.load; adopted pid 812 from 3" (short: a table's
// cell);
// "" for a full run that adopted nothing.
func (a *Attempt) Resumed() string {
	var parts []string
	switch {
	case a.Start.From != "":
		parts = append(parts, "--from "+a.Start.From)
	case len(a.Start.Only) > 0:
		parts = append(parts, "--only "+strings.Join(a.Start.Only, ","))
	}
	for _, s := range a.Steps {
		for _, act := range s.Actions {
			if act.Adopted != nil {
				parts = append(parts, fmt.Sprintf("adopted pid %d from %d", act.Adopted.PID, act.Adopted.Attempt))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// Origin is the attempt that started the process: this one, or the one
// it was adopted from, however many adoptions back.
func (l Launch) Origin() int {
	if l.Adopted != nil && l.Adopted.Attempt > 0 {
		return l.Adopted.Attempt
	}
	return l.Attempt
}
