package examples_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lockstep/plans"
	"lockstep/views/browsertest"
)

// The examples run here as a user runs them: the real lockstep binary,
// against the real servers from Debian's packages, each on a free port
// and in a folder of its own. A missing server skips its example on a
// developer's machine and fails it in CI, where they are installed.

// lockstepBin is the binary under test, built once by TestMain.
var lockstepBin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "lockstep-examples-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		lockstepBin = filepath.Join(dir, "lockstep")
		build := exec.Command("go", "build", "-o", lockstepBin, "./cmd/lockstep")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building lockstep: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

// statSources stats every file the binary is built from. go test caches
// a pass by what the tests read (from m.Run on, not in TestMain), and `go
// build` in a child process reads the module unseen: without this, a
// change to the runner or a load would replay this package's cached pass
// instead of running it.
var statSources = sync.OnceValue(func() error {
	root := ".."
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") || d.Name() == "go.mod" || d.Name() == "go.sum" {
			_, err = os.Stat(path)
		}
		return err
	})
})

// need skips the test when a program the example drives is missing,
// outside CI; in CI (CI=true) it fails it, since CI installs them.
func need(t *testing.T, pkg string, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err == nil {
			continue
		}
		msg := fmt.Sprintf("%s not found: install %s (apt-get install %s)", p, pkg, pkg)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// freePort is a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs lockstep from the repository's root, as the examples' comments
// tell a user to, with its records in a temporary folder.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	if err := statSources(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lockstepBin, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "LOCKSTEP_RECORDS="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running lockstep %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// confirmed checks that a run of plan confirmed every step and said
// nothing on stderr: no warning either.
func confirmed(t *testing.T, plan string, res result) {
	t.Helper()
	if res.code != 0 || !regexp.MustCompile(`(?m)^confirmed: every step of `+plan+` held`).MatchString(res.stdout) {
		t.Fatalf("exit %d, want 0 and confirmed\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if res.stderr != "" {
		t.Errorf("stderr, want none:\n%s", res.stderr)
	}
}

// matrixTable checks that a --matrix run confirmed one attempt per value
// and returns the table it printed last.
func matrixTable(t *testing.T, plan, name string, values []string, res result) string {
	t.Helper()
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	at := strings.LastIndex(res.stdout, "\n"+plan+": ")
	if at < 0 {
		t.Fatalf("no table of attempts at the end of the output:\n%s", res.stdout)
	}
	table := res.stdout[at+1:]
	rows := strings.Split(strings.TrimSpace(table), "\n")
	if len(rows) != 2+len(values) {
		t.Fatalf("table has %d lines, want a title, a header and %d rows:\n%s", len(rows), len(values), table)
	}
	for i, v := range values {
		row := rows[2+i]
		if !strings.Contains(row, "confirmed") || !strings.Contains(row, name+"="+v) {
			t.Errorf("row %d is not %s=%s confirmed: %q", i+1, name, v, row)
		}
	}
	return table
}

// TestExamplesAreClean: what users copy validates without an error or a
// warning, and is laid out as lockstep fmt lays it out.
func TestExamplesAreClean(t *testing.T) {
	files, err := filepath.Glob("*/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example plans found")
	}
	args := []string{"validate"}
	for _, f := range files {
		args = append(args, filepath.Join("examples", f))
	}
	if res := run(t, nil, args...); res.code != 0 || res.stderr != "" || strings.Contains(strings.ToLower(res.stdout), "warning") {
		t.Errorf("lockstep validate: exit %d, want 0 and no warning\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			p, diags := plans.ParseFile(path)
			if len(diags) > 0 {
				t.Fatalf("diagnostics:\n%s", diags.Error())
			}
			if _, diags := p.Resolve(plans.Inputs{}); diags.HasErrors() {
				t.Fatalf("resolve with defaults: %s", diags.Error())
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := plans.Format(src); !bytes.Equal(got, src) {
				t.Errorf("not formatted; lockstep fmt would write:\n%s", got)
			}
		})
	}
}

// server is one of the server examples: its plan, its variables, what a
// confirmed run must show, and the variable its matrix varies.
type server struct {
	plan   string // e.g. "redis": examples/redis/redis.hcl
	vars   []string
	wants  []string
	matrix string   // NAME
	values []string // the matrix's values
	// report, when set, is what the report of the matrix's attempts
	// must hold (lockstep report -o FILE): a real server's sweep drawn.
	report []string
}

// runServer runs the example twice. First with --keep, as a user debugging
// it would, leaving its server running; then as a matrix, whose first
// attempt must stop that leftover (or fail to find the port free), and
// which must leave nothing listening. The matrix's table is logged.
func runServer(t *testing.T, ex server, port int) {
	t.Helper()
	file := "examples/" + ex.plan + "/" + ex.plan + ".hcl"
	parent := t

	t.Run("run, kept", func(t *testing.T) {
		res := run(t, nil, append([]string{"run", file, "--keep"}, ex.vars...)...)
		kept := regexp.MustCompile(`launch\.server: kept running \(pid \d+, process group (\d+)\)`).FindStringSubmatch(res.stdout)
		if kept != nil {
			// Whatever the matrix below does, nothing outlives the test.
			pgid, _ := strconv.Atoi(kept[1])
			parent.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
		}
		confirmed(t, ex.plan, res)
		if kept == nil {
			t.Errorf("output lacks the kept server's process group:\n%s", res.stdout)
		}
		for _, want := range ex.wants {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, res.stdout)
			}
		}
	})

	t.Run("matrix over the leftover", func(t *testing.T) {
		records := []string{"LOCKSTEP_RECORDS=" + t.TempDir()} // the report reads the matrix's attempts
		res := run(t, records, append([]string{"run", file, "--matrix", ex.matrix + "=" + strings.Join(ex.values, ",")}, ex.vars...)...)
		t.Logf("the table:\n%s", matrixTable(t, ex.plan, ex.matrix, ex.values, res))
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			t.Errorf("port %d still open after the plan: its launch was not stopped", port)
		}
		if len(ex.report) == 0 {
			return
		}
		out := filepath.Join(t.TempDir(), "report.html")
		if rep := run(t, records, "report", file, "-o", out); rep.code != 0 {
			t.Fatalf("lockstep report: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
		}
		html, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range ex.report {
			if !strings.Contains(string(html), want) {
				t.Errorf("the report of the matrix's attempts lacks %q", want)
			}
		}
		if !browsertest.Available() {
			t.Log("no Chromium (apt-get install chromium): the report is not loaded in a browser")
			return
		}
		page, err := browsertest.Load(out, filepath.Join(t.TempDir(), "chromium"), "#sweeps svg", "#attempts table", "script")
		if err != nil {
			t.Fatal(err)
		}
		browsertest.KeepArtifact("report-"+ex.plan+".png", page.Screenshot)
		if len(page.Problems) > 0 || page.Counts[0] == 0 || page.Counts[1] == 0 || page.Counts[2] != 0 {
			t.Errorf("the report in Chromium: %d sweep charts, %d attempts tables, %d scripts (want charts, a table, no script); the page reported %q",
				page.Counts[0], page.Counts[1], page.Counts[2], page.Problems)
		}
	})
}

