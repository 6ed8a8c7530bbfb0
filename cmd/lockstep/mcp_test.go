package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"lockstep/agents"
	"lockstep/plans"
	"lockstep/runner/events"
	"lockstep/runner/records"
)

// mcpSession starts `lockstep mcp ARGS...` in dir (the binary TestMain
// puts on PATH) and connects the SDK's client to it. Progress
// notifications go to the returned channel.
func mcpSession(t *testing.T, dir string, args ...string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	return mcpSessionEnv(t, dir, nil, args...)
}

// mcpSessionEnv is mcpSession with env added to the server's environment.
func mcpSessionEnv(t *testing.T, dir string, env []string, args ...string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	progress := make(chan string, 256)
	client := mcp.NewClient(&mcp.Implementation{Name: "lockstep-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- req.Params.Message:
			default:
				t.Errorf("progress notification dropped by the test: %s", req.Params.Message)
			}
		},
	})
	cmd := exec.Command("lockstep", append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to lockstep mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, progress
}

// callTool calls a tool and decodes its structured answer into out; it
// returns the error text of a tool error ("" when it succeeded).
func callTool(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s answered %s: %v", params.Name, b, err)
		}
	}
	return ""
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMCPToolsAndRefusals(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "broken.hcl"), "plan \"broken\" {}\n\nstep \"run\" \"build\" {\n  comand = \"true\"\n}\n")
	writeFile(t, filepath.Join(root, "remote.hcl"), `plan "remote" {}
target "gpu" {
  ssh {
    host = "127.0.0.1"
  }
}
step "run" "here" {
  command = "true"
}
step "run" "there" {
  target  = target.gpu
  command = "touch ran-on-gpu"
}
`)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.hcl"), "step \"run\" \"x\" {\n  command = \"touch ran-outside\"\n}\n")
	if err := os.Symlink(filepath.Join(outside, "secret.hcl"), filepath.Join(root, "link.hcl")); err != nil {
		t.Fatal(err)
	}
	cs, _ := mcpSession(t, root)

	t.Run("list", func(t *testing.T) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.InputSchema == nil || tool.OutputSchema == nil {
				t.Errorf("tool %s has no input or output schema", tool.Name)
			}
		}
		slices.Sort(names)
		want := []string{"attempts", "cancel", "diff", "explain", "run", "show", "status", "validate"}
		if !slices.Equal(names, want) {
			t.Errorf("tools %v, want %v", names, want)
		}
	})

	t.Run("validate", func(t *testing.T) {
		var v plans.Validation
		if e := callTool(t, cs, &mcp.CallToolParams{Name: "validate", Arguments: map[string]any{"path": "broken.hcl"}}, &v); e != "" {
			t.Fatal(e)
		}
		if v.Valid || v.ErrorCount != 1 || len(v.Plans) != 1 || len(v.Plans[0].Diagnostics) != 1 {
			t.Fatalf("validate answered %+v, want one error", v)
		}
		d := v.Plans[0].Diagnostics[0]
		if d.Range == nil || d.Range.Start.Line != 4 || d.Range.Start.Column != 3 || !strings.Contains(d.Detail, `Did you mean "command"?`) {
			t.Errorf("diagnostic %+v, want broken.hcl:4:3 suggesting command", d)
		}
		// The same plan given as text is validated too.
		src, _ := os.ReadFile(filepath.Join(root, "broken.hcl"))
		v = plans.Validation{}
		callTool(t, cs, &mcp.CallToolParams{Name: "validate", Arguments: map[string]any{"text": string(src), "filename": "mine.hcl"}}, &v)
		if v.Valid || v.Plans[0].Diagnostics[0].Range.Filename != "mine.hcl" {
			t.Errorf("validate of text answered %+v", v)
		}
	})

	t.Run("outside the root", func(t *testing.T) {
		for _, p := range []string{filepath.Join(outside, "secret.hcl"), "../" + filepath.Base(outside) + "/secret.hcl", "link.hcl"} {
			for _, tool := range []string{"validate", "run"} {
				e := callTool(t, cs, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": p}}, nil)
				if !strings.Contains(e, "refused: ") || !strings.Contains(e, "outside the folders this server may read") {
					t.Errorf("%s %s: answered %q, want refused", tool, p, e)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(outside, ".lockstep")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a plan outside the root was run: %v", err)
		}
	})

	t.Run("target not allowed", func(t *testing.T) {
		e := callTool(t, cs, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"path": "remote.hcl"}}, nil)
		if !strings.Contains(e, "refused: ") || !strings.Contains(e, "target gpu") || !strings.Contains(e, "--allow-targets local,gpu") {
			t.Errorf("run remote.hcl answered %q, want refused for target gpu", e)
		}
		if _, err := os.Stat(filepath.Join(root, ".lockstep")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused plan left a record: %v", err)
		}
	})

	t.Run("inline text is never run", func(t *testing.T) {
		e := callTool(t, cs, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"text": "step \"run\" \"x\" {\n  command = \"true\"\n}\n"}}, nil)
		if e == "" {
			t.Errorf("run of inline text was accepted")
		}
	})
}

