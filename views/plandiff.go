package views

import (
	"fmt"
	"strings"

	"lockstep/plans"
)

// PlanDiff renders what plans.Diff found changed from one version of a
// plan to another: a summary line first, then the plan, the steps (in the
// new file order, removed ones last), the variables, locals and targets.
// Markdown is for a pull request comment; JSON is the Changes themselves.
// The output depends only on c.
func PlanDiff(c plans.Changes, f Format) (string, error) {
	return render(f, c, func(d doc) {
		pd := planDiff{d: d}
		pd.summary(c)
		if len(c.Plan) > 0 {
			d.section("Plan")
			for _, ch := range c.Plan {
				pd.change(ch, plans.Modified, true)
			}
		}
		if len(c.Steps) > 0 {
			d.section("Steps")
			for _, s := range c.Steps {
				d.entry(pd.stepHead(s))
				for _, ch := range s.Changes {
					pd.change(ch, s.Kind, false)
				}
			}
		}
		for _, sec := range []struct {
			name    string
			entries []plans.EntryChange
		}{{"Variables", c.Variables}, {"Locals", c.Locals}, {"Targets", c.Targets}} {
			if len(sec.entries) == 0 {
				continue
			}
			d.section(sec.name)
			for _, e := range sec.entries {
				d.entry(d.code(e.Name) + ": " + d.strong(e.Kind.String()))
				for _, ch := range e.Changes {
					pd.change(ch, e.Kind, false)
				}
			}
		}
	})
}

type planDiff struct{ d doc }

func (pd planDiff) summary(c plans.Changes) {
	if c.Empty() {
		line := "No change in steps, conditions or variables"
		if !c.SameSource {
			line += " (the files differ only in layout or comments)"
		}
		pd.d.lead(line + ".")
		return
	}
	pd.d.leadCounts(pd.countsAndHighlights(c))
}

// countsAndHighlights says how many steps, variables, locals and targets
// changed, and then what a reviewer most needs to see: timeouts changed,
// conditions dropped, abort_ifs added, defaults changed.
func (pd planDiff) countsAndHighlights(c plans.Changes) (string, string) {
	r := pd.d
	var parts []string
	if len(c.Plan) > 0 {
		var what []string
		for _, ch := range c.Plan {
			what = append(what, ch.What)
		}
		parts = append(parts, "plan "+strings.Join(what, " and ")+" changed")
	}
	var changed, added, removed, moved int
	for _, s := range c.Steps {
		switch {
		case s.Kind == plans.Added:
			added++
		case s.Kind == plans.Removed:
			removed++
		default:
			if len(s.Changes) > 0 {
				changed++
			}
			if s.Moved {
				moved++
			}
		}
	}
	parts = appendCounts(parts, "step", []int{changed, added, removed, moved}, []string{"changed", "added", "removed", "moved"})
	for _, sec := range []struct {
		noun    string
		entries []plans.EntryChange
	}{{"variable", c.Variables}, {"local", c.Locals}, {"target", c.Targets}} {
		var ch, ad, rm int
		for _, e := range sec.entries {
			switch e.Kind {
			case plans.Added:
				ad++
			case plans.Removed:
				rm++
			default:
				ch++
			}
		}
		parts = appendCounts(parts, sec.noun, []int{ch, ad, rm}, []string{"changed", "added", "removed"})
	}

	var notes []string
	for _, s := range c.Steps {
		if s.Kind != plans.Modified {
			continue
		}
		dropped := map[string]int{}
		newAborts := 0
		for _, ch := range s.Changes {
			switch {
			case ch.What == "target" && ch.Kind == plans.Modified:
				notes = append(notes, fmt.Sprintf("%s now runs on %s instead of %s", r.code(s.Addr), r.code(ch.New), r.code(ch.Old)))
			case ch.What == "timeout" && ch.Kind == plans.Modified:
				now, was := givesUp(ch.New), givesUp(ch.Old)
				if strings.HasPrefix(now, "after ") {
					was = strings.TrimPrefix(was, "after ")
				}
				notes = append(notes, fmt.Sprintf("%s now gives up %s instead of %s", r.code(s.Addr), now, was))
			case (ch.What == "postcondition" || ch.What == "abort_if") && ch.Kind == plans.Removed:
				dropped[ch.What]++
			case ch.What == "abort_if" && ch.Kind == plans.Added:
				newAborts++
			}
		}
		if n := dropped["postcondition"]; n > 0 {
			notes = append(notes, fmt.Sprintf("%s no longer checks %s", r.code(s.Addr), countNoun(n, "postcondition")))
		}
		if n := dropped["abort_if"]; n > 0 {
			notes = append(notes, fmt.Sprintf("%s no longer stops at once on %s", r.code(s.Addr), countNoun(n, "abort_if")))
		}
		if newAborts > 0 {
			notes = append(notes, fmt.Sprintf("%s now also stops at once on %s", r.code(s.Addr), countNoun(newAborts, "new abort_if")))
		}
	}
	for _, v := range c.Variables {
		for _, ch := range v.Changes {
			if ch.What != "default" || ch.Kind != plans.Modified {
				continue
			}
			switch {
			case ch.New == "(sensitive)":
				notes = append(notes, fmt.Sprintf("the default of %s changed (sensitive)", r.code(v.Name)))
			case ch.New == "(none: required)":
				notes = append(notes, fmt.Sprintf("%s is now required (no default)", r.code(v.Name)))
			case ch.Old == "(none: required)":
				notes = append(notes, fmt.Sprintf("%s now defaults to %s (was required)", r.code(v.Name), r.code(ch.New)))
			default:
				notes = append(notes, fmt.Sprintf("%s now defaults to %s instead of %s", r.code(v.Name), r.code(ch.New), r.code(ch.Old)))
			}
		}
	}
	for _, t := range c.Targets {
		for _, ch := range t.Changes {
			if ch.What == "ssh host" && ch.Kind == plans.Modified {
				notes = append(notes, fmt.Sprintf("target %s now connects to %s instead of %s", r.code(t.Name), r.code(ch.New), r.code(ch.Old)))
			}
		}
	}
	const most = 4
	if len(notes) > most {
		notes = append(notes[:most], fmt.Sprintf("%d more below", len(notes)-most))
	}
	return strings.Join(parts, "; "), strings.Join(notes, "; ")
}