func TestRedis(t *testing.T) {
	need(t, "redis-server", "redis-server")
	need(t, "redis-tools", "redis-cli", "redis-benchmark")
	p := freePort(t)
	port := strconv.Itoa(p)
	vars := []string{"-var", "port=" + port, "-var", "workdir=" + t.TempDir()}

	runServer(t, server{
		plan:   "redis",
		vars:   vars,
		wants:  []string{"assert.config_runs: confirmed", "benchmark.throughput: confirmed", "get_requests_per_s=", "assert.eviction: confirmed"},
		matrix: "policy",
		values: []string{"allkeys-lru", "noeviction"},
	}, p)

	t.Run("port held by another program", func(t *testing.T) {
		// A listener that is not Redis survives the SHUTDOWN: the plan
		// must stop there and name who holds the port.
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		res := run(t, nil, append([]string{"run", "examples/redis/redis.hcl"}, vars...)...)
		want := fmt.Sprintf("port %s is still held by pid %d", port, os.Getpid())
		if res.code != 1 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "launch.server: skipped") {
			t.Fatalf("exit %d, want 1 with %q and the launch skipped\nstdout:\n%s\nstderr:\n%s", res.code, want, res.stdout, res.stderr)
		}
	})

	t.Run("policy outside the list", func(t *testing.T) {
		res := run(t, nil, append([]string{"run", "examples/redis/redis.hcl", "-var", "policy=lru"}, vars...)...)
		if res.code != 2 || !strings.Contains(res.stderr, "policy must be one of Redis's maxmemory-policy values") {
			t.Fatalf("exit %d, want 2 and the validation's message\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
		}
	})
}

func TestNginx(t *testing.T) {
	need(t, "nginx", "nginx")
	p := freePort(t)
	runServer(t, server{
		plan:   "nginx",
		vars:   []string{"-var", "port=" + strconv.Itoa(p), "-var", "workdir=" + t.TempDir()},
		wants:  []string{"wait.ready: confirmed", "assert.serves_this_attempt: confirmed", "benchmark.throughput: confirmed", "assert.logged: confirmed"},
		matrix: "workers",
		values: []string{"1", "2"},
	}, p)
}

