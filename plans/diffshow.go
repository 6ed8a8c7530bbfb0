package plans

import (
	"bytes"
	"fmt"
	"strings"
)

// ExplainDiff compares two plans (see Diff) and renders the changes:
// format "text" for a terminal, "markdown" for a pull request comment.
func ExplainDiff(old, new *Plan, format string) (string, error) {
	c := Diff(old, new)
	return c.Render(format)
}

// Render writes the changes as "text" or "markdown": a summary line
// first, then the plan, the steps (in the new file order, removed ones
// last), the variables, locals and targets. The output depends only on c.
func (c *Changes) Render(format string) (string, error) {
	var r diffRenderer
	switch format {
	case "text", "":
		r = diffRenderer{code: func(s string) string { return s }}
	case "markdown", "md":
		r = diffRenderer{md: true, code: mdCode}
	default:
		return "", fmt.Errorf("unknown explain format %q (want text or markdown)", format)
	}
	r.summary(c)
	if len(c.Plan) > 0 {
		r.section("Plan")
		for _, ch := range c.Plan {
			r.change(ch, Modified, true)
		}
	}
	if len(c.Steps) > 0 {
		r.section("Steps")
		for _, s := range c.Steps {
			r.entry(r.stepHead(s), s.Kind, s.Changes)
		}
	}
	for _, sec := range []struct {
		name    string
		entries []EntryChange
	}{{"Variables", c.Variables}, {"Locals", c.Locals}, {"Targets", c.Targets}} {
		if len(sec.entries) == 0 {
			continue
		}
		r.section(sec.name)
		for _, e := range sec.entries {
			r.entry(r.code(e.Name)+": "+r.status(e.Kind.String()), e.Kind, e.Changes)
		}
	}
	return r.b.String(), nil
}

// Summary is the one line that opens the rendering, in plain text:
// "3 steps changed, 1 added; wait.ready now gives up after 30s instead
// of 5m."
func (c *Changes) Summary() string {
	r := diffRenderer{code: func(s string) string { return s }}
	return r.summaryLine(c)
}

type diffRenderer struct {
	b    bytes.Buffer
	md   bool
	code func(string) string
}

func (r *diffRenderer) summary(c *Changes) {
	line := r.summaryLine(c)
	if r.md && !c.Empty() {
		// Bold the counts, not the details after them.
		counts, rest := countsAndHighlights(c, r)
		line = "**" + upperFirst(counts) + "**"
		if rest != "" {
			line += "; " + rest
		}
		line += "."
	}
	r.b.WriteString(line + "\n")
}

func (r *diffRenderer) summaryLine(c *Changes) string {
	if c.Empty() {
		line := "No change in steps, conditions or variables"
		if !c.SameSource {
			line += " (the files differ only in layout or comments)"
		}
		return line + "."
	}
	counts, rest := countsAndHighlights(c, r)
	if rest != "" {
		counts += "; " + rest
	}
	return upperFirst(counts) + "."
}

