package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"lockstep/plans"
	"lockstep/runner/records"
	"lockstep/views"
)

// The tools' inputs and outputs. Their JSON schemas are inferred from
// these types; the jsonschema tags are the descriptions a client shows.

type ValidateIn struct {
	Path     string `json:"path,omitempty" jsonschema:"a plan file under the server's roots (relative: to the first root)"`
	Text     string `json:"text,omitempty" jsonschema:"the plan's text, instead of path: validated, never run"`
	Filename string `json:"filename,omitempty" jsonschema:"the name diagnostics give inline text (default plan.hcl)"`
}

type ExplainIn struct {
	Path     string            `json:"path" jsonschema:"the plan file to explain (with diff_from: the new version)"`
	DiffFrom string            `json:"diff_from,omitempty" jsonschema:"an older version of the plan: say what changed from it to path, as explain --diff"`
	Vars     map[string]string `json:"vars,omitempty" jsonschema:"variables, as -var NAME=VALUE (not with diff_from)"`
	Format   string            `json:"format,omitempty" jsonschema:"text (default) or markdown"`
}

type Explanation struct {
	FormatVersion string `json:"format_version"`
	Plan          string `json:"plan"`
	Explanation   string `json:"explanation"`
	// Unresolved names the variables without a value: the commands are
	// then shown as written.
	Unresolved []string `json:"unresolved,omitempty"`
}

type RunIn struct {
	Path     string            `json:"path" jsonschema:"the plan file to run, under the server's roots; inline text is never run"`
	Vars     map[string]string `json:"vars,omitempty" jsonschema:"variables, as -var NAME=VALUE"`
	VarFiles []string          `json:"var_files,omitempty" jsonschema:"HCL files of variables, under the server's roots"`
	Note     string            `json:"note,omitempty" jsonschema:"a one-line reason for this attempt, kept in its record"`
}

type Started struct {
	FormatVersion string `json:"format_version"`
	Plan          string `json:"plan"`
	Attempt       int    `json:"attempt"`
	State         string `json:"state" jsonschema:"running: read its progress and outcome with status"`
	Records       string `json:"records"`
}

type AttemptIn struct {
	Path        string  `json:"path" jsonschema:"the plan file"`
	Attempt     int     `json:"attempt" jsonschema:"the attempt's number, as run answered"`
	Since       int     `json:"since,omitempty" jsonschema:"return events from this one on (the next of an earlier status)"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait up to this long (at most 25) for the attempt to end before answering"`
}

type CancelIn struct {
	Path    string `json:"path" jsonschema:"the plan file"`
	Attempt int    `json:"attempt" jsonschema:"the attempt's number, as run answered"`
}

type PlanIn struct {
	Path string `json:"path" jsonschema:"the plan file"`
}

type ShowIn struct {
	Path    string `json:"path" jsonschema:"the plan file"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"the attempt's number; 0 or absent: the last"`
}

type DiffIn struct {
	Path string `json:"path" jsonschema:"the plan file"`
	A    int    `json:"a" jsonschema:"the earlier attempt"`
	B    int    `json:"b" jsonschema:"the later attempt"`
}

type Attempts struct {
	FormatVersion string        `json:"format_version"`
	Plan          string        `json:"plan"`
	Attempts      []records.Row `json:"attempts"`
}

type Shown struct {
	FormatVersion string           `json:"format_version"`
	Attempt       *records.Attempt `json:"attempt"`
}

type Compared struct {
	FormatVersion string             `json:"format_version"`
	Diff          records.Comparison `json:"diff"`
}

// maxWait bounds status's wait_seconds below the usual client timeouts.
const maxWait = 25 * time.Second

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "validate", Description: "Check a plan without running anything: every problem as a diagnostic with its file:line:col range and how to fix it. Give path (a file) or text (inline)."}, s.validate)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "explain", Description: "Say step by step what a plan does and what each step must observe before it moves on; with diff_from, what changed from an older version of the plan."}, s.explain)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run", Description: "Start an attempt of a plan file and answer at once with its plan name and attempt number. Progress notifications follow per step (give a progressToken); read the outcome with status."}, s.run)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "status", Description: "An attempt's state (running or ended), its events so far (the shape of lockstep run --json), and once it ended its outcome with the failed step's evidence."}, s.status1)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "cancel", Description: "Cancel an attempt this server runs, as Ctrl-C: the current step ends, launched processes are stopped, the record is finished. Answers once that is done, with the attempt's status."}, s.cancel1)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "attempts", Description: "The table of a plan's attempts: number, when, how long, variables changed, outcome, failed step and why, note, key metrics."}, s.attempts)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "show", Description: "One attempt's whole record: every step with its actions, observations, outcome and evidence."}, s.show)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "diff", Description: "What changed from attempt a to attempt b of a plan: outcome, variables, the plan's text, each step, metrics."}, s.diff)
}

