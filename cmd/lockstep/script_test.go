package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The CLI's behaviour is tested end to end by the scripts under
// testdata/script: each runs the real lockstep binary (this test binary,
// re-executed) and checks its output and exit status.

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lockstep": func() { os.Exit(lockstep(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	bin := buildDemoServer(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("LOCKSTEP_RECORDS", "")
			return nil
		},
		RequireUniqueNames: true,
	})
}

// buildDemoServer builds examples/demoserver once for every script, into
// a folder put on the scripts' PATH.
func buildDemoServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "demoserver"), "../../examples/demoserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the demo server: %v\n%s", err, out)
	}
	return dir
}
