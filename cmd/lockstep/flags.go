package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"lockstep/plans"
)

// errHelp is returned by parseArgs when -h or --help was given.
var errHelp = flag.ErrHelp

// parseArgs parses args with fs, allowing flags after positional
// arguments (lockstep validate a.hcl --json) and both -flag and --flag;
// everything after "--" is positional. It does no I/O.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, flagError(err)
		}
		consumed := len(args) - fs.NArg()
		rest := fs.Args()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagError rewords the flag package's errors in lockstep's voice.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return fmt.Errorf("unknown flag %s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Errorf("flag %s needs a value", name)
	}
	return errors.New(msg)
}

// listFlag collects a repeated flag's values in order.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// stepsFlag collects --only STEP[,STEP]... (repeatable) into a list.
type stepsFlag []string

func (l *stepsFlag) String() string { return strings.Join(*l, ",") }
func (l *stepsFlag) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*l = append(*l, name)
		}
	}
	return nil
}

// varFlags registers -var NAME=VALUE and -var-file FILE, shared by the
// commands that resolve a plan's variables (explain, run).
func varFlags(fs *flag.FlagSet, in *plans.Inputs) {
	fs.Var((*listFlag)(&in.Vars), "var", "set a variable: NAME=VALUE (repeatable)")
	fs.Var((*listFlag)(&in.VarFiles), "var-file", "read variables from an HCL file (repeatable)")
}

// flagsFailed prints a command's help to stdout for --help, or reports a
// flag error on stderr; it returns the exit code.
func flagsFailed(name string, err error, help string, stdout, stderr io.Writer) int {
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, help)
		return exitOK
	}
	return usageError(stderr, name+": "+err.Error(), "lockstep "+name+" --help shows its flags")
}
