package docs_test

// These tests keep the documentation true to the code.
//
// TestLanguageReferenceMatchesSchema reads docs/language.md back (its
// code-only headings such as ### `probe "http"` and the first column of the
// tables under them) and compares it with plans.Language() and
// plans.Functions(), both ways: a block, attribute, output, step kind,
// probe, load or function the schema has and the page does not is an
// error, and so is one the page lists that the schema no longer has, or an
// attribute whose default differs. It does not trust the generator: it
// builds the headings it expects itself.
//
// Checked that it can fail, in a scratch copy of the worktree
// (/tmp/docs-scratch, never committed):
//   - adding {Name: "retries", Doc: "how many times to retry"} to the http
//     probe's Attrs in plans/schema.go: `probe "http": attribute "retries"
//     is not documented in language.md`, and TestLanguageReferenceIsGenerated
//     says language.md is out of date; after go generate both pass;
//   - the schema restored, the generated "retries" row left in the page:
//     `probe "http": language.md documents attribute "retries", which the
//     schema no longer has`;
//   - deleting the json row under step "benchmark" › metric "NAME":
//     `attribute "json" is not documented in language.md`;
//   - renaming ### `probe "gpu"` to `probe "tpu"`: `probe "gpu" is not
//     documented` and `language.md documents probe "tpu", which the schema
//     does not have`;
//   - a row `nosuch` in the functions table: `function "nosuch" is
//     documented but plans.Functions() has no such function`;
//   - 2m for launch in the Step defaults table: TestLanguageDefaultsMatchRunner
//     says `launch: the docs say 2m, the runner uses 1m0s`;
//   - in cookbook.md, dropping a shellquote and misspelling a probe:
//     TestDocPlansValidate says `cookbook.md:320: Unquoted value in a
//     command: ...` and `cookbook.md:493: Reference to undeclared probe`.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"lockstep/docs/internal/langdoc"
	"lockstep/plans"
	"lockstep/runner"
	"lockstep/runner/events"
	"lockstep/targets"
)

// reference is what language.md says, read back from its markdown.
type reference struct {
	// headings are the code-only headings, without their backticks:
	// probe "http", target "NAME" › ssh.
	headings map[string]bool
	// tables maps a heading and a table's first column title ("Attribute",
	// "Output", "Function", ...) to the table's rows: the name in the
	// first column -> the other columns.
	tables map[tableKey]map[string][]string
}

type tableKey struct{ heading, column string }

var codeOnly = regexp.MustCompile("^`([^`]+)`$")

func readReference(t *testing.T) *reference {
	t.Helper()
	src, err := os.ReadFile("language.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := &reference{headings: map[string]bool{}, tables: map[tableKey]map[string][]string{}}
	heading, column := "", ""
	inFence := false
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		switch {
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			if m := codeOnly.FindStringSubmatch(heading); m != nil {
				heading = m[1]
				ref.headings[heading] = true
			}
			column = ""
		case strings.HasPrefix(line, "|"):
			cells := tableCells(line)
			if column == "" {
				if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") {
					column = cells[0]
					key := tableKey{heading, column}
					if ref.tables[key] != nil {
						t.Errorf("language.md: two %s tables under %q", column, heading)
					}
					ref.tables[key] = map[string][]string{}
				}
				continue
			}
			if strings.HasPrefix(line, "|---") {
				continue
			}
			name := strings.Trim(cells[0], "`")
			ref.tables[tableKey{heading, column}][name] = cells[1:]
		default:
			column = ""
		}
	}
	return ref
}

// tableCells splits a table row on the pipes that are not escaped.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// expectation is what the schema says one heading must document.
type expectation struct {
	heading string
	attrs   []plans.Attr
	outputs []plans.Output
}

func blockHeading(parent string, typ string, labels []string) string {
	h := typ
	for _, l := range labels {
		h += fmt.Sprintf(" %q", l)
	}
	if parent != "" {
		h = parent + " › " + h
	}
	return h
}

// expectations lists every schema item with the heading it is
// documented under, in schema order.
func expectations(l *plans.Schema) []expectation {
	var out []expectation
	var nested func(parent string, bs []plans.Block)
	nested = func(parent string, bs []plans.Block) {
		for _, b := range bs {
			h := blockHeading(parent, b.Type, b.Labels)
			out = append(out, expectation{heading: h, attrs: b.Attrs})
			nested(h, b.Blocks)
		}
	}
	for _, b := range l.Blocks {
		h := blockHeading("", b.Type, b.Labels)
		if b.Type == "step" {
			// Every step's attributes and blocks are the step block's.
			out = append(out, expectation{heading: h, attrs: l.Step.Attrs})
			nested("step", l.Step.Blocks)
			continue
		}
		out = append(out, expectation{heading: h, attrs: b.Attrs})
		nested(h, b.Blocks)
	}
	for _, k := range l.Steps {
		h := fmt.Sprintf("step %q", k.Name)
		out = append(out, expectation{heading: h, attrs: k.Attrs, outputs: k.Self})
		nested(h, k.Blocks)
	}
	for _, k := range l.Probes {
		out = append(out, expectation{heading: fmt.Sprintf("probe %q", k.Name), attrs: k.Attrs, outputs: k.Outputs})
	}
	for _, k := range l.Loads {
		out = append(out, expectation{heading: fmt.Sprintf("load %q", k.Name), attrs: k.Attrs})
	}
	return out
}