// countsAndHighlights says how many steps, variables, locals and targets
// changed, and then what a reviewer most needs to see: timeouts changed,
// conditions dropped, abort_ifs added, defaults changed.
func countsAndHighlights(c *Changes, r *diffRenderer) (string, string) {
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
		case s.Kind == Added:
			added++
		case s.Kind == Removed:
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
		entries []EntryChange
	}{{"variable", c.Variables}, {"local", c.Locals}, {"target", c.Targets}} {
		var ch, ad, rm int
		for _, e := range sec.entries {
			switch e.Kind {
			case Added:
				ad++
			case Removed:
				rm++
			default:
				ch++
			}
		}
		parts = appendCounts(parts, sec.noun, []int{ch, ad, rm}, []string{"changed", "added", "removed"})
	}

	var notes []string
	for _, s := range c.Steps {
		if s.Kind != Modified {
			continue
		}
		dropped := map[string]int{}
		newAborts := 0
		for _, ch := range s.Changes {
			switch {
			case ch.What == "target" && ch.Kind == Modified:
				notes = append(notes, fmt.Sprintf("%s now runs on %s instead of %s", r.code(s.Addr), r.code(ch.New), r.code(ch.Old)))
			case ch.What == "timeout" && ch.Kind == Modified:
				now, was := givesUp(ch.New), givesUp(ch.Old)
				if strings.HasPrefix(now, "after ") {
					was = strings.TrimPrefix(was, "after ")
				}
				notes = append(notes, fmt.Sprintf("%s now gives up %s instead of %s", r.code(s.Addr), now, was))
			case (ch.What == "postcondition" || ch.What == "abort_if") && ch.Kind == Removed:
				dropped[ch.What]++
			case ch.What == "abort_if" && ch.Kind == Added:
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
			if ch.What != "default" || ch.Kind != Modified {
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
			if ch.What == "ssh host" && ch.Kind == Modified {
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

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// givesUp turns a timeout as shown ("5m (default)", "none (checks
// once)") into words: "after 5m", "at once".
func givesUp(v string) string {
	if strings.HasPrefix(v, "none") {
		return "at once"
	}
	return "after " + strings.TrimSuffix(v, " (default)")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (r *diffRenderer) section(name string) {
	if r.md {
		fmt.Fprintf(&r.b, "\n#### %s\n\n", name)
		return
	}
	fmt.Fprintf(&r.b, "\n%s\n", name)
}

func (r *diffRenderer) status(s string) string {
	if r.md {
		return "**" + s + "**"
	}
	return s
}

func (r *diffRenderer) stepHead(s StepChange) string {
	switch s.Kind {
	case Added:
		return fmt.Sprintf("%s (step %d): %s", r.code(s.Addr), s.NewPos, r.status("added"))
	case Removed:
		return fmt.Sprintf("%s (was step %d): %s", r.code(s.Addr), s.OldPos, r.status("removed"))
	}
	pos := fmt.Sprintf("step %d", s.NewPos)
	if s.OldPos != s.NewPos {
		pos += fmt.Sprintf(", was %d", s.OldPos)
	}
	var what []string
	if len(s.Changes) > 0 {
		what = append(what, r.status("changed"))
	}
	if s.Moved {
		where := "now runs first"
		if s.After != "" {
			where = "now runs after " + r.code(s.After)
		}
		what = append(what, r.status("moved")+", "+where)
	}
	return fmt.Sprintf("%s (%s): %s", r.code(s.Addr), pos, strings.Join(what, "; "))
}

// entry writes a step, variable, local or target and its changes.
func (r *diffRenderer) entry(head string, kind ChangeKind, changes []Change) {
	if r.md {
		fmt.Fprintf(&r.b, "- %s\n", head)
	} else {
		fmt.Fprintf(&r.b, "  %s\n", head)
	}
	for _, ch := range changes {
		r.change(ch, kind, false)
	}
}

// change writes one change under its entry; in an added entry every
// change is a fact of the new thing and says so by not saying "added".
func (r *diffRenderer) change(ch Change, entry ChangeKind, top bool) {
	label, of := ch.What, ""
	kind := ""
	if ch.Kind != Modified && entry == Modified {
		kind = " " + ch.Kind.String()
	}
	if ch.Of != "" {
		// "error_message of `cond` added", not "error_message added of".
		of = " of " + r.code(strings.Join(strings.Fields(ch.Of), " ")) + kind
	} else {
		label += kind
	}
	pad, inner := "    ", "      "
	switch {
	case r.md && top:
		pad, inner = "- ", "  "
	case r.md:
		pad, inner = "  - ", "    "
	case top:
		pad, inner = "  ", "    "
	}
	head := pad + label + of + ":"
	if r.md {
		head = pad + "**" + label + "**" + of + ":"
		if of == "" {
			head = pad + "**" + label + ":**"
		}
	}

	value := func(s string) string {
		switch {
		case !ch.Code || s == "" || strings.HasPrefix(s, "(") || strings.HasPrefix(s, "none ("):
			return s
		case strings.HasSuffix(s, " (default)"):
			return r.code(strings.TrimSuffix(s, " (default)")) + " (default)"
		}
		return r.code(s)
	}
	multiline := strings.Contains(ch.Old, "\n") || strings.Contains(ch.New, "\n")
	long := len(ch.Old)+len(ch.New) > 100

	switch {
	case ch.Kind == Modified && ch.Old == ch.New:
		// Both hidden: say that it changed, not what to.
		fmt.Fprintf(&r.b, "%s %s, changed\n", head, ch.New)
	case ch.Kind == Modified && (multiline || long):
		r.block(head, inner, "diff", prefixLines("- ", ch.Old)+"\n"+prefixLines("+ ", ch.New))
	case ch.Kind == Modified:
		fmt.Fprintf(&r.b, "%s %s → %s\n", head, value(ch.Old), value(ch.New))
	default:
		v := ch.New
		if ch.Kind == Removed {
			v = ch.Old
		}
		switch {
		case v == "":
			fmt.Fprintf(&r.b, "%s\n", strings.TrimSuffix(head, ":"))
		case strings.Contains(v, "\n"):
			r.block(head, inner, "", v)
		default:
			fmt.Fprintf(&r.b, "%s %s\n", head, value(v))
		}
	}
	if ch.Message != "" {
		if r.md && !strings.Contains(ch.Message, "\n") {
			r.b.Truncate(r.b.Len() - 1)
			fmt.Fprintf(&r.b, " (else: %s)\n", ch.Message)
		} else if r.md {
			fmt.Fprintf(&r.b, "%s- else: %s\n", inner, ch.Message)
		} else {
			fmt.Fprintf(&r.b, "%selse: %s\n", inner, indentMore(ch.Message, inner+"      "))
		}
	}
}

// block writes a value of several lines under its label: fenced in
// Markdown (lang "diff" colours - and + lines), indented in text.
func (r *diffRenderer) block(head, inner, lang, text string) {
	if r.md {
		fence := "```"
		for strings.Contains(text, fence) {
			fence += "`"
		}
		fmt.Fprintf(&r.b, "%s\n\n%s%s%s\n%s%s\n%s%s\n", head, inner, fence, lang, inner, indentMore(text, inner), inner, fence)
		return
	}
	fmt.Fprintf(&r.b, "%s\n%s%s\n", head, inner, indentMore(text, inner))
}

// prefixLines puts p before every line of s.
func prefixLines(p, s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = p + l
	}
	return strings.Join(lines, "\n")
}
