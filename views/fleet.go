package views

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"lockstep/runner/events"
	"lockstep/terminal"
)

// A step on a fleet is told compactly: one action line, a line for each
// host that fails (when it fails, with its reason), and one outcome line
// with the count of hosts confirmed and the failing hosts named. Each
// host's evidence is in the record (attempts show).

// hostLines tells one host of a fleet step that ended: nothing for a
// host that confirmed or was stopped because the step had failed anyway.
func hostLines(p, host string, o *events.Outcome, s style) []string {
	if o == nil || o.Status.OK() || hostStopped(o.Status, o.Reason) {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s %s after %s: %s", p, host, s.red(string(o.Status)), elapsed(o.Duration), terminal.PrintableCut(o.Reason, terminal.MaxShownReason))}
}

// hostStopped is a host that did not fail on its own: stopped once the
// step could no longer confirm, or skipped after its leader failed.
func hostStopped(st events.Status, reason string) bool {
	return st == events.Skipped || st == events.Interrupted && strings.HasPrefix(reason, "stopped: ")
}

// hostCount is "7/8 hosts confirmed".
func hostCount(hs []events.HostOutcome) string {
	ok := 0
	for _, h := range hs {
		if h.Status.OK() {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d hosts", ok, len(hs))
}

// hostFailures names the hosts that failed on their own, by status:
// "; failed: n3; timed_out: n5".
func hostFailures(hs []events.HostOutcome) string {
	by := map[events.Status][]string{}
	var order []events.Status
	stopped := 0
	for _, h := range hs {
		switch {
		case h.Status.OK():
			continue
		case hostStopped(h.Status, h.Reason):
			stopped++
			continue
		}
		if _, ok := by[h.Status]; !ok {
			order = append(order, h.Status)
		}
		by[h.Status] = append(by[h.Status], h.Host)
	}
	var b strings.Builder
	for _, st := range order {
		fmt.Fprintf(&b, "; %s: %s", st, strings.Join(by[st], ", "))
	}
	if stopped > 0 {
		fmt.Fprintf(&b, "; %d stopped", stopped)
	}
	return b.String()
}

// showHosts is a fleet step's hosts in attempts show: a table of each
// host's outcome and outputs, then each host's evidence.
func showHosts(p doc, hs []events.HostOutcome) {
	g := &grid{head: []string{"host", "rank", "outcome", "took", "reason", "outputs"}}
	for _, h := range hs {
		var outs []string
		for _, k := range slices.Sorted(maps.Keys(h.Outputs)) {
			outs = append(outs, k+"="+h.Outputs[k])
		}
		reason := h.Reason
		if h.ErrorMessage != "" {
			reason = h.ErrorMessage + ": " + reason
		}
		g.add(h.Host, strconv.Itoa(h.Rank), string(h.Status), took(h.Duration), terminal.PrintableCut(reason, terminal.MaxShownReason), strings.Join(outs, " "))
	}
	p.table(g)
	for _, h := range hs {
		if h.Evidence != nil && !hostStopped(h.Status, h.Reason) {
			showEvidence(p, h.Host+": ", h.Evidence)
		}
		if len(h.Left) > 0 {
			p.fields(h.Host+": left running", leftLine(h.Left))
		}
	}
}