func defaultShown(a plans.Attr) string {
	switch {
	case a.Required:
		return "required"
	case a.Default == "":
		return "—"
	}
	return a.Default
}

func TestLanguageReferenceMatchesSchema(t *testing.T) {
	ref := readReference(t)
	l := plans.Language()
	expected := map[string]bool{}
	for _, e := range expectations(l) {
		expected[e.heading] = true
		if !ref.headings[e.heading] {
			t.Errorf("%s is not documented in language.md (no ### `%s` heading)", e.heading, e.heading)
			continue
		}
		checkRows(t, ref, e.heading, "Attribute", "attribute", e.attrs, func(a plans.Attr) string { return a.Name }, func(a plans.Attr, cell string) string {
			if got, want := strings.ReplaceAll(cell, "`", ""), defaultShown(a); got != want {
				return fmt.Sprintf("default is %q in language.md, %q in the schema", got, want)
			}
			return ""
		})
		checkRows(t, ref, e.heading, "Output", "output", e.outputs, func(o plans.Output) string { return o.Name }, nil)
	}
	for h := range ref.headings {
		if !expected[h] {
			t.Errorf("language.md documents %s, which the schema does not have", h)
		}
	}
	for key := range ref.tables {
		if (key.column == "Attribute" || key.column == "Output") && !expected[key.heading] {
			t.Errorf("language.md has an %s table under %q, which is not a schema item", key.column, key.heading)
		}
	}

	// Functions: every table headed Function, wherever it stands.
	documented := map[string]bool{}
	for key, rows := range ref.tables {
		if key.column == "Function" {
			for name := range rows {
				documented[name] = true
			}
		}
	}
	described := map[string]bool{}
	for _, f := range l.Functions {
		described[f.Name] = true
	}
	for name := range plans.Functions() {
		if !documented[name] {
			t.Errorf("function %q is not documented in language.md", name)
		}
		if !described[name] {
			t.Errorf("function %q is in plans.Functions() but not in plans.Language().Functions", name)
		}
	}
	for name := range documented {
		if _, ok := plans.Functions()[name]; !ok {
			t.Errorf("function %q is documented but plans.Functions() has no such function", name)
		}
	}
}

