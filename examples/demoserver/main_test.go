package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run the real binary, as a plan launches it, and look only at
// what a plan sees: its log lines, its port, its answers, its exit status.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "demoserver-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "demoserver")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building demoserver:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lineTimeout bounds every wait for a log line or an exit: generous, since
// the slowest phase under test lasts about a second.
const lineTimeout = 20 * time.Second

type proc struct {
	cmd   *exec.Cmd
	port  int
	lines chan string   // stdout and stderr, line by line; closed at EOF
	done  chan struct{} // closed once the process has exited
	state *os.ProcessState
}

// freePort finds a loopback port no one listens on. Another process could
// take it before the server binds; on this machine that is rare enough.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	port := freePort(t)
	args = append([]string{"--port", fmt.Sprint(port), "--load-time", "300ms", "--shards", "4", "--warmup", "300ms"}, args...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(binary, args...), port: port, lines: make(chan string, 1000), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		r.Close()
	}()
	go func() {
		p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// next returns the next log line.
func (p *proc) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatal("log ended: the server exited")
		}
		return l
	case <-time.After(lineTimeout):
		t.Fatalf("no log line within %s", lineTimeout)
	}
	return ""
}

// expect reads log lines until one contains want; it returns the lines read,
// that one last.
func (p *proc) expect(t *testing.T, want string) []string {
	t.Helper()
	var seen []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("log ended before a line containing %q; it had:\n%s", want, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if strings.Contains(l, want) {
				return seen
			}
		case <-time.After(lineTimeout):
			t.Fatalf("no line containing %q within %s; read:\n%s", want, lineTimeout, strings.Join(seen, "\n"))
		}
	}
}

// rest returns the remaining log lines, once the process has closed its output.
func (p *proc) rest(t *testing.T) []string {
	t.Helper()
	var seen []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return seen
			}
			seen = append(seen, l)
		case <-time.After(lineTimeout):
			t.Fatalf("log still open after %s; read:\n%s", lineTimeout, strings.Join(seen, "\n"))
		}
	}
}

// exitCode waits for the process to exit and returns its status, or -1 if a
// signal killed it.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.state.ExitCode()
	case <-time.After(lineTimeout):
		t.Fatalf("still running after %s", lineTimeout)
	}
	return 0
}

// exits reads the rest of the log and fails the test unless it contains
// wantLog and the process exits with wantCode.
func (p *proc) exits(t *testing.T, wantLog string, wantCode int) {
	t.Helper()
	if got := strings.Join(p.rest(t), "\n"); !strings.Contains(got, wantLog) {
		t.Errorf("log does not contain %q:\n%s", wantLog, got)
	}
	if code := p.exitCode(t); code != wantCode {
		t.Errorf("exit status = %d, want %d", code, wantCode)
	}
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func (p *proc) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path) }

var client = &http.Client{Timeout: lineTimeout, Transport: &http.Transport{DisableKeepAlives: true}}

func get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func post(t *testing.T, url string, body any) (*http.Response, []byte, error) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

func ask(question string) map[string]any {
	return map[string]any{
		"model":      "default",
		"max_tokens": 16,
		"messages":   []any{map[string]any{"role": "user", "content": question}},
	}
}

// chatContent posts a chat completion and returns choices[0].message.content.
func chatContent(t *testing.T, p *proc, body any) string {
	t.Helper()
	resp, out, err := post(t, p.url("/v1/chat/completions"), body)
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("chat completion: status %d: %s", resp.StatusCode, out)
	}
	var v struct {
		Choices []struct {
			Message struct{ Role, Content string }
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v.Choices) != 1 {
		t.Fatalf("chat completion: not one choice (%v): %s", err, out)
	}
	return v.Choices[0].Message.Content
}

