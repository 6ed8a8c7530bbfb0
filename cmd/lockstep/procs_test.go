package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// procsCmd is "[!] procs [-kill] REGEXP": the live processes of this
// script whose command line matches REGEXP, one pid a line; it fails when
// there is none (with !, when there is one). -kill sends them SIGKILL.
// A script's processes are those whose working directory is under $WORK,
// where lockstep starts its launches: pgrep -f would also see the same
// script's processes in another test run on the machine, and pkill -f
// would kill them.
func procsCmd(ts *testscript.TestScript, neg bool, args []string) {
	kill := len(args) == 2 && args[0] == "-kill"
	if kill {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: procs [-kill] REGEXP")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	pids, err := scriptProcesses(ts.Getenv("WORK"), re)
	ts.Check(err)
	for _, pid := range pids {
		fmt.Fprintln(ts.Stdout(), pid)
		if kill {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	switch {
	case neg && len(pids) > 0:
		ts.Fatalf("processes matching %q are running: %v", args[0], pids)
	case !neg && len(pids) == 0:
		ts.Fatalf("no process matches %q", args[0])
	case kill:
		// A killed process lingers until the kernel has ended it.
		deadline := time.Now().Add(waitFor)
		for {
			left, err := scriptProcesses(ts.Getenv("WORK"), re)
			ts.Check(err)
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("processes %v still running %s after SIGKILL", left, waitFor)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// scriptProcesses lists the processes, zombies aside, that have their
// working directory under work and a command line matching re.
func scriptProcesses(work string, re *regexp.Regexp) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
		if err != nil || (cwd != work && !strings.HasPrefix(cwd, work+"/")) {
			continue // gone, a zombie (no cwd), or another script's
		}
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		if re.MatchString(strings.TrimSuffix(strings.ReplaceAll(string(cmdline), "\x00", " "), " ")) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killLeftovers ends what a script left running in work, so that a script
// that fails halfway (before its own kill of a kept server, say) leaves
// nothing behind, and fails a script that passed but left something.
func killLeftovers(t testscript.T, work string) {
	pids, err := scriptProcesses(work, regexp.MustCompile(``))
	if err != nil {
		t.Log(err)
		return
	}
	var left []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(left) > 0 {
		t.Fatal("the script left processes running in its folder (now killed):\n" + strings.Join(left, "\n"))
	}
}
