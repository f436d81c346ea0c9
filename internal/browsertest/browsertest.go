// Package browsertest drives pages in a real headless Chromium (Debian's
// chromium package; `make test` installs it) for the stores' and the
// console's browser tests.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/config"
)

// Browser starts a headless Chromium for one user; the test is skipped
// when there is none. opts add to the allocator's options (a fixed
// remote-debugging-port lets another tool, such as Lighthouse, drive the
// same browser).
func Browser(t *testing.T, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	// A whole journey, with room for the waits of a loaded machine (two
	// cores shared by every browser test of the package and the race
	// detector): each wait has its own, shorter bound.
	return BrowserFor(t, 3*time.Minute, opts...)
}

// BrowserFor is Browser for a session of another length: the browser is
// closed when it is over.
func BrowserFor(t *testing.T, limit time.Duration, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := config.ChromiumPath()
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Skip("no Chromium: `make test` installs Debian's chromium package (infra/dev/chromium.sh)")
	}
	all := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(all, opts...)...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The browser and its tab start on a context without the limit:
	// chromedp reads the tab's messages for as long as the context it was
	// started with lives, and a journey that ran out of time is still
	// looked at (Do) after its limit.
	require.NoError(t, chromedp.Do(bctx))
	crashed := new(atomic.Bool)
	require.NoError(t, chromedp.ListenBrowser(bctx, func(ev any) {
		if _, ok := ev.(*target.EventTargetCrashed); ok {
			crashed.Store(true)
		}
	}))
	ctx, cancelTimeout := context.WithTimeout(context.WithValue(bctx, crashedKey{}, crashed), limit)
	t.Cleanup(cancelTimeout)
	return ctx
}

// crashedKey holds, in a browser's context, whether one of its tabs
// crashed: a journey that stops there says so.
type crashedKey struct{}

// Do runs actions and fails the test on an error, naming the step that
// failed, saving a screenshot ("failed") and logging the page's address and
// text first, so that a wait that timed out says where it stopped and what
// the page showed.
func Do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	var err error
	for i, a := range actions {
		if err = chromedp.Do(ctx, a); err != nil {
			err = fmt.Errorf("step %d of %d: %w", i+1, len(actions), err)
			break
		}
	}
	if err == nil {
		return
	}
	if crashed, _ := ctx.Value(crashedKey{}).(*atomic.Bool); crashed != nil && crashed.Load() {
		t.Log("a tab of the browser crashed")
	}
	// The test's browser context may be what ran out: look with a fresh
	// deadline on the same tab.
	look, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	page, lerr := chromedp.Run(look, chromedp.Evaluate[string](`location.href + "\n" + JSON.stringify(window.__seatMap ? {ready: window.__seatMap.ready(), version: window.__seatMap.version(), timing: window.__seatMap.timing} : null) + "\n" + document.body.innerText`))
	if lerr != nil {
		t.Logf("the page could not be read when it failed: %v", lerr)
	} else {
		t.Logf("the page when it failed:\n%s", page)
	}
	if png, serr := chromedp.Run(look, chromedp.CaptureScreenshot()); serr == nil {
		dir := shotDir(t)
		if os.MkdirAll(dir, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dir, "failed.png"), png, 0o644)
		}
	}
	require.NoError(t, err)
}

// shotDir is where a test's screenshots go.
func shotDir(t *testing.T) string {
	dir := os.Getenv("BOXOFFICE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "boxoffice-screenshots")
	}
	return filepath.Join(dir, t.Name())
}

// Shot saves a screenshot of the page to a temporary folder (kept out of
// the tree; BOXOFFICE_SCREENSHOTS names another folder).
func Shot(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	dir := shotDir(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, step+".png"), png, 0o644))
}

// Step marks a step of a journey: a screenshot of the page, then axe-core
// on it.
func Step(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	Shot(t, ctx, name)
	NoLeakedValues(t, ctx, name)
	Axe(t, ctx, name)
}

// leakedValues finds the words a script writes when it puts a missing or
// unformatted value into a page (null, undefined, NaN, [object Object]) in
// the text a visitor reads — code samples aside.
const leakedValues = `(() => {
  const found = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement.closest("code, pre, script, style, [hidden]")) continue;
    const m = n.textContent.match(/\b(null|undefined|NaN)\b|\[object Object\]/);
    if (m) found.push(n.textContent.trim().slice(0, 120));
  }
  return found;
})()`

// NoLeakedValues fails the test when the page shows a value a script
// never formatted (see leakedValues).
func NoLeakedValues(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](leakedValues))
	require.NoError(t, err)
	require.Empty(t, found, "step %s shows a value no script formatted", step)
}

// WaitJS polls a JavaScript condition until it holds (30 s at most).
func WaitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

// WaitText waits until the element sel holds want (30 s at most).
func WaitText(sel, want string) chromedp.Action[chromedp.Void] {
	return WaitJS(fmt.Sprintf(`(document.querySelector(%q)?.textContent || '').includes(%q)`, sel, want))
}

// ConsoleSignIn signs in to the console served at base with key, whoever
// was signed in before.
func ConsoleSignIn(base, key string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Navigate(base+"/console/#/signin"), chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), key), chromedp.Click(chromedp.CSS(`form.signin button`)),
		chromedp.WaitVisible(chromedp.CSS(`#role`)))
}

// Text reads an element's text.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return s
}

// Value returns the value of the first form field matching sel.
func Value(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	require.NoError(t, err)
	return v
}

// Violation is one rule axe-core found broken on a page.
type Violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// Axe runs axe-core (npm; infra/dev/audit.sh installs it and `make test`
// names its folder in BOXOFFICE_AUDIT_TOOLS) on the page as it is now and
// fails the test on any serious or critical violation. Without the tools it
// only logs that it did not look.
func Axe(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	dir := config.AuditTools()
	if dir == "" {
		t.Logf("axe-core not run on %q: BOXOFFICE_AUDIT_TOOLS is unset (make test sets it)", step)
		return
	}
	script, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	require.NoError(t, err, "axe-core in BOXOFFICE_AUDIT_TOOLS")
	// The page's CSP does not apply to what DevTools evaluates.
	Do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.axe ? undefined : void (0, eval)(`+strconv.Quote(string(script))+`)`))
	found, err := chromedp.Run(ctx,
		chromedp.Evaluate[[]Violation](`axe.run(document, {resultTypes: ['violations']}).then((r) => r.violations
			.filter((v) => v.impact === 'serious' || v.impact === 'critical')
			.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' '))})))`,
			chromedp.EvalAwaitPromise))
	require.NoError(t, err, "axe-core on %q", step)
	if len(found) > 0 {
		Shot(t, ctx, "axe-"+step)
	}
	for _, v := range found {
		t.Errorf("axe-core on %q: %s (%s) %s at %v", step, v.ID, v.Impact, v.Help, v.Nodes)
	}
}
