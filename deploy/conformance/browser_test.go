package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromium is Debian's Chromium, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// screenshotDir is where the console's browser tests of stack s save their screenshots:
// the folder CONSOLE_SCREENSHOTS names (make console-screenshots: docs/console), else the
// stack's log folder.
func screenshotDir(t *testing.T, s *Stack) string {
	t.Helper()
	shots := os.Getenv("CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(s.dir, "console-screenshots")
	} else if !filepath.IsAbs(shots) {
		root, _ := repoRoot()
		shots = filepath.Join(root, shots)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	return shots
}

// browser starts headless Chromium with a window height pixels high and returns its
// context; it stops with the test.
func browser(t *testing.T, height int) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("Debian's chromium is required (.ci/run installs it): %v", err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, height),
		chromedp.Flag("disable-dev-shm-usage", true))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// acceptDialogs accepts every confirmation the pages of ctx ask for (revoke, reject,
// suspend and the budget forms ask before they act).
func acceptDialogs(ctx context.Context) {
	go func() {
		for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			go func() {
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
					return err
				}))
			}()
		}
	}()
}

// stepRunner returns run, which does steps in ctx within a minute and fails the test
// naming what, with the page's main element, when one of them fails.
func stepRunner(t *testing.T, ctx context.Context) func(what string, steps ...chromedp.Action[chromedp.Void]) {
	return func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(c, steps...); err != nil {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("%s: %v\npage: %.3000s", what, err, html)
		}
	}
}