// appendCounts adds "3 steps changed, 1 added" for the non-zero counts.
func appendCounts(parts []string, noun string, counts []int, verbs []string) []string {
	var out []string
	for i, n := range counts {
		if n == 0 {
			continue
		}
		if len(out) == 0 {
			out = append(out, countNoun(n, noun)+" "+verbs[i])
		} else {
			out = append(out, fmt.Sprintf("%d %s", n, verbs[i]))
		}
	}
	if len(out) == 0 {
		return parts
	}
	return append(parts, strings.Join(out, ", "))
}

// givesUp turns a timeout as shown ("5m (default)", "none (checks
// once)") into words: "after 5m", "at once".
func givesUp(v string) string {
	if strings.HasPrefix(v, "none") {
		return "at once"
	}
	return "after " + strings.TrimSuffix(v, " (default)")
}

func (pd planDiff) stepHead(s plans.StepChange) string {
	d := pd.d
	switch s.Kind {
	case plans.Added:
		return fmt.Sprintf("%s (step %d): %s", d.code(s.Addr), s.NewPos, d.strong("added"))
	case plans.Removed:
		return fmt.Sprintf("%s (was step %d): %s", d.code(s.Addr), s.OldPos, d.strong("removed"))
	}
	pos := fmt.Sprintf("step %d", s.NewPos)
	if s.OldPos != s.NewPos {
		pos += fmt.Sprintf(", was %d", s.OldPos)
	}
	var what []string
	if len(s.Changes) > 0 {
		what = append(what, d.strong("changed"))
	}
	if s.Moved {
		where := "now runs first"
		if s.After != "" {
			where = "now runs after " + d.code(s.After)
		}
		what = append(what, d.strong("moved")+", "+where)
	}
	return fmt.Sprintf("%s (%s): %s", d.code(s.Addr), pos, strings.Join(what, "; "))
}

// change writes one change under its entry; in an added entry every
// change is a fact of the new thing and says so by not saying "added".
func (pd planDiff) change(ch plans.Change, entry plans.ChangeKind, top bool) {
	d := pd.d
	label, of := ch.What, ""
	kind := ""
	if ch.Kind != plans.Modified && entry == plans.Modified {
		kind = " " + ch.Kind.String()
	}
	if ch.Of != "" {
		// "error_message of `cond` added", not "error_message added of".
		of = " of " + d.code(oneLine(ch.Of)) + kind
	} else {
		label += kind
	}
	value := func(s string) string {
		switch {
		case !ch.Code || s == "" || strings.HasPrefix(s, "(") || strings.HasPrefix(s, "none ("):
			return s
		case strings.HasSuffix(s, " (default)"):
			return d.code(strings.TrimSuffix(s, " (default)")) + " (default)"
		}
		return d.code(s)
	}
	multiline := strings.Contains(ch.Old, "\n") || strings.Contains(ch.New, "\n")
	long := len(ch.Old)+len(ch.New) > 100

	switch {
	case ch.Kind == plans.Modified && ch.Old == ch.New:
		// Both hidden: say that it changed, not what to.
		d.change(top, label, of, ch.New+", changed")
	case ch.Kind == plans.Modified && (multiline || long):
		d.changeBlock(top, label, of, "diff", prefixLines("- ", ch.Old)+"\n"+prefixLines("+ ", ch.New))
	case ch.Kind == plans.Modified:
		d.change(top, label, of, value(ch.Old)+" → "+value(ch.New))
	default:
		v := ch.New
		if ch.Kind == plans.Removed {
			v = ch.Old
		}
		switch {
		case v == "":
			d.change(top, label, of, "")
		case strings.Contains(v, "\n"):
			d.changeBlock(top, label, of, "", v)
		default:
			d.change(top, label, of, value(v))
		}
	}
	if ch.Message != "" {
		d.changeElse(top, ch.Message)
	}
}
