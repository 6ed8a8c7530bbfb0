package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"lockstep/targets"
)

// procsCmd is "[!] procs [-kill] REGEXP": the live processes of this
// script whose command line matches REGEXP, one pid a line; it fails when
// there is none (with !, when there is one). -kill sends them SIGKILL.
// Only this script's processes count (scriptProcesses): pgrep -f would
// also see another test's, or the same script's in another test run on
// the machine, and pkill -f would kill them.
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

// scriptProcesses lists the processes, zombies aside, of the script
// whose folder is work, with a command line matching re. A process is the
// script's when its working directory is under work (where lockstep
// starts its commands locally, and over SSH with the plans' workdir), or
// its environment is the script's (WORK=work: a daemon that went to /
// keeps it), or its command line names a path under work (nginx -p
// $WORK/site, whose title overwrites its environment), or it carries the
// mark of a launch that a record under work names (a process started over
// SSH in the login's home, with sshd's environment: the mark is in its
// limits, whatever it did to its environment).
func scriptProcesses(work string, re *regexp.Regexp) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	marks, err := recordedMarks(work)
	if err != nil {
		return nil, err
	}
	local := targets.NewLocal()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone, or a zombie (it has no command line)
		}
		cmdline := strings.TrimSuffix(strings.ReplaceAll(string(raw), "\x00", " "), " ")
		if !re.MatchString(cmdline) {
			continue
		}
		if !inFolder(dir, work, cmdline) {
			an, ok, err := targets.ProcessOf(context.Background(), local, pid)
			if err != nil || !ok || !marks[an.Mark] {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// inFolder says whether the process at dir (/proc/PID), whose command
// line is cmdline, works in, has the environment of, or names the folder
// work.
func inFolder(dir, work, cmdline string) bool {
	if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err == nil && under(cwd, work) {
		return true
	}
	if env, err := os.ReadFile(filepath.Join(dir, "environ")); err == nil {
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == "WORK="+work {
				return true
			}
		}
	}
	for _, f := range strings.Fields(cmdline) {
		if i := strings.Index(f, work); i >= 0 && under(f[i:], work) {
			return true
		}
	}
	return false
}

// markField is a launch's mark in a record's events (events.HeldProcess).
var markField = regexp.MustCompile(`"mark":"([0-9a-f]+)"`)

// recordedMarks are the marks of the launches that the records under work
// (every attempt's events.jsonl, wherever its plan put it) name.
func recordedMarks(work string) (map[string]bool, error) {
	marks := map[string]bool{}
	err := filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a folder the script removed or cannot be read
		}
		if d.IsDir() || d.Name() != "events.jsonl" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, m := range markField.FindAllSubmatch(b, -1) {
			marks[string(m[1])] = true
		}
		return nil
	})
	return marks, err
}

// under says whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
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
		t.Fatal("the script left processes of its own running (now killed):\n" + strings.Join(left, "\n"))
	}
}