func TestPostgres(t *testing.T) {
	need(t, "postgresql-client", "psql", "pgbench")
	// Debian keeps the server's programs in one folder per major version.
	servers, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(servers) == 0 {
		need(t, "postgresql", "postgres")
		path, _ := exec.LookPath("postgres")
		servers = []string{path}
	}
	sort.Strings(servers)
	pgBin := filepath.Dir(servers[len(servers)-1])
	// As root the plan runs the server as the postgres user, who must
	// reach the work folder: t.TempDir's folders are closed to others.
	workdir := t.TempDir()
	for _, d := range []string{workdir, filepath.Dir(workdir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := freePort(t)
	runServer(t, server{
		plan:   "postgres",
		vars:   []string{"-var", "port=" + strconv.Itoa(p), "-var", "workdir=" + workdir, "-var", "pg_bin=" + pgBin},
		wants:  []string{"assert.config_runs: confirmed", "assert.round_trip: confirmed", "benchmark.tps: confirmed"},
		matrix: "shared_buffers",
		// PostgreSQL shows 1024MB as 1GB: the plan compares bytes.
		values: []string{"16MB", "1024MB"},
	}, p)
}

// TestGPU runs the gpu plans against the stand-in for nvidia-smi, which
// prints what a real one printed on the boxes the fixtures were taken on.
func TestGPU(t *testing.T) {
	standIn, err := filepath.Abs("../probes/testdata/nvidia-smi")
	if err != nil {
		t.Fatal(err)
	}
	on := func(fixture string) []string {
		return []string{"PATH=" + standIn + string(os.PathListSeparator) + os.Getenv("PATH"), "NVIDIA_SMI_FIXTURE=" + fixture}
	}
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
	const noDriver = `gpu: no NVIDIA driver is loaded on the target: nvidia-smi exit status 9: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.`

	t.Run("free/idle", func(t *testing.T) {
		res := run(t, on("h100-idle"), "run", "examples/gpu/gpu-free.hcl", "-var", "gpus=8")
		confirmed(t, "gpu-free", res)
	})
	t.Run("free/loaded", func(t *testing.T) {
		res := run(t, on("h100-loaded"), "run", "examples/gpu/gpu-free.hcl", "-var", "free_timeout=2s")
		failed(t, res,
			"wait.free: timed_out after 2",
			"GPU memory is held by pid 2183410 (python3) 612 MiB on GPU 0, pid 2183822 (sglang::scheduler_TP0) 78210 MiB on GPU 0",
			"pid 2183871 (sglang::scheduler_TP7) 78194 MiB on GPU 7",
		)
	})
	t.Run("free/too few", func(t *testing.T) {
		res := run(t, on("h100-idle"), "run", "examples/gpu/gpu-free.hcl", "-var", "gpus=16")
		failed(t, res, "assert.driver: failed", "the host has 8 GPUs; the launch needs 16", "wait.free: skipped")
	})
	t.Run("free/no driver", func(t *testing.T) {
		res := run(t, on("no-driver"), "run", "examples/gpu/gpu-free.hcl")
		failed(t, res, "assert.driver: failed after", noDriver, "wait.free: skipped")
	})

	t.Run("held/loaded", func(t *testing.T) {
		res := run(t, on("h100-loaded"), "run", "examples/gpu/gpu-held.hcl")
		confirmed(t, "gpu-held", res)
	})
	t.Run("held/idle", func(t *testing.T) {
		res := run(t, on("h100-idle"), "run", "examples/gpu/gpu-held.hcl", "-var", "timeout=2s")
		failed(t, res, "wait.held: timed_out after 2", "processes named like sglang::scheduler hold 1024 MiB or more on 0 of the 8 GPUs the server should use")
	})
	t.Run("held/another process", func(t *testing.T) {
		res := run(t, on("b200-loaded"), "run", "examples/gpu/gpu-held.hcl")
		failed(t, res, "wait.held: aborted after", "another process holds GPU memory: pid 913377 (/usr/bin/python3) 171880 MiB on GPU 0")
	})
	t.Run("held/no driver fails at once", func(t *testing.T) {
		// The wait's timeout is ten minutes: a missing driver must not
		// be waited for.
		start := time.Now()
		res := run(t, on("no-driver"), "run", "examples/gpu/gpu-held.hcl")
		failed(t, res, "wait.held: failed after", noDriver)
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("took %s; a missing driver must fail the wait at once", took)
		}
	})
}
