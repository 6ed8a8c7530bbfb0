// Command hosts makes a fleet of test hosts in network namespaces
// (targets/netnstest), runs a command that uses them, and tears them
// down: bench/fleet.sh times ansible-playbook and lockstep against the
// same hosts with it.
//
// The command sees FLEET_SSH_CONFIG (an ssh_config naming the hosts),
// FLEET_HOSTS ("n1 n2 ..."), FLEET_USER, FLEET_KEY and FLEET_KNOWN_HOSTS.
// With -results FILE, "setup N SECONDS" and "teardown N SECONDS" lines
// are appended to FILE. It exits with the command's status, or 1 when the
// fleet could not be made or left something behind.
//
// usage: hosts -n HOSTS [-hide FILE,...] [-results FILE] -- COMMAND [ARG...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"lockstep/targets/netnstest"
)

func main() {
	n := flag.Int("n", 1, "hosts to make")
	hide := flag.String("hide", "", "comma-separated files that read as empty on the hosts (~/.bashrc)")
	results := flag.String("results", "", "file to append setup and teardown times to")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: hosts -n HOSTS [-hide FILE,...] [-results FILE] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	os.Exit(run(*n, *hide, *results, flag.Args()))
}

func run(n int, hide, results string, argv []string) int {
	opts := netnstest.Options{Hosts: n}
	if hide != "" {
		opts.Hide = strings.Split(hide, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	f, err := netnstest.New(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hosts: %v\n", err)
		return 1
	}
	setup := time.Since(start)
	record(results, "setup %d %.3f\n", n, setup.Seconds())
	fmt.Fprintf(os.Stderr, "hosts: %d up in %.2fs on %s\n", n, setup.Seconds(), f.Subnet)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"FLEET_SSH_CONFIG="+f.SSHConfig,
		"FLEET_HOSTS="+strings.Join(f.Names(), " "),
		"FLEET_USER="+f.User,
		"FLEET_KEY="+f.UserKey,
		"FLEET_KNOWN_HOSTS="+f.KnownHosts,
	)
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintf(os.Stderr, "hosts: %v\n", err)
		}
		code = 1
		if cmd.ProcessState != nil {
			code = max(cmd.ProcessState.ExitCode(), 1) // -1: killed by a signal
		}
	}

	start = time.Now()
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "hosts: %v\n", err)
		return 1
	}
	record(results, "teardown %d %.3f\n", n, time.Since(start).Seconds())
	return code
}

func record(file, format string, args ...any) {
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hosts: %v\n", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format, args...)
}
