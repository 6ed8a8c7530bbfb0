package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"lockstep/targets/sshtest"
)

var update = flag.Bool("update", false, "rewrite the golden outputs in testdata/script")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lockstep": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
		"rawhttp":  func() { os.Exit(rawHTTPMain()) },
	})
}

// The scripts run the real binary and compare what a user sees (stdout,
// stderr, exit codes, files) against the goldens in the txtar files.
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildDemoServer(t)
	ssh := sshdForScripts(t)
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			// The run scripts launch the demo server by name.
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("NO_COLOR", "1")
			env.Setenv("LOCKSTEP_RECORDS", "")
			env.Setenv("DEMOSERVER", filepath.Join(bin, "demoserver"))
			env.Setenv("LOCKSTEP_VAR_demoserver", filepath.Join(bin, "demoserver"))
			env.Setenv("LOCKSTEP_VAR_work", env.WorkDir)
			env.Defer(func() { killLeftovers(env.T(), env.WorkDir) })
			// Each script's servers listen on a port of their own, so scripts
			// (and two test runs) never meet on one.
			port, err := freePort()
			if err != nil {
				return err
			}
			env.Setenv("PORT", strconv.Itoa(port))
			env.Setenv("LOCKSTEP_VAR_port", strconv.Itoa(port))
			if ssh != nil {
				// The ssh scripts' plans declare these variables.
				env.Setenv("SSH_PORT", strconv.Itoa(ssh.Port))
				env.Setenv("LOCKSTEP_VAR_ssh_port", strconv.Itoa(ssh.Port))
				env.Setenv("LOCKSTEP_VAR_ssh_user", ssh.User)
				env.Setenv("LOCKSTEP_VAR_ssh_key", ssh.UserKey)
				env.Setenv("LOCKSTEP_VAR_known_hosts", ssh.KnownHosts)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "sshd":
				return ssh != nil, nil
			case "netns":
				return canNetns(), nil
			case "tmpfs", "chattr":
				return canDo(cond), nil
			case "chromium":
				return haveChromium(), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: withEndingCmds(map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"procs":  procsCmd,
			"fleet":  fleetCmd,
			"browse": browseCmd,
			// exits N CMD ARGS... runs CMD and wants exit status N.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits N command [args...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: %v", err)
				}
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exits: %v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
				}
			},
		}),
	})
}

// sshdForScripts starts one real OpenSSH sshd on 127.0.0.1 for the ssh
// scripts ([sshd] in a script). Without sshd they skip, except under CI,
// where it must be installed.
func sshdForScripts(t *testing.T) *sshtest.Server {
	if _, err := os.Stat(sshtest.SSHDPath); err != nil && os.Getenv("CI") != "true" {
		t.Logf("%s is missing: the ssh scripts skip (apt-get install openssh-server)", sshtest.SSHDPath)
		return nil
	}
	return sshtest.StartSSHD(t)
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

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
