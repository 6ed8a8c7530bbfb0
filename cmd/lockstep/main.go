// Command lockstep runs declarative verification plans. This package only
// turns flags into calls and results into views; the logic lives in
// plans, runner and steps.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"lockstep/plans"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// A command is one subcommand: a summary for the command list and the
// function that runs it. run parses its own flags (printing its help for
// -h) and returns the exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand; adding one is one line here.
func commands() map[string]command {
	return map[string]command{
		"validate": {"check plans without running anything", validateCommand},
		"fmt":      {"lay out plan files canonically", fmtCommand},
		"explain":  {"say what each step does and what it must observe to move on", explainCommand},
		"mcp":      {"serve lockstep to AI agents over the Model Context Protocol (stdio)", mcpCommand},
		"run":      {"run a plan: one attempt, recorded; --matrix for several", runCmd},
		"attempts": {"the table of attempts; show one; diff two", attemptsCmd},
		"report":   {"a report of a plan's attempts: HTML with charts, or Markdown", reportCmd},
		"version":  {"print this binary's version, from its build information", versionCmd},
	}
}

const usage = `lockstep runs declarative verification plans: steps that move on only
when observed state confirms them.

Usage:
  lockstep COMMAND [ARGUMENTS]

Commands:
%s
Run 'lockstep COMMAND --help' for a command's flags and examples.

Examples:
  lockstep run examples/quickstart.hcl
  lockstep attempts examples/quickstart.hcl
  lockstep validate examples/quickstart.hcl
  lockstep explain examples/glm5.hcl --format markdown
  lockstep fmt -check
`

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		fmt.Fprint(stderr, commandList(cmds))
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(args) > 1 {
			if c, ok := cmds[args[1]]; ok {
				return c.run([]string{"--help"}, stdout, stderr)
			}
			return usageError(stderr, fmt.Sprintf("unknown command %q", args[1]), commandHint(args[1], cmds))
		}
		fmt.Fprint(stdout, commandList(cmds))
		return exitOK
	case "-version", "--version":
		return versionCmd(args[1:], stdout, stderr)
	}
	c, ok := cmds[name]
	if !ok {
		if strings.HasPrefix(name, "-") {
			return usageError(stderr, fmt.Sprintf("flag %s comes after a command", name), "write lockstep COMMAND "+name+"; lockstep --help lists the commands")
		}
		return usageError(stderr, fmt.Sprintf("unknown command %q", name), commandHint(name, cmds))
	}
	return c.run(args[1:], stdout, stderr)
}

func commandList(cmds map[string]command) string {
	names := make([]string, 0, len(cmds))
	width := 0
	for n := range cmds {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n, cmds[n].summary)
	}
	return fmt.Sprintf(usage, b.String())
}

func commandHint(name string, cmds map[string]command) string {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := plans.Suggest(name, names); s != "" {
		return fmt.Sprintf("did you mean %q? lockstep --help lists the commands", s)
	}
	return "lockstep --help lists the commands"
}
