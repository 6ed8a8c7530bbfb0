package main

import (
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"lockstep/agents"
)

const mcpHelp = `Usage: lockstep mcp [--root DIR]... [--allow-targets local,NAME...] [--records DIR]

Serves lockstep to an AI agent over the Model Context Protocol on stdin
and stdout: the tools validate, explain, run, status, cancel, attempts,
show and diff. An agent is an untrusted caller: the server reads and runs
plans only under the roots, runs only plans whose every step is on an
allowed target, and answers with redacted values. A run answers at once
with its attempt's number; status follows it. When the client goes away
(or on Ctrl-C), the attempts still running are stopped as Ctrl-C stops
lockstep run, and their records finished.

Flags:
  --root DIR             a folder whose plans may be read and run
                         (repeatable; default the current folder)
  --allow-targets LIST   the targets plans may run on, by name (default
                         local: this machine only)
  --records DIR          keep records under DIR instead of .lockstep
                         beside each plan (also LOCKSTEP_RECORDS)

Examples:
  lockstep mcp
  lockstep mcp --root ~/plans --allow-targets local,gpu
`

// mcpFlags are `lockstep mcp`'s flags, parsed before anything runs.
type mcpFlags struct {
	roots   []string
	targets []string
	records string
}

func parseMCPFlags(args []string) (mcpFlags, error) {
	var f mcpFlags
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.Var((*listFlag)(&f.roots), "root", "")
	fs.Func("allow-targets", "", func(s string) error {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t == "" {
				return errors.New("--allow-targets lists target names, e.g. local,gpu")
			}
			f.targets = append(f.targets, t)
		}
		return nil
	})
	fs.StringVar(&f.records, "records", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) > 0 {
		return f, errors.New("mcp takes no arguments: it serves on stdin and stdout")
	}
	return f, nil
}

func mcpCommand(args []string, stdout, stderr io.Writer) int {
	f, err := parseMCPFlags(args)
	if err != nil {
		return flagsFailed("mcp", err, mcpHelp, stdout, stderr)
	}
	// A signal ends the session as the client going away does: the
	// attempts still running are stopped and their records finished; a
	// second one cuts their always steps short.
	ctx, force, _, stop := interrupts(stderr)
	defer stop()
	s, err := agents.New(agents.Options{
		Roots:   f.roots,
		Targets: f.targets,
		Records: f.records,
		Version: buildVersion(),
		Host:    hostname(),
		User:    username(),
		Force:   force,
	})
	if err != nil {
		return usageError(stderr, err.Error(), "give a folder that exists with --root DIR")
	}
	if err := s.Serve(ctx, &mcp.StdioTransport{}); err != nil {
		errorf(stderr, "mcp: %v", err)
		return exitFailed
	}
	return exitOK
}