func waitReady(t *testing.T, p *proc) {
	t.Helper()
	p.expect(t, "ready to serve on :")
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func TestLifecycle(t *testing.T) {
	t.Parallel()
	p := start(t, "--backend", "flashinfer_trtllm", "--load-time", "1s", "--warmup", "1s")

	if got, want := p.next(t), fmt.Sprintf("config: backend=flashinfer_trtllm port=%d", p.port); got != want {
		t.Fatalf("first line = %q, want %q", got, want)
	}
	// Loading takes 1s; this request comes well before the port is bound.
	if _, _, err := get(t, p.url("/health")); !isRefused(err) {
		t.Errorf("health while loading: err = %v, want connection refused", err)
	}
	want := []string{
		"loading shards: 25% (1/4)",
		"loading shards: 50% (2/4)",
		"loading shards: 75% (3/4)",
		"loading shards: 100% (4/4)",
		fmt.Sprintf("listening on 127.0.0.1:%d", p.port),
	}
	for _, w := range want {
		if got := p.next(t); got != w {
			t.Fatalf("log line = %q, want %q", got, w)
		}
	}
	if status, _, err := get(t, p.url("/health")); err != nil || status != 503 {
		t.Errorf("health while warming up = %d, %v; want 503", status, err)
	}
	if got, want := p.next(t), fmt.Sprintf("ready to serve on :%d", p.port); got != want {
		t.Fatalf("log line = %q, want %q", got, want)
	}
	if status, body, err := get(t, p.url("/health")); err != nil || status != 200 || body != "ok" {
		t.Errorf("health when ready = %d %q, %v; want 200 ok", status, body, err)
	}

	t.Run("chat answers 2+2", func(t *testing.T) {
		if got := chatContent(t, p, ask("What is 2+2?")); got != "2+2 = 4." {
			t.Errorf("content = %q, want %q", got, "2+2 = 4.")
		}
	})
	t.Run("chat answers the last user message", func(t *testing.T) {
		body := map[string]any{"messages": []any{
			map[string]any{"role": "system", "content": "You are terse."},
			map[string]any{"role": "user", "content": "What is 2+2?"},
			map[string]any{"role": "assistant", "content": "4"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Name a city."}}},
		}}
		got := chatContent(t, p, body)
		if got == "" || strings.Contains(got, "4") {
			t.Errorf("content = %q, want a sentence that is not the 2+2 answer", got)
		}
		if again := chatContent(t, p, body); again != got {
			t.Errorf("same question answered %q then %q; want the same answer", got, again)
		}
	})
	t.Run("chat usage and shape", func(t *testing.T) {
		resp, out, err := post(t, p.url("/v1/chat/completions"), ask("What is 2+2?"))
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		var v struct {
			Object  string
			Model   string
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct{ Role string }
			}
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if v.Object != "chat.completion" || v.Choices[0].Message.Role != "assistant" || v.Choices[0].FinishReason != "stop" {
			t.Errorf("response = %s", out)
		}
		if v.Usage.Prompt != 3 || v.Usage.Completion != 3 || v.Usage.Total != 6 {
			t.Errorf("usage = %+v, want 3 prompt (words of the question) + 3 completion", v.Usage)
		}
	})
	t.Run("completions", func(t *testing.T) {
		resp, out, err := post(t, p.url("/v1/completions"), map[string]any{"model": "default", "prompt": "Q: what is 2+2? A:", "max_tokens": 8})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("completion: %v %s", err, out)
		}
		var v struct {
			Object  string
			Choices []struct{ Text string }
			Usage   struct {
				Completion int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if v.Object != "text_completion" || len(v.Choices) != 1 || v.Choices[0].Text != "2+2 = 4." || v.Usage.Completion != 3 {
			t.Errorf("response = %s", out)
		}
	})
	t.Run("streaming chat", func(t *testing.T) {
		body := ask("What is 2+2?")
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
		text, finish, usage := readStream(t, p.url("/v1/chat/completions"), body, true)
		if text != "2+2 = 4." || finish != "stop" {
			t.Errorf("streamed %q (finish %q), want %q (stop)", text, finish, "2+2 = 4.")
		}
		if usage == nil || usage["completion_tokens"] != 3 {
			t.Errorf("usage chunk = %v, want completion_tokens 3", usage)
		}
	})
	t.Run("streaming completions without usage", func(t *testing.T) {
		body := map[string]any{"prompt": "2+2=", "stream": true}
		text, finish, usage := readStream(t, p.url("/v1/completions"), body, false)
		if text != "2+2 = 4." || finish != "stop" || usage != nil {
			t.Errorf("streamed %q finish %q usage %v", text, finish, usage)
		}
	})
	t.Run("max_tokens cuts the answer", func(t *testing.T) {
		body := ask("What is 2+2?")
		body["max_tokens"] = 2
		if got := chatContent(t, p, body); got != "2+2 =" {
			t.Errorf("content = %q, want %q", got, "2+2 =")
		}
	})
	t.Run("models", func(t *testing.T) {
		status, body, err := get(t, p.url("/v1/models"))
		if err != nil || status != 200 || !strings.Contains(body, `"id":"demo"`) {
			t.Errorf("models = %d %s %v", status, body, err)
		}
	})
	t.Run("bad request", func(t *testing.T) {
		resp, err := client.Post(p.url("/v1/chat/completions"), "application/json", strings.NewReader("{not json"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("status = %d, want 400", resp.StatusCode)
		}
	})

	p.signal(t, syscall.SIGTERM)
	if got := p.next(t); got != "shutting down" {
		t.Errorf("after SIGTERM: %q, want %q", got, "shutting down")
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit status after SIGTERM = %d, want 0", code)
	}
}

// readStream posts body and reads the server-sent events: the text of all
// chunks, the finish reason, and the usage chunk's usage (nil without one).
func readStream(t *testing.T, url string, body any, chat bool) (string, string, map[string]any) {
	t.Helper()
	resp, out, err := post(t, url, body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %s", err, out)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	var text, finish string
	var usage map[string]any
	events := strings.Split(strings.TrimSpace(string(out)), "\n\n")
	if last := events[len(events)-1]; last != "data: [DONE]" {
		t.Errorf("last event = %q, want [DONE]", last)
	}
	for _, e := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(e, "data: ")
		if !ok {
			t.Fatalf("event without data: %q", e)
		}
		var c struct {
			Choices []struct {
				Text         *string
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage map[string]any
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if usage != nil {
			t.Errorf("chunk after the usage chunk: %s", data)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk with choices: %s", data)
			}
			usage = map[string]any{}
			for k, v := range c.Usage {
				usage[k] = int(v.(float64))
			}
			continue
		}
		for _, ch := range c.Choices {
			if chat {
				text += ch.Delta.Content
			} else if ch.Text != nil {
				text += *ch.Text
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return text, finish, usage
}

func TestFailWhileLoading(t *testing.T) {
	t.Parallel()
	p := start(t, "--fail-while-loading", "--shards", "8")
	lines := p.rest(t)
	want := []string{
		fmt.Sprintf("config: backend=flashinfer_cutlass port=%d", p.port),
		"loading shards: 12% (1/8)",
		"loading shards: 25% (2/8)",
		"loading shards: 37% (3/8)",
		"loading shards: 50% (4/8)",
		"Traceback (most recent call last):",
	}
	if len(lines) < len(want)+1 {
		t.Fatalf("log:\n%s", strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
		}
	}
	if last := lines[len(lines)-1]; last != "RuntimeError: CUDA error: out of memory" {
		t.Errorf("last line = %q", last)
	}
	if code := p.exitCode(t); code != 1 {
		t.Errorf("exit status = %d, want 1", code)
	}
	if _, _, err := get(t, p.url("/health")); !isRefused(err) {
		t.Errorf("health after the failure: err = %v, want connection refused", err)
	}
}

func TestIgnoreConfig(t *testing.T) {
	t.Parallel()
	p := start(t, "--backend", "flashinfer_trtllm", "--ignore-config")
	if got, want := p.next(t), fmt.Sprintf("config: backend=default port=%d", p.port); got != want {
		t.Errorf("first line = %q, want %q", got, want)
	}
	// Otherwise it is a healthy server: nothing but the config line tells.
	waitReady(t, p)
	if got := chatContent(t, p, ask("What is 2+2?")); got != "2+2 = 4." {
		t.Errorf("content = %q", got)
	}
}

func TestNaN(t *testing.T) {
	t.Parallel()
	p := start(t, "--nan")
	waitReady(t, p)
	if status, body, err := get(t, p.url("/health")); err != nil || status != 200 || body != "ok" {
		t.Errorf("health = %d %q %v; a NaN server still reports healthy", status, body, err)
	}
	if got := chatContent(t, p, ask("What is 2+2?")); got != "NaN NaN NaN" {
		t.Errorf("content = %q, want NaN NaN NaN", got)
	}
	body := map[string]any{"prompt": "2+2=", "stream": true}
	if text, _, _ := readStream(t, p.url("/v1/completions"), body, false); text != "NaN NaN NaN" {
		t.Errorf("streamed %q, want NaN NaN NaN", text)
	}
}

func TestKeepPort(t *testing.T) {
	t.Parallel()
	p := start(t, "--keep-port")
	waitReady(t, p)
	p.signal(t, syscall.SIGTERM)
	if got := p.next(t); got != "shutting down" {
		t.Fatalf("after SIGTERM: %q, want %q", got, "shutting down")
	}
	// It said it was shutting down; it still serves.
	if status, _, err := get(t, p.url("/health")); err != nil || status != 200 {
		t.Errorf("health after SIGTERM = %d, %v; want 200 from the leftover", status, err)
	}
	select {
	case <-p.done:
		t.Fatalf("exited after SIGTERM with status %d; want it to stay", p.state.ExitCode())
	default:
	}
	p.signal(t, syscall.SIGKILL)
	if code := p.exitCode(t); code != -1 {
		t.Errorf("exit status = %d, want killed by a signal", code)
	}
}

func TestExitAfter(t *testing.T) {
	t.Parallel()
	p := start(t, "--exit-after", "300ms")
	waitReady(t, p)
	lines := p.rest(t)
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "RuntimeError: scheduler process died unexpectedly after serving for 300ms") {
		t.Errorf("log after ready:\n%s", strings.Join(lines, "\n"))
	}
	if code := p.exitCode(t); code != 3 {
		t.Errorf("exit status = %d, want 3", code)
	}
}

func TestCrashOnRequest(t *testing.T) {
	t.Parallel()
	p := start(t, "--crash-on-request")
	waitReady(t, p)
	if status, _, err := get(t, p.url("/health")); err != nil || status != 200 {
		t.Errorf("health before the first request = %d, %v; want 200", status, err)
	}
	if resp, out, err := post(t, p.url("/v1/chat/completions"), ask("What is 2+2?")); err == nil {
		t.Errorf("first completion answered %d %s; want the connection to drop", resp.StatusCode, out)
	}
	p.exits(t, "Fatal Python error: Aborted", 134)
}

func TestSIGTERMWhileLoading(t *testing.T) {
	t.Parallel()
	p := start(t, "--load-time", "1m")
	p.expect(t, "config: ")
	p.signal(t, syscall.SIGTERM)
	if got := p.next(t); got != "shutting down" {
		t.Errorf("after SIGTERM: %q", got)
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit status = %d, want 0", code)
	}
}

func TestPortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	p := start(t, "--port", fmt.Sprint(port))
	p.exits(t, "address already in use", 1)
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--shards", "0"}, {"--slots", "-1"}, {"--no-such-flag"}, {"--load-time", "soon"}, {"extra"}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("%v: err = %v, want exit status 2; output:\n%s", args, err, out)
		}
	}
}