func (s *Server) validate(_ context.Context, _ *mcp.CallToolRequest, in ValidateIn) (*mcp.CallToolResult, plans.Validation, error) {
	out := plans.Validation{FormatVersion: plans.ValidationVersion, Valid: true}
	switch {
	case in.Path != "" && in.Text != "":
		return nil, out, errors.New("give path or text, not both")
	case in.Text != "":
		name := in.Filename
		if name == "" {
			name = "plan.hcl"
		}
		p, diags := plans.Parse(name, []byte(in.Text))
		out.Add(name, p, diags)
		return nil, out, nil
	}
	path, err := s.planPath(in.Path)
	if err != nil {
		return nil, out, err
	}
	p, diags := plans.ParseFile(path)
	out.Add(in.Path, p, diags)
	return nil, out, nil
}

// parse reads a plan file under the roots; an invalid one is an error
// carrying its diagnostics.
func (s *Server) parse(arg string) (string, *plans.Plan, error) {
	path, err := s.planPath(arg)
	if err != nil {
		return "", nil, err
	}
	p, diags := plans.ParseFile(path)
	if diags.HasErrors() {
		return "", nil, diagnosticsError(fmt.Sprintf("%s is invalid: nothing was run (validate shows every problem)", arg), p.Files, diags)
	}
	return path, p, nil
}

// diagnosticsError is an error whose text carries the diagnostics as
// JSON, so that a client that shows only the error still sees where.
func diagnosticsError(msg string, files map[string]*hcl.File, diags hcl.Diagnostics) error {
	b, _ := json.Marshal(plans.JSONDiagnostics(files, errorsOnly(diags)))
	return fmt.Errorf("%s: %s", msg, b)
}

func varList(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out) // one name each: the order does not matter, but stays the same
	return out
}

func (s *Server) explain(_ context.Context, _ *mcp.CallToolRequest, in ExplainIn) (*mcp.CallToolResult, Explanation, error) {
	out := Explanation{FormatVersion: FormatVersion}
	var format views.Format
	switch in.Format {
	case "", "text":
		format = views.Text
	case "markdown":
		format = views.Markdown
	default:
		return nil, out, fmt.Errorf("unknown format %q: use text or markdown", in.Format)
	}
	_, p, err := s.parse(in.Path)
	if err != nil {
		return nil, out, err
	}
	out.Plan = p.Name
	if in.DiffFrom != "" {
		if len(in.Vars) > 0 {
			return nil, out, errors.New("diff_from compares plans as written: vars do not apply")
		}
		_, old, err := s.parse(in.DiffFrom)
		if err != nil {
			return nil, out, err
		}
		out.Explanation, err = views.PlanDiff(plans.Diff(old, p), format)
		return nil, out, err
	}
	scope, diags := p.Resolve(plans.Inputs{Vars: varList(in.Vars), Environ: os.Environ()})
	if diags.HasErrors() {
		for _, d := range diags {
			if mv, ok := d.Extra.(plans.MissingValue); ok {
				out.Unresolved = append(out.Unresolved, mv.Name)
			} else if d.Severity == hcl.DiagError {
				return nil, out, diagnosticsError("the variables do not resolve", scope.Files, diags)
			}
		}
		scope = nil // shown as written
	}
	out.Explanation, err = views.Explain(plans.Explain(p, scope), format)
	return nil, out, err
}

func (s *Server) run(_ context.Context, req *mcp.CallToolRequest, in RunIn) (*mcp.CallToolResult, Started, error) {
	out := Started{FormatVersion: FormatVersion}
	if strings.ContainsAny(in.Note, "\n\r") {
		return nil, out, errors.New("note is one line")
	}
	path, p, err := s.parse(in.Path)
	if err != nil {
		return nil, out, err
	}
	// The targets before the variables: a refused plan learns nothing of
	// the server's environment.
	if err := s.checkTargets(p); err != nil {
		return nil, out, err
	}
	var files []string
	for _, f := range in.VarFiles {
		vf, err := s.planPath(f)
		if err != nil {
			return nil, out, err
		}
		files = append(files, vf)
	}
	scope, diags := p.Resolve(plans.Inputs{Vars: varList(in.Vars), VarFiles: files, Environ: os.Environ()})
	if diags.HasErrors() {
		return nil, out, diagnosticsError(fmt.Sprintf("the variables of %s do not resolve: nothing was run", in.Path), scope.Files, diags)
	}
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	var ss *mcp.ServerSession
	if req != nil {
		ss = req.Session
	}
	emit, done := s.progressSender(ss, token)
	k, err := s.start(p, scope, s.recordsOf(path), in.Note, emit, done)
	if err != nil {
		return nil, out, err
	}
	out.Plan, out.Attempt, out.State, out.Records = k.plan, k.n, "running", records.AttemptDir(k.root, k.plan, k.n)
	return nil, out, nil
}

