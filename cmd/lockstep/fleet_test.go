package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"lockstep/targets/netnstest"
)

// fleets are the scripts' fleets of test hosts, by script.
var fleets sync.Map // *testscript.TestScript -> *netnstest.Fleet

// fleetCmd drives a fleet of test hosts in network namespaces
// (targets/netnstest) for the fleet scripts:
//
//	fleet start N           make N hosts n1..nN; the plans read them as
//	                        var.hosts and var.fleet_config (LOCKSTEP_VAR_*)
//	fleet linkdown HOST     cut HOST off (its link down); linkup brings it back
//	fleet stopsshd HOST     stop HOST's sshd (open connections go on); startsshd starts it
//	fleet waitfile HOST F   wait until /tmp/F exists on HOST (a probe said it runs)
//	fleet touch HOST|all F  create /tmp/F on HOST, or on every host ("all", "-n3": all but n3)
//	fleet procs             fail if a process other than sshd runs on a host
//
// A script starts with [!netns] skip: where namespaces cannot be made
// it skips, saying why, except under CI=true, where it runs and fails.
func fleetCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fleet start N | linkdown HOST | linkup HOST | stopsshd HOST | waitfile HOST FILE | touch HOST|all|-HOST FILE | procs")
	}
	if args[0] == "start" {
		startFleet(ts, args[1:])
		return
	}
	v, ok := fleets.Load(ts)
	if !ok {
		ts.Fatalf("fleet %s: no fleet: run fleet start N first", args[0])
	}
	f := v.(*netnstest.Fleet)
	host := func(name string) *netnstest.Host {
		h := f.Host(name)
		if h == nil {
			ts.Fatalf("fleet: no host %q", name)
		}
		return h
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch {
	case args[0] == "linkdown" && len(args) == 2:
		ts.Check(host(args[1]).LinkDown(ctx))
	case args[0] == "linkup" && len(args) == 2:
		ts.Check(host(args[1]).LinkUp(ctx))
	case args[0] == "stopsshd" && len(args) == 2:
		ts.Check(host(args[1]).StopSSHD())
	case args[0] == "startsshd" && len(args) == 2:
		ts.Check(host(args[1]).StartSSHD(ctx))
	case args[0] == "waitfile" && len(args) == 3:
		// The file is the event: a probe on the host made it.
		path := filepath.Join(host(args[1]).Tmp, args[2])
		for {
			if _, err := os.Stat(path); err == nil {
				return
			}
			select {
			case <-ctx.Done():
				ts.Fatalf("fleet waitfile: %s did not appear on %s", args[2], args[1])
			case <-time.After(20 * time.Millisecond):
			}
		}
	case args[0] == "touch" && len(args) == 3:
		for _, h := range f.Hosts {
			if args[1] == "all" || args[1] == h.Name || strings.HasPrefix(args[1], "-") && args[1][1:] != h.Name {
				ts.Check(os.WriteFile(filepath.Join(h.Tmp, args[2]), nil, 0o644))
			}
		}
	case args[0] == "procs" && len(args) == 1:
		var left []string
		for _, h := range f.Hosts {
			pids, err := h.Processes()
			ts.Check(err)
			for _, pid := range pids {
				comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				if err != nil || strings.HasPrefix(string(comm), "sshd") {
					continue // gone meanwhile, or the host's sshd and its sessions
				}
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				left = append(left, fmt.Sprintf("%s: pid %d %s", h.Name, pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
			}
		}
		if len(left) > 0 {
			ts.Fatalf("left running on the fleet:\n%s", strings.Join(left, "\n"))
		}
	default:
		ts.Fatalf("fleet: unknown or malformed command %q", strings.Join(args, " "))
	}
}

func startFleet(ts *testscript.TestScript, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: fleet start N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The hosts' login shell reads the user's ~/.bashrc: on this machine
	// it runs pyenv's rehash, which takes a lock that eight sessions at
	// once wait on for up to a minute. The scripts test lockstep, not it.
	var hide []string
	if u, err := user.Current(); err == nil {
		hide = append(hide, filepath.Join(u.HomeDir, ".bashrc"))
	}
	f, err := netnstest.New(ctx, netnstest.Options{Hosts: n, Hide: hide})
	ts.Check(err)
	fleets.Store(ts, f)
	ts.Defer(func() {
		fleets.Delete(ts)
		if err := f.Close(); err != nil {
			ts.Logf("fleet: %v", err)
		}
	})
	var quoted []string
	for _, name := range f.Names() {
		quoted = append(quoted, strconv.Quote(name))
	}
	ts.Setenv("LOCKSTEP_VAR_hosts", "["+strings.Join(quoted, ", ")+"]")
	ts.Setenv("LOCKSTEP_VAR_fleet_config", f.SSHConfig)
	ts.Setenv("FLEET_CONFIG", f.SSHConfig)
	// The user's ssh-agent plays no part: each host takes the fleet's key.
	ts.Setenv("SSH_AUTH_SOCK", "")
}

// canNetns says whether the fleet scripts run: where namespaces can be
// made, and always under CI=true (they fail there if they cannot).
func canNetns() bool {
	return os.Getenv("CI") == "true" || netnstest.Check() == nil
}
