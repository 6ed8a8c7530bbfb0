package records

import (
	"maps"
	"slices"

	"lockstep/runner/events"
)

// Redacted is how the runner records a sensitive value: it cannot be
// shown, nor compared.
const Redacted = "(sensitive)"

// ChangedVars lists, sorted, the variables whose values differ from the
// plan's defaults (or that have none). A sensitive value cannot be
// compared and is left out.
func ChangedVars(s events.Start) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(s.Vars)) {
		v := s.Vars[name]
		if v == Redacted {
			continue
		}
		if d, ok := s.Defaults[name]; ok && d == v {
			continue
		}
		out = append(out, name)
	}
	return out
}

// State is an attempt's outcome in one word: its status, "running", or
// "unknown".
func (a *Attempt) State() string {
	if a.Running {
		return "running"
	}
	if a.Outcome.Status == events.Unknown {
		return "unknown"
	}
	return string(a.Outcome.Status)
}

// Why is the one line that says why an attempt or step did not confirm:
// the plan's error_message when there is one, else the runner's reason;
// "" when it confirmed.
func Why(o *events.Outcome) string {
	if o == nil || o.Status == events.Confirmed {
		return ""
	}
	if o.ErrorMessage != "" {
		return o.ErrorMessage
	}
	return o.Reason
}

// Verdict is an attempt's outcome in a line: its state, and when it did
// not confirm, the step that failed and why.
func (a *Attempt) Verdict() string {
	l := a.State()
	if w := Why(&a.Outcome); w != "" {
		if a.Outcome.Failed != "" && a.Outcome.Status != events.Interrupted {
			l += " in " + a.Outcome.Failed
		}
		l += ": " + w
	}
	return l
}