// hangPlan launches a process and then waits for a line it never prints.
const hangPlan = `plan "hang" {}
step "launch" "server" {
  command = "exec sleep 600"
}
step "wait" "never" {
  timeout  = "10m"
  interval = "100ms"
  probe "log" "server" {
    step = step.launch.server
  }
  postcondition {
    condition = strcontains(probe.server.text, "a line that never comes")
  }
}
`

// startHang runs hang.hcl through cs and returns once its wait has
// started, with the launch's pid.
func startHang(t *testing.T, cs *mcp.ClientSession, progress <-chan string) int {
	t.Helper()
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"path": "hang.hcl"}}
	params.SetProgressToken("hang")
	var started agents.Started
	if e := callTool(t, cs, params, &started); e != "" {
		t.Fatal(e)
	}
	if started.Plan != "hang" || started.Attempt != 1 || started.State != "running" {
		t.Fatalf("run answered %+v", started)
	}
	for msg := range progress {
		if strings.HasPrefix(msg, "step 2/2 wait.never: started") {
			break
		}
	}
	var st agents.Status
	callTool(t, cs, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"path": "hang.hcl", "attempt": 1}}, &st)
	if st.State != "running" {
		t.Fatalf("status mid-wait: %+v", st)
	}
	pid := 0
	for _, e := range st.Events {
		if e.Type == events.StepAction && e.Action != nil && e.Action.PID > 0 {
			pid = e.Action.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no launch pid in the events: %+v", st.Events)
	}
	return pid
}

func TestMCPCancelStopsTheLaunch(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "hang.hcl"), hangPlan)
	cs, progress := mcpSession(t, root)
	pid := startHang(t, cs, progress)
	var st agents.Status
	if e := callTool(t, cs, &mcp.CallToolParams{Name: "cancel", Arguments: map[string]any{"path": "hang.hcl", "attempt": 1}}, &st); e != "" {
		t.Fatal(e)
	}
	if st.State != "ended" || st.Outcome == nil || st.Outcome.Status != events.Interrupted || !strings.Contains(st.Outcome.Reason, "cancel tool") {
		t.Fatalf("cancel answered %+v", st)
	}
	stopped := false
	for _, e := range st.Events {
		stopped = stopped || (e.Type == events.ProcessStopped && e.Step != nil && e.Step.Addr == "launch.server")
	}
	if !stopped {
		t.Errorf("the record has no process_stopped for launch.server")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the launch (pid %d) still runs after cancel: %v", pid, err)
	}
}

// TestMCPClientGoneStopsTheLaunch: a client that goes away mid-run
// leaves no process behind, and the record finished, saying why.
func TestMCPClientGoneStopsTheLaunch(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "hang.hcl"), hangPlan)
	cs, progress := mcpSession(t, root)
	pid := startHang(t, cs, progress)
	if err := cs.Close(); err != nil { // closes the server's stdin, waits for it to exit
		t.Logf("close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the launch (pid %d) still runs after the client went away: %v", pid, err)
	}
	a, err := records.Load(records.AttemptDir(filepath.Join(root, ".lockstep"), "hang", 1))
	if err != nil {
		t.Fatal(err)
	}
	if a.Incomplete || a.Outcome.Status != events.Interrupted || !strings.Contains(a.Outcome.Reason, "the MCP client went away") {
		t.Errorf("the record says incomplete=%v, %+v", a.Incomplete, a.Outcome)
	}
}

// TestMCPQuickstart runs the quickstart through lockstep mcp to
// confirmed, following its progress notifications.
func TestMCPQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and benchmarks the demo server")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cs, progress := mcpSession(t, repo, "--records", t.TempDir())
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"path": "examples/quickstart.hcl", "note": "through mcp"}}
	params.SetProgressToken(7)
	var started agents.Started
	if e := callTool(t, cs, params, &started); e != "" {
		t.Fatal(e)
	}
	var seen []string
	for msg := range progress {
		seen = append(seen, msg)
		if strings.HasPrefix(msg, "attempt ") {
			break
		}
	}
	for _, want := range []string{"step 1/5 run.build: confirmed", "step 3/5 wait.ready: confirmed", "step 5/5 benchmark.throughput: confirmed", "attempt 1 of quickstart: confirmed"} {
		if !slices.ContainsFunc(seen, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no progress %q in %q", want, seen)
		}
	}
	var st agents.Status
	callTool(t, cs, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{"path": "examples/quickstart.hcl", "attempt": started.Attempt, "wait_seconds": 25}}, &st)
	if st.State != "ended" || st.Outcome == nil || st.Outcome.Status != events.Confirmed {
		t.Fatalf("status after the run: state %s, outcome %+v", st.State, st.Outcome)
	}
	if st.Events[0].Type != events.AttemptStarted || st.Events[len(st.Events)-1].Type != events.AttemptFinished {
		t.Errorf("events from %s to %s, want the whole attempt", st.Events[0].Type, st.Events[len(st.Events)-1].Type)
	}
	var att agents.Attempts
	callTool(t, cs, &mcp.CallToolParams{Name: "attempts", Arguments: map[string]any{"path": "examples/quickstart.hcl"}}, &att)
	if len(att.Attempts) != 1 || att.Attempts[0].Status != "confirmed" || att.Attempts[0].Note != "through mcp" {
		t.Errorf("attempts answered %+v", att)
	}
}

