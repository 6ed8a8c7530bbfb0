package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/testscript"
)

// chromiumPath is Debian's Chromium, which the browse command drives.
const chromiumPath = "/usr/bin/chromium"

// haveChromium reports whether the browse scripts can run: outside CI
// they skip without Chromium ([chromium] in a script); under CI it must
// be installed (.ci/run installs it) and a script fails without it.
func haveChromium() bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	_, err := os.Stat(chromiumPath)
	return err == nil
}

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
	if _, err := exec.LookPath(chromiumPath); err != nil {
		ts.Fatalf("browse needs Chromium at %s (apt-get install chromium): %v", chromiumPath, err)
	}
	page := ts.MkAbs(args[0])
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox, // root in CI; the page is our own file
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1300, 900),
		chromedp.UserDataDir(filepath.Join(ts.Getenv("WORK"), ".chromium")),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console %s: %s", ev.Type, strings.Join(parts, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		}
	}); err != nil {
		ts.Fatalf("browse: starting Chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")); err != nil {
		ts.Fatalf("browse %s: %v", args[0], err)
	}
	counts := make([]int, len(args)-2)
	for i, sel := range args[2:] {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			ts.Fatalf("browse %s: counting %s: %v", args[0], sel, err)
		}
		counts[i] = n
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		ts.Fatalf("browse %s: screenshot: %v", args[0], err)
	}
	if err := os.WriteFile(ts.MkAbs(args[1]), shot, 0o644); err != nil {
		ts.Fatalf("browse: %v", err)
	}
	if dir := os.Getenv("LOCKSTEP_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(args[1])), shot, 0o644)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case len(problems) > 0 && neg:
		fmt.Fprintf(ts.Stderr(), "%s\n", strings.Join(problems, "\n"))
		return
	case len(problems) > 0:
		ts.Fatalf("browse %s: the page reported:\n%s", args[0], strings.Join(problems, "\n"))
	case neg:
		ts.Fatalf("browse %s: the page reported no error", args[0])
	}
	for i, sel := range args[2:] {
		fmt.Fprintf(ts.Stdout(), "%s %d\n", sel, counts[i])
	}
}