// attemptOf names attempt n of the plan file at arg.
func (s *Server) attemptOf(arg string, n int) (attemptKey, error) {
	path, err := s.planPath(arg)
	if err != nil {
		return attemptKey{}, err
	}
	name, err := plans.NameOf(path)
	if err != nil {
		return attemptKey{}, err
	}
	root := s.recordsOf(path)
	if n <= 0 {
		nums, err := records.Numbers(root, name)
		if err != nil {
			return attemptKey{}, err
		}
		if len(nums) == 0 {
			return attemptKey{}, fmt.Errorf("plan %s has no attempts yet (records: %s)", name, root)
		}
		n = nums[len(nums)-1]
	}
	return attemptKey{root, name, n}, nil
}

func (s *Server) status1(ctx context.Context, _ *mcp.CallToolRequest, in AttemptIn) (*mcp.CallToolResult, *Status, error) {
	if in.Attempt <= 0 {
		return nil, nil, errors.New("attempt is required: the number run answered")
	}
	k, err := s.attemptOf(in.Path, in.Attempt)
	if err != nil {
		return nil, nil, err
	}
	wait := min(time.Duration(in.WaitSeconds*float64(time.Second)), maxWait)
	st, err := s.status(ctx, k, max(in.Since, 0), wait)
	return nil, st, err
}

func (s *Server) cancel1(ctx context.Context, _ *mcp.CallToolRequest, in CancelIn) (*mcp.CallToolResult, *Status, error) {
	if in.Attempt <= 0 {
		return nil, nil, errors.New("attempt is required: the number run answered")
	}
	k, err := s.attemptOf(in.Path, in.Attempt)
	if err != nil {
		return nil, nil, err
	}
	if err := s.cancelAttempt(ctx, k); err != nil {
		return nil, nil, err
	}
	st, err := s.status(ctx, k, 0, 0)
	return nil, st, err
}

func (s *Server) attempts(_ context.Context, _ *mcp.CallToolRequest, in PlanIn) (*mcp.CallToolResult, Attempts, error) {
	out := Attempts{FormatVersion: FormatVersion, Attempts: []records.Row{}}
	path, err := s.planPath(in.Path)
	if err != nil {
		return nil, out, err
	}
	name, err := plans.NameOf(path)
	if err != nil {
		return nil, out, err
	}
	out.Plan = name
	atts, err := records.List(s.recordsOf(path), name)
	if err != nil {
		return nil, out, err
	}
	// The same rows as attempts --format json gives.
	for _, t := range records.Tables(atts, nil) {
		out.Attempts = append(out.Attempts, t.Rows...)
	}
	return nil, out, nil
}

func (s *Server) load(arg string, n int) (*records.Attempt, error) {
	k, err := s.attemptOf(arg, n)
	if err != nil {
		return nil, err
	}
	a, err := records.Load(records.AttemptDir(k.root, k.plan, k.n))
	if err != nil {
		return nil, fmt.Errorf("plan %s has no attempt %d: %w", k.plan, k.n, err)
	}
	return a, nil
}

func (s *Server) show(_ context.Context, _ *mcp.CallToolRequest, in ShowIn) (*mcp.CallToolResult, Shown, error) {
	a, err := s.load(in.Path, in.Attempt)
	return nil, Shown{FormatVersion: FormatVersion, Attempt: a}, err
}

func (s *Server) diff(_ context.Context, _ *mcp.CallToolRequest, in DiffIn) (*mcp.CallToolResult, Compared, error) {
	out := Compared{FormatVersion: FormatVersion}
	if in.A <= 0 || in.B <= 0 {
		return nil, out, errors.New("a and b are attempt numbers")
	}
	a, err := s.load(in.Path, in.A)
	if err != nil {
		return nil, out, err
	}
	b, err := s.load(in.Path, in.B)
	if err != nil {
		return nil, out, err
	}
	out.Diff = records.Compare(a, b)
	return nil, out, nil
}

func errorsOnly(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}
