package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// The script commands for the ways a run ends: signals, a pipe whose
// reader goes away, a terminal that closes. Each synchronises on what the
// run writes (its record), never on time.

// waitFor bounds how long a script waits for a run to reach a point: far
// beyond what the run needs, so that only a hung run reaches it.
const waitFor = 60 * time.Second

// signalled remembers, per script, the background commands `signal` sent
// a signal to, for `exitcode` to check once `wait` has reaped them.
var signalled sync.Map // *testscript.TestScript -> []*exec.Cmd

// withEndingCmds adds them to cmds.
func withEndingCmds(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	for name, c := range endingCmds() {
		cmds[name] = c
	}
	return cmds
}

func endingCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// waitfile FILE REGEXP waits until FILE exists and matches REGEXP.
		"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: waitfile FILE REGEXP")
			}
			if err := waitFile(ts.MkAbs(args[0]), args[1]); err != nil {
				ts.Fatalf("%v", err)
			}
		},
		// signal SIG sends SIG (INT, TERM, HUP, QUIT, USR1, USR2, ALRM) to
		// the commands running in the background.
		"signal": func(ts *testscript.TestScript, neg bool, args []string) {
			sigs := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT,
				"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "ALRM": syscall.SIGALRM}
			if neg || len(args) != 1 || sigs[args[0]] == 0 {
				ts.Fatalf("usage: signal INT|TERM|HUP|QUIT|USR1|USR2|ALRM")
			}
			cmds := ts.BackgroundCmds()
			if len(cmds) == 0 {
				ts.Fatalf("signal: no command runs in the background")
			}
			for _, c := range cmds {
				ts.Check(c.Process.Signal(sigs[args[0]]))
			}
			signalled.Store(ts, cmds)
		},
		// exitcode N, after wait, checks the exit status of the commands
		// signal reached.
		"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: exitcode N")
			}
			want, err := strconv.Atoi(args[0])
			ts.Check(err)
			v, ok := signalled.LoadAndDelete(ts)
			if !ok {
				ts.Fatalf("exitcode: no command was signalled")
			}
			for _, c := range v.([]*exec.Cmd) {
				if c.ProcessState == nil {
					ts.Fatalf("exitcode: run wait first")
				}
				if got := c.ProcessState.ExitCode(); got != want {
					ts.Fatalf("%s exited with %d (%s), want %d", c.Path, got, c.ProcessState, want)
				}
			}
		},
		// closeout [-stderr] [-then FILE] N CMD ARGS... runs CMD with its
		// stdout (and with -stderr its stderr too, as 2>&1 | head would)
		// into a pipe, reads N lines and closes the pipe, as `| head -N`
		// does; then creates FILE, which the plan may wait for, so that
		// the run must write after the close. Its stdout is the lines read
		// and "exit CODE"; its stderr CMD's stderr (without -stderr).
		"closeout": func(ts *testscript.TestScript, neg bool, args []string) {
			both, then := false, ""
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				switch args[0] {
				case "-stderr":
					both, args = true, args[1:]
				case "-then":
					if len(args) < 2 {
						ts.Fatalf("closeout: -then needs a file")
					}
					then, args = ts.MkAbs(args[1]), args[2:]
				default:
					ts.Fatalf("closeout: unknown flag %s", args[0])
				}
			}
			if neg || len(args) < 2 {
				ts.Fatalf("usage: closeout [-stderr] [-then FILE] N command [args...]")
			}
			n, err := strconv.Atoi(args[0])
			ts.Check(err)
			out, code, err := closeOut(ts, both, then, n, args[1], args[2:]...)
			ts.Check(err)
			fmt.Fprintf(ts.Stdout(), "%sexit %d\n", out, code)
		},
		// stallout FILE REGEXP N CMD ARGS... runs CMD with its stdout into
		// a pipe, reads N lines, then stops reading (as `| less` not
		// scrolled does) until FILE matches REGEXP, then reads the rest.
		// Its stdout is the lines read, then "exit CODE".
		"stallout": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 4 {
				ts.Fatalf("usage: stallout FILE REGEXP N command [args...]")
			}
			n, err := strconv.Atoi(args[2])
			ts.Check(err)
			out, code, err := stallOut(ts, ts.MkAbs(args[0]), args[1], n, args[3], args[4:]...)
			ts.Check(err)
			fmt.Fprintf(ts.Stdout(), "%sexit %d\n", out, code)
		},
		// mounttmpfs DIR SIZE mounts a tmpfs of SIZE (bytes, 256k) on DIR
		// until the script ends: a disk that fills.
		"mounttmpfs": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: mounttmpfs DIR SIZE")
			}
			dir := ts.MkAbs(args[0])
			ts.Check(os.MkdirAll(dir, 0o700))
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[1], "tmpfs", dir).CombinedOutput(); err != nil {
				ts.Fatalf("mount: %v: %s", err, out)
			}
			ts.Defer(func() { exec.Command("umount", dir).Run() })
		},
		// immutable [-later] PATH makes PATH immutable (chattr +i: even
		// root cannot write it, nor create files in a folder), and
		// mutable again when the script ends; with -later only the
		// latter, for a PATH the plan makes immutable itself.
		"immutable": func(ts *testscript.TestScript, neg bool, args []string) {
			later := len(args) == 2 && args[0] == "-later"
			if neg || len(args) != 1 && !later {
				ts.Fatalf("usage: immutable [-later] PATH")
			}
			path := ts.MkAbs(args[len(args)-1])
			ts.Defer(func() { exec.Command("chattr", "-i", path).Run() })
			if !later {
				if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
					ts.Fatalf("chattr: %v: %s", err, out)
				}
			}
		},
		// hangup FILE REGEXP CMD ARGS... runs CMD as the leader of a new
		// session whose controlling terminal is a new pseudo-terminal,
		// waits until FILE matches REGEXP, then closes the terminal, as a
		// closed terminal window or a dropped ssh session does: the
		// kernel sends SIGHUP. Its stdout is what CMD wrote on the
		// terminal, then "exit CODE".
		"hangup": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 3 {
				ts.Fatalf("usage: hangup FILE REGEXP command [args...]")
			}
			out, code, err := hangUp(ts, ts.MkAbs(args[0]), args[1], args[2], args[3:]...)
			ts.Check(err)
			fmt.Fprintf(ts.Stdout(), "%s\nexit %d\n", out, code)
		},
	}
}

