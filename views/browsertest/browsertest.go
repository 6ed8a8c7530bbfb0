// Package browsertest loads a page lockstep rendered (a report) in a real
// browser, Debian's headless Chromium, for the tests: what the page
// reported (console errors and warnings, uncaught exceptions), how many
// elements match each selector, and a screenshot of the whole page.
// Only tests import it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's Chromium (apt-get install chromium).
const ChromiumPath = "/usr/bin/chromium"

// Available reports whether pages can be loaded here: outside CI a test
// without Chromium skips; under CI it must be installed (.ci/run does)
// and a test fails without it.
func Available() bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	_, err := os.Stat(ChromiumPath)
	return err == nil
}

// Page is what loading a page found.
type Page struct {
	Problems   []string // console errors and warnings, uncaught exceptions
	Counts     []int    // per selector, the elements that match
	Screenshot []byte   // PNG of the whole page
}

// Load loads the file page in headless Chromium (its profile in
// profileDir), counts the elements matching each selector, and takes a
// screenshot. An error is a page that could not be loaded, not one that
// reported problems.
func Load(page, profileDir string, selectors ...string) (Page, error) {
	if _, err := os.Stat(ChromiumPath); err != nil {
		return Page{}, fmt.Errorf("needs Chromium at %s (apt-get install chromium): %w", ChromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.NoSandbox, // root in CI; the page is our own file
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1300, 900),
		chromedp.UserDataDir(profileDir),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var p Page
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
				p.Problems = append(p.Problems, fmt.Sprintf("console %s: %s", ev.Type, strings.Join(parts, " ")))
			}
		case *runtime.EventExceptionThrown:
			p.Problems = append(p.Problems, "exception: "+ev.ExceptionDetails.Text)
		}
	}); err != nil {
		return Page{}, fmt.Errorf("starting Chromium: %w", err)
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		return Page{}, err
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs), chromedp.WaitReady("body")); err != nil {
		return Page{}, fmt.Errorf("loading %s: %w", page, err)
	}
	counts := make([]int, len(selectors))
	for i, sel := range selectors {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			return Page{}, fmt.Errorf("counting %s: %w", sel, err)
		}
		counts[i] = n
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return Page{}, fmt.Errorf("screenshot: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	p.Counts, p.Screenshot = counts, shot
	return p, nil
}

// KeepArtifact writes the screenshot under name in the folder
// LOCKSTEP_ARTIFACTS names, when it names one: kept after the test.
func KeepArtifact(name string, shot []byte) {
	if dir := os.Getenv("LOCKSTEP_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(dir, name), shot, 0o644)
		}
	}
}
