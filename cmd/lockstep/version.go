package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

const versionUsage = `usage: lockstep version

Prints the version of this lockstep binary as its build recorded it: the
module version, the version control revision and time it was built from,
whether the working tree had changes, and the Go toolchain.
`

// buildVersion is the version this binary's build information records:
// the module version ("(devel)" for a build from a checkout), then the
// revision, its time and "modified" when the tree had uncommitted changes.
// It is what every record keeps as lockstep_version.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information in this binary)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var extra []string
	if rev != "" {
		extra = append(extra, "revision "+rev)
	}
	if at != "" {
		extra = append(extra, at)
	}
	if modified {
		extra = append(extra, "modified")
	}
	if len(extra) > 0 {
		v += " (" + strings.Join(extra, ", ") + ")"
	}
	return v
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	pos, err := parseArgs(flag.NewFlagSet("version", flag.ContinueOnError), args)
	if err == nil && len(pos) > 0 {
		err = errors.New("version takes no arguments")
	}
	if err != nil {
		return flagsFailed("version", err, versionUsage, stdout, stderr)
	}
	fmt.Fprintf(stdout, "lockstep %s\n", buildVersion())
	fmt.Fprintf(stdout, "built with %s for %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
