package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"lockstep/views/browsertest"
)

// haveChromium reports whether the browse scripts can run ([chromium] in
// a script): see browsertest.Available.
func haveChromium() bool { return browsertest.Available() }

// browseCmd is the script command `browse FILE SCREENSHOT SELECTOR...`:
// it loads FILE in headless Chromium, fails on any console error or
// uncaught exception, saves a screenshot of the whole page to SCREENSHOT
// (kept as a test artifact where LOCKSTEP_ARTIFACTS names a folder), and
// prints one line per SELECTOR: "SELECTOR N" with the number of elements
// the page has that match it, for the script to check. With !, the page
// must report an error (which goes to stderr).
func browseCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: browse FILE SCREENSHOT [SELECTOR...]")
	}
	p, err := browsertest.Load(ts.MkAbs(args[0]), filepath.Join(ts.Getenv("WORK"), ".chromium"), args[2:]...)
	if err != nil {
		ts.Fatalf("browse %s: %v", args[0], err)
	}
	if err := os.WriteFile(ts.MkAbs(args[1]), p.Screenshot, 0o644); err != nil {
		ts.Fatalf("browse: %v", err)
	}
	browsertest.KeepArtifact(filepath.Base(args[1]), p.Screenshot)
	switch {
	case len(p.Problems) > 0 && neg:
		fmt.Fprintf(ts.Stderr(), "%s\n", strings.Join(p.Problems, "\n"))
		return
	case len(p.Problems) > 0:
		ts.Fatalf("browse %s: the page reported:\n%s", args[0], strings.Join(p.Problems, "\n"))
	case neg:
		ts.Fatalf("browse %s: the page reported no error", args[0])
	}
	for i, sel := range args[2:] {
		fmt.Fprintf(ts.Stdout(), "%s %d\n", sel, p.Counts[i])
	}
}
