package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The harness of the console's browser tests (console_browser_test.go): a real
// headless Chromium driven over the DevTools protocol (chromedp) against a
// real `cairn dev` process. Every wait is on a condition in the page, under
// one deadline per test; nothing sleeps to synchronise.

// consoleDeadline bounds one browser test, from the browser's start to its
// last check: generous, for a saturated 2-core machine running the race
// detector; a test that passes takes seconds.
const consoleDeadline = 90 * time.Second

// chromiumNames are the executables looked for on PATH, in order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findChromium returns the browser to drive: $CAIRN_CHROMIUM if set, else
// the first of chromiumNames on PATH.
func findChromium() (string, error) {
	if p := os.Getenv("CAIRN_CHROMIUM"); p != "" {
		abs, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("CAIRN_CHROMIUM=%s: %w", p, err)
		}
		return abs, nil
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s on PATH (and CAIRN_CHROMIUM is not set)", strings.Join(chromiumNames, ", "))
}

// browser is one headless Chromium with one tab, bound to a test.
type browser struct {
	t    *testing.T
	ctx  context.Context // the tab, under the test's deadline
	base string          // the cairn dev server, http://127.0.0.1:port

	mu      sync.Mutex
	thrown  []string // uncaught exceptions in the page
	dialogs []string // alert/confirm/prompt messages (each accepted)
	console []string // console.error lines
}

// newBrowser starts a headless Chromium for t (a fresh profile in
// t.TempDir(), a 1280×800 viewport, --no-sandbox only as root) pointed at the server
// base. It skips the test when no browser is installed, except with
// CI=true, where that fails it. The browser is closed in t.Cleanup.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	exe, err := findChromium()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the console's browser tests need Chromium: %v; .ci/run installs it (apt-get install -y chromium)", err)
		}
		t.Skipf("no browser for the console's browser tests: %v; install one with `apt-get install chromium` (or set CAIRN_CHROMIUM)", err)
	}
	profile := t.TempDir() // removed after the browser is closed (cleanups run last-in first-out)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("hide-scrollbars", false),
		chromedp.Flag("lang", "en-GB"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to start its sandbox as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	// The first Do starts the browser and binds its life to tabCtx, which has
	// no deadline; the test's actions run under ctx, which has one.
	if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(1280, 800)); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", exe, err)
	}
	ctx, cancel := context.WithTimeout(tabCtx, consoleDeadline)
	b := &browser{t: t, ctx: ctx, base: base}
	var wg sync.WaitGroup
	b.watch(&wg)
	t.Cleanup(func() {
		cancel()
		closeCtx, cancelClose := context.WithTimeout(tabCtx, 10*time.Second) // a graceful close, bounded
		_ = chromedp.Cancel(closeCtx)
		cancelClose()
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		wg.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.console) > 0 {
			t.Logf("console errors in the page:\n  %s", strings.Join(b.console, "\n  "))
		}
		if len(b.dialogs) > 0 {
			t.Logf("dialogs the page opened (accepted): %q", b.dialogs)
		}
	})
	return b
}

// watch records the page's uncaught exceptions and console errors, and
// accepts any dialog (a confirm() before a cancel, say) so it never blocks.
func (b *browser) watch(wg *sync.WaitGroup) {
	thrown := chromedp.Events(b.ctx, runtime.ExceptionThrown)
	logged := chromedp.Events(b.ctx, runtime.ConsoleAPICalled)
	dialogs := chromedp.Events(b.ctx, page.JavascriptDialogOpening)
	wg.Add(3)
	go func() {
		defer wg.Done()
		for ev, err := range thrown {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			b.mu.Lock()
			b.thrown = append(b.thrown, fmt.Sprintf("%s (%s:%d)", msg, d.URL, d.LineNumber))
			b.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range logged {
			if err != nil {
				return
			}
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				continue
			}
			var parts []string
			for _, a := range ev.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, strings.Trim(string(a.Value), `"`))
				}
			}
			b.mu.Lock()
			b.console = append(b.console, strings.Join(parts, " "))
			b.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
}

// noExceptions fails the test if the page threw an uncaught exception.
func (b *browser) noExceptions() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.thrown) > 0 {
		b.t.Errorf("uncaught exceptions in the console's pages:\n  %s", strings.Join(b.thrown, "\n  "))
	}
}

// open navigates to path on the server and waits for the page's load event.
func (b *browser) open(path string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(b.base+path)); err != nil {
		b.t.Fatalf("opening %s: %v", path, err)
	}
}