// TestMCPInspector drives lockstep mcp with a real external client: the
// MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector), which
// .ci/run installs and names in LOCKSTEP_MCP_INSPECTOR.
func TestMCPInspector(t *testing.T) {
	inspector := os.Getenv("LOCKSTEP_MCP_INSPECTOR")
	if inspector == "" {
		inspector, _ = exec.LookPath("mcp-inspector")
	}
	if inspector == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("the MCP Inspector is missing in CI: .ci/run installs it and sets LOCKSTEP_MCP_INSPECTOR")
		}
		t.Skip("the MCP Inspector is not installed (npm install @modelcontextprotocol/inspector@0.15.0, then set LOCKSTEP_MCP_INSPECTOR to its mcp-inspector)")
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "broken.hcl"), "step \"run\" \"build\" {\n  comand = \"true\"\n}\n")
	inspect := func(args ...string) []byte {
		cmd := exec.Command(inspector, append([]string{"--cli", "lockstep", "mcp"}, args...)...)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mcp-inspector %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var list struct {
		Tools []struct {
			Name         string         `json:"name"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(inspect("--method", "tools/list"), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"attempts", "cancel", "diff", "explain", "run", "show", "status", "validate"}; !slices.Equal(names, want) {
		t.Errorf("the inspector lists %v, want %v", names, want)
	}
	var call struct {
		IsError           bool             `json:"isError"`
		StructuredContent plans.Validation `json:"structuredContent"`
	}
	if err := json.Unmarshal(inspect("--method", "tools/call", "--tool-name", "validate", "--tool-arg", "path=broken.hcl"), &call); err != nil {
		t.Fatal(err)
	}
	v := call.StructuredContent
	if call.IsError || v.Valid || len(v.Plans) != 1 || len(v.Plans[0].Diagnostics) != 1 {
		t.Fatalf("validate through the inspector: %+v", call)
	}
	if d := v.Plans[0].Diagnostics[0]; d.Range == nil || d.Range.Start.Line != 2 || d.Range.Start.Column != 3 || d.Summary != "Unsupported argument" {
		t.Errorf("diagnostic %+v, want broken.hcl:2:3 Unsupported argument", d)
	}
}

// TestMCPRedacts: a sensitive value from the server's environment never
// reaches the agent, in any answer or notification, even when the server
// under test prints it.
func TestMCPRedacts(t *testing.T) {
	const secret = "hunter2-not-for-agents"
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "secret.hcl"), `plan "secret" {}
variable "token" {
  type      = string
  sensitive = true
}
step "run" "leak" {
  command = "echo token=${shellquote(var.token)}"
  postcondition {
    condition     = self.stdout == "nothing"
    error_message = "it printed something"
  }
}
`)
	cs, progress := mcpSessionEnv(t, root, []string{"LOCKSTEP_VAR_token=" + secret})
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"path": "secret.hcl"}}
	params.SetProgressToken("s")
	var started agents.Started
	if e := callTool(t, cs, params, &started); e != "" {
		t.Fatal(e)
	}
	for msg := range progress {
		if strings.Contains(msg, secret) {
			t.Errorf("a progress notification holds the secret: %s", msg)
		}
		if strings.HasPrefix(msg, "attempt ") {
			break
		}
	}
	calls := []*mcp.CallToolParams{
		{Name: "status", Arguments: map[string]any{"path": "secret.hcl", "attempt": started.Attempt, "wait_seconds": 25}},
		{Name: "show", Arguments: map[string]any{"path": "secret.hcl"}},
		{Name: "attempts", Arguments: map[string]any{"path": "secret.hcl"}},
		{Name: "explain", Arguments: map[string]any{"path": "secret.hcl"}},
	}
	for _, c := range calls {
		res, err := cs.CallTool(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if res.IsError {
			t.Errorf("%s: %s", c.Name, b)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s answered the secret: %s", c.Name, b)
		}
		if c.Name == "status" && (!strings.Contains(string(b), `token='(sensitive)'`) || !strings.Contains(string(b), `token=(sensitive)`)) {
			t.Errorf("status does not show the command and its output redacted: %s", b)
		}
	}
}
