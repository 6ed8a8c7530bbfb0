// Command lockstep runs declarative verification plans: steps that each
// wait for what they observe to confirm them before the plan moves on.
// main.go dispatches to the subcommands; each lives in its own file, and
// voice.go holds how lockstep speaks.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is a subcommand: it parses its own flags and returns the exit
// code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"run":      {"run a plan: one attempt, recorded", runCmd},
		"attempts": {"the table of attempts; show one; diff two", attemptsCmd},
	}
}

func main() {
	os.Exit(lockstep(os.Args[1:], os.Stdout, os.Stderr))
}

func lockstep(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		mainUsage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		mainUsage(stdout, cmds)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "lockstep", version())
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lockstep: unknown command %q\n", args[0])
		mainUsage(stderr, cmds)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func mainUsage(w io.Writer, cmds map[string]command) {
	fmt.Fprint(w, "usage: lockstep COMMAND [ARGS]\n\nlockstep runs declarative verification plans: each step waits until what\nit observes confirms it before the plan moves on.\n\nCommands:\n")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(w, "\nRun 'lockstep COMMAND --help' for a command's flags and examples.\n")
}
