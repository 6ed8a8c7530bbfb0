package runner

import (
	"bytes"
	"encoding/json"

	"github.com/zclconf/go-cty/cty"

	"lockstep/plans"
	"lockstep/runner/events"
)

// minSecret is the shortest sensitive value the scrubber looks for: a
// shorter one ("1", "on") would blank out ordinary text.
const minSecret = 4

// scrubber replaces the text of sensitive values wherever it appears in
// an event: a server that logs its own command line, a probe that reads a
// config file, an error that quotes its input. Marks keep values the plan
// computes redacted; this is the net for what comes back from the world.
type scrubber struct {
	secrets [][]byte // JSON-escaped, without quotes
}

func newScrubber(s *plans.Scope) *scrubber {
	sc := &scrubber{}
	if s == nil {
		return sc
	}
	add := func(v cty.Value) {
		v, marks := v.UnmarkDeep()
		if !hasSensitive(marks) {
			return
		}
		for _, text := range leafStrings(v) {
			if len(text) < minSecret {
				continue
			}
			esc, _ := json.Marshal(text)
			sc.secrets = append(sc.secrets, esc[1:len(esc)-1])
		}
	}
	for _, v := range s.Vars {
		add(v)
	}
	for _, v := range s.Locals {
		add(v)
	}
	return sc
}

// leafStrings lists the primitive values inside v as text.
func leafStrings(v cty.Value) []string {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	if v.Type().IsPrimitiveType() {
		if s, _, err := plain(v); err == nil {
			return []string{s}
		}
		return nil
	}
	var out []string
	if v.CanIterateElements() {
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, leafStrings(e)...)
		}
	}
	return out
}

// scrub returns e with every sensitive value's text replaced by
// "(sensitive)". Events without any are returned as they are.
func (sc *scrubber) scrub(e events.Event) events.Event {
	if len(sc.secrets) == 0 {
		return e
	}
	data, err := json.Marshal(e)
	if err != nil {
		return e
	}
	found := false
	for _, s := range sc.secrets {
		if bytes.Contains(data, s) {
			found = true
			data = bytes.ReplaceAll(data, s, []byte(plans.Redacted))
		}
	}
	if !found {
		return e
	}
	var out events.Event
	if err := json.Unmarshal(data, &out); err != nil {
		return events.Event{Type: events.Warning, Time: e.Time, Message: "an event held a sensitive value and could not be shown"}
	}
	return out
}