// checkRows compares the rows of one table under heading with the schema
// items that belong there.
func checkRows[T any](t *testing.T, ref *reference, heading, column, what string, items []T, name func(T) string, cell func(T, string) string) {
	t.Helper()
	rows := ref.tables[tableKey{heading, column}]
	if len(items) == 0 {
		if len(rows) > 0 {
			t.Errorf("%s: language.md lists %s %v, but the schema has none", heading, what, sortedKeys(rows))
		}
		return
	}
	want := map[string]bool{}
	for _, it := range items {
		n := name(it)
		want[n] = true
		got, ok := rows[n]
		if !ok {
			t.Errorf("%s: %s %q is not documented in language.md", heading, what, n)
			continue
		}
		if cell != nil && len(got) > 0 {
			if msg := cell(it, got[0]); msg != "" {
				t.Errorf("%s: %s %q: %s", heading, what, n, msg)
			}
		}
	}
	for n := range rows {
		if !want[n] {
			t.Errorf("%s: language.md documents %s %q, which the schema no longer has", heading, what, n)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The tables are generated; a hand edit inside the markers, or a schema
// change without go generate, shows here.
func TestLanguageReferenceIsGenerated(t *testing.T) {
	src, err := os.ReadFile("language.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := langdoc.Update(src, langdoc.Sections(plans.Language()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Errorf("language.md is out of date with plans.Language(): run go generate ./docs")
	}
}

// The defaults table states the runner's timeouts; the runner announces
// each step's timeout when an attempt starts, so the test asks it. The
// target cannot be opened, so nothing runs.
func TestLanguageDefaultsMatchRunner(t *testing.T) {
	ref := readReference(t)
	rows := ref.tables[tableKey{"Step defaults", "Kind"}]
	if rows == nil {
		t.Fatal("language.md has no Kind table under ## Step defaults")
	}
	const src = `
step "run" "run" {
  command = "true"
}
step "launch" "launch" {
  command = "sleep 1"
}
step "wait" "wait" {
  postcondition {
    condition = true
  }
}
step "assert" "assert" {
  postcondition {
    condition = true
  }
}
step "benchmark" "benchmark" {
  command = "echo 1"
  metric "n" {
    regex = "(\\d)"
  }
}
`
	p, diags := plans.Parse("defaults.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	scope, diags := p.Resolve(plans.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var start *events.Start
	runner.Run(context.Background(), runner.Options{
		Plan:  p,
		Scope: scope,
		Targets: func(string, func(events.Event)) (targets.Target, error) {
			return nil, errors.New("no target in this test")
		},
		Observer: observerFunc(func(e events.Event) {
			if e.Type == events.AttemptStarted {
				start = e.Start
			}
		}),
	})
	if start == nil {
		t.Fatal("the runner announced no start")
	}
	for _, st := range start.Steps {
		row, ok := rows[st.Kind]
		if !ok || len(row) < 2 {
			t.Errorf("the Step defaults table has no row for %s", st.Kind)
			continue
		}
		cell := strings.Trim(row[0], "`")
		var doc time.Duration
		if cell != "none" {
			var err error
			if doc, err = time.ParseDuration(cell); err != nil {
				t.Errorf("%s: %q is not a duration", st.Kind, cell)
				continue
			}
		}
		if doc != st.Timeout {
			t.Errorf("%s: the docs say %s, the runner uses %s", st.Kind, cell, st.Timeout)
		}
	}
	// The runner takes intervals from the schema (runner/step.go,
	// kindDefaults) but does not announce them: compare with the schema.
	for _, k := range plans.Language().Steps {
		row := rows[k.Name]
		if len(row) < 2 {
			continue // reported above
		}
		if got := strings.Trim(row[1], "`"); got != k.DefaultInterval {
			t.Errorf("%s: the docs say interval %s, the schema (which the runner uses) %s", k.Name, got, k.DefaultInterval)
		}
	}
	if len(start.Steps) != len(plans.Language().Steps) {
		t.Errorf("the test plan has %d steps for %d kinds: add the new kind", len(start.Steps), len(plans.Language().Steps))
	}
}

type observerFunc func(events.Event)

func (f observerFunc) Emit(e events.Event) { f(e) }

var hclFence = regexp.MustCompile("(?ms)^```hcl\n(.*?)^```")

// Every complete plan in the docs (an hcl block that starts with plan ")
// parses and validates with no diagnostic at all, warnings included: the
// docs show plans as they should be written.
func TestDocPlansValidate(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	perFile := map[string]int{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range hclFence.FindAllSubmatchIndex(src, -1) {
			body := src[m[2]:m[3]]
			if !bytes.HasPrefix(body, []byte(`plan "`)) {
				continue
			}
			count++
			perFile[f]++
			line := 1 + bytes.Count(src[:m[2]], []byte("\n"))
			name := fmt.Sprintf("%s:%d", f, line)
			_, diags := plans.Parse(name, body)
			for _, d := range diags {
				where := name
				if d.Subject != nil {
					where = fmt.Sprintf("%s:%d", f, line+d.Subject.Start.Line-1)
				}
				t.Errorf("%s: %s: %s", where, d.Summary, d.Detail)
			}
		}
	}
	// A broken fence pattern would find nothing and pass: count them.
	for f, least := range map[string]int{"language.md": 3, "cookbook.md": 7} {
		if perFile[f] < least {
			t.Errorf("found %d plans in %s, want at least %d: is the fence pattern right?", perFile[f], f, least)
		}
	}
}

// workflow is the part of a GitHub Actions workflow the recipe test reads.
type workflow struct {
	On struct {
		PullRequest struct {
			Paths []string `yaml:"paths"`
		} `yaml:"pull_request"`
	} `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// The CI recipe is valid YAML, runs on pull requests touching plans, does
// what docs/ci.md says it does, and each of its shell scripts parses.
func TestCIWorkflow(t *testing.T) {
	src, err := os.ReadFile("../examples/ci/lockstep-plans.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(src, &wf); err != nil {
		t.Fatalf("lockstep-plans.yml is not valid YAML: %v", err)
	}
	if !slices.Contains(wf.On.PullRequest.Paths, "**/*.hcl") {
		t.Errorf("the workflow does not run on pull requests touching **/*.hcl: paths = %q", wf.On.PullRequest.Paths)
	}
	if wf.Permissions["pull-requests"] != "write" {
		t.Errorf("the workflow needs pull-requests: write to comment, has %q", wf.Permissions["pull-requests"])
	}
	var runs []string
	var uses []string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			if st.Uses != "" {
				uses = append(uses, st.Uses)
			}
			if st.Run == "" {
				continue
			}
			runs = append(runs, st.Run)
			// Expressions expanded into a script are a script injection
			// hazard (a branch name is attacker-controlled): pass them
			// through env instead.
			if strings.Contains(st.Run, "${{") {
				t.Errorf("step %q expands ${{ }} inside its script; pass the value through env", st.Name)
			}
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = strings.NewReader(st.Run)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("step %q: its script does not parse: %v\n%s", st.Name, err, out)
				}
			}
		}
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"lockstep fmt -check", "lockstep validate", "lockstep explain", "--format markdown", "explain --diff", "go build"} {
		if !strings.Contains(all, want) {
			t.Errorf("no step of the workflow runs %q", want)
		}
	}
	for _, want := range []string{"actions/checkout", "actions/setup-go", "actions/github-script"} {
		found := false
		for _, u := range uses {
			found = found || strings.HasPrefix(u, want+"@")
		}
		if !found {
			t.Errorf("the workflow uses no %s", want)
		}
	}
}