func waitFile(path, pattern string) error {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(waitFor)
	for {
		if data, err := os.ReadFile(path); err == nil && re.Match(data) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waitfile: %s did not match %q within %s", path, pattern, waitFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scriptCommand is name run as a script's exec would run it: in its directory,
// with its environment.
func scriptCommand(ts *testscript.TestScript, name string, args ...string) *exec.Cmd {
	path, err := exec.LookPath(name)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	c := exec.Command(path, args...)
	c.Args[0] = name
	c.Dir = ts.MkAbs(".")
	// The variables testscript and this package's Setup give a script.
	for _, k := range []string{"WORK", "PATH", "HOME", "TMPDIR", "PORT", "NO_COLOR", "LOCKSTEP_RECORDS", "DEMOSERVER", "EXAMPLES",
		"LOCKSTEP_VAR_port", "LOCKSTEP_VAR_work", "LOCKSTEP_VAR_demoserver"} {
		c.Env = append(c.Env, k+"="+ts.Getenv(k))
	}
	return c
}

// piped starts CMD with its stdout (and with both its stderr too) into a
// pipe, and reads its first n lines.
type piped struct {
	c      *exec.Cmd
	r      *os.File
	br     *bufio.Reader
	stderr bytes.Buffer
	got    strings.Builder
}

func startPiped(ts *testscript.TestScript, both bool, n int, name string, args ...string) (*piped, error) {
	p := &piped{c: scriptCommand(ts, name, args...)}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.r, p.br = r, bufio.NewReader(r)
	p.c.Stdout, p.c.Stderr = w, &p.stderr
	if both {
		p.c.Stderr = w
	}
	if err := p.c.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	w.Close()
	for range n {
		line, err := p.br.ReadString('\n')
		p.got.WriteString(line)
		if err != nil {
			break
		}
	}
	return p, nil
}

// wait waits for the command and returns what was read and its exit code.
func (p *piped) wait(ts *testscript.TestScript) (string, int) {
	err := p.c.Wait()
	p.r.Close()
	fmt.Fprint(ts.Stderr(), p.stderr.String())
	return p.got.String(), exitCode(err)
}

func closeOut(ts *testscript.TestScript, both bool, then string, n int, name string, args ...string) (string, int, error) {
	p, err := startPiped(ts, both, n, name, args...)
	if err != nil {
		return "", 0, err
	}
	p.r.Close() // the reader goes away, as head does
	if then != "" {
		if err := os.WriteFile(then, nil, 0o600); err != nil {
			p.c.Process.Kill()
			p.wait(ts)
			return "", 0, err
		}
	}
	out, code := p.wait(ts)
	return out, code, nil
}

func stallOut(ts *testscript.TestScript, file, pattern string, n int, name string, args ...string) (string, int, error) {
	p, err := startPiped(ts, false, n, name, args...)
	if err != nil {
		return "", 0, err
	}
	// Read nothing more until the run has got to FILE matching: a run
	// that waits on its reader never gets there, and this fails.
	if err := waitFile(file, pattern); err != nil {
		p.c.Process.Kill()
		p.wait(ts)
		return "", 0, err
	}
	rest, _ := io.ReadAll(p.br)
	p.got.Write(rest)
	out, code := p.wait(ts)
	return out, code, nil
}

func hangUp(ts *testscript.TestScript, file, pattern, name string, args ...string) (string, int, error) {
	master, slave, err := openPTY()
	if err != nil {
		return "", 0, err
	}
	c := scriptCommand(ts, name, args...)
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		master.Close()
		slave.Close()
		return "", 0, err
	}
	slave.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&out, master) // ends when the master is closed
		close(copied)
	}()
	werr := waitFile(file, pattern)
	master.Close() // the terminal goes away: the kernel hangs up the session
	<-copied
	err = c.Wait()
	if werr != nil {
		return out.String(), exitCode(err), werr
	}
	return out.String(), exitCode(err), nil
}

// openPTY opens a new pseudo-terminal pair. The master stays in Go's
// poller, so that closing it ends a read in progress.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	rc, err := master.SyscallConn()
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	var n uint32
	var ierr error
	err = rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr != nil {
			return
		}
		n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
	})
	if err = errors.Join(err, ierr); err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// canDo reports whether this machine lets the tests fill a disk (root,
// and a tmpfs can be mounted) or make a file immutable (chattr +i takes,
// and then even root cannot write it), trying it once.
func canDo(what string) bool {
	dir, err := os.MkdirTemp("", "lockstep-cando-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	switch what {
	case "tmpfs":
		if os.Geteuid() != 0 || exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).Run() != nil {
			return false
		}
		return exec.Command("umount", dir).Run() == nil
	case "chattr":
		f := dir + "/f"
		if os.WriteFile(f, nil, 0o600) != nil || exec.Command("chattr", "+i", f).Run() != nil {
			return false
		}
		defer exec.Command("chattr", "-i", f).Run()
		return os.WriteFile(f, []byte("x"), 0o600) != nil
	}
	return false
}