// login opens the console's sign-in link (as `cairn dev` prints it), which
// sets the login cookie and redirects to /console/.
func (b *browser) login(link string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(link)); err != nil {
		b.t.Fatalf("opening the sign-in link: %v", err)
	}
	b.waitJS(`location.pathname === "/console/" && !location.search.includes("token") && document.querySelector("main#main") !== null`, "the sign-in redirect to /console/, without the token in the address")
}

// waitJS waits until the JavaScript expression expr is truthy in the page
// (checked every 50 ms, and again after a navigation), failing the test
// with what, where the page is and the start of its main element when the
// test's deadline passes first.
func (b *browser) waitJS(expr, what string) {
	b.t.Helper()
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
		if err == nil {
			return
		}
		if b.ctx.Err() != nil || !navigated(err) {
			b.t.Fatalf("waiting for %s (%s): %v\n%s", what, expr, err, b.where())
		}
		// the page navigated (a form posted and redirected): ask the new page
	}
}

// navigated reports whether err is a poll that a navigation cut short.
func navigated(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Execution context was destroyed") || strings.Contains(s, "navigated or closed") ||
		strings.Contains(s, "Cannot find context") || errors.Is(err, chromedp.ErrPollingTimeout)
}

// where describes the page for a failure: its URL and the start of its
// main element's text.
func (b *browser) where() string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`location.href + "\n" + ((document.querySelector("main") || document.body || {}).innerText || "").slice(0, 1500)`))
	if err != nil {
		return "(could not read the page: " + err.Error() + ")"
	}
	return "page: " + s
}

// eval evaluates expr in the page and returns its value as T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v\n%s", expr, err, b.where())
	}
	return v
}

// click clicks the first element matching the CSS selector sel (waiting
// until it is visible).
func (b *browser) click(sel string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		b.t.Fatalf("clicking %s: %v\n%s", sel, err, b.where())
	}
}

// clickToLoad clicks the element matching sel and waits until the page it
// leads to (a link, or a form's post and its redirect) has loaded: the old
// page carries a mark the new one lacks, so nothing after it can read the
// old page, even where the old page's live view changes as the new one would.
func (b *browser) clickToLoad(sel string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Evaluate[chromedp.Void](`window.__cairnLeft = true`)); err != nil {
		b.t.Fatalf("marking the page before clicking %s: %v", sel, err)
	}
	b.click(sel)
	b.waitJS(`window.__cairnLeft !== true && document.readyState === "complete"`, "the page "+sel+" leads to")
}

// fill types text into the field matching sel, replacing what it had.
func (b *browser) fill(sel, text string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx,
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsString(sel)+`).value = ""`),
		chromedp.SendKeys(chromedp.CSS(sel), text),
	); err != nil {
		b.t.Fatalf("typing into %s: %v\n%s", sel, err, b.where())
	}
}

// viewport sets the page's size (CSS pixels, not a mobile emulation: the
// layout viewport is exactly width wide).
func (b *browser) viewport(width, height int64) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(width, height)); err != nil {
		b.t.Fatalf("setting the viewport to %d×%d: %v", width, height, err)
	}
}

// key presses one key (kb names, e.g. "\t" for Tab) in the page.
func (b *browser) key(k string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.KeyEvent(k)); err != nil {
		b.t.Fatalf("pressing %q: %v", k, err)
	}
}

// shot saves a PNG of the viewport as <artefacts>/<name>.png, scrolled so
// that the element matching at (if given) is at the top.
func (b *browser) shot(name string, at ...string) {
	b.t.Helper()
	scroll := `scrollTo(0, 0)`
	if len(at) > 0 {
		scroll = `document.querySelector(` + jsString(at[0]) + `).scrollIntoView({block: "start"})`
	}
	if err := chromedp.Do(b.ctx, chromedp.Evaluate[chromedp.Void](scroll)); err != nil {
		b.t.Fatalf("scrolling for screenshot %s: %v", name, err)
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := artefactDir(b.t)
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("saving screenshot %s: %v", name, err)
	}
	b.t.Logf("screenshot %s", p)
}

// artefactDir is where the browser tests leave screenshots:
// $CAIRN_ARTEFACTS if set, else <repo root>/.artefacts/console.
func artefactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CAIRN_ARTEFACTS")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".artefacts", "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating the artefact directory: %v", err)
	}
	return dir
}

// repoRoot is the nearest directory above the working directory with a
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}
