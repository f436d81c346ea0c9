// Package browsertest drives pages in a real headless Chromium (Debian's
// chromium package; `make test` installs it) for the stores' and the
// console's browser tests.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/config"
)

// Browser starts a headless Chromium for one user; the test is skipped
// when there is none.
func Browser(t *testing.T) context.Context {
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
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1200, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// A whole journey, with room for the waits of a loaded machine (two
	// cores shared by every browser test of the package and the race
	// detector): each wait has its own, shorter bound.
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // start the browser now
	return ctx
}

// Do runs actions and fails the test on an error, saving a screenshot
// ("failed") and logging the page's address and text first, so that a
// wait that timed out says what the page showed.
func Do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	err := chromedp.Do(ctx, actions...)
	if err == nil {
		return
	}
	// The test's browser context may be what ran out: look with a fresh
	// deadline on the same tab.
	look, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if page, lerr := chromedp.Run(look, chromedp.Evaluate[string](`location.href + "\n" + JSON.stringify(window.__seatMap ? {ready: window.__seatMap.ready(), version: window.__seatMap.version(), timing: window.__seatMap.timing} : null) + "\n" + document.body.innerText`)); lerr == nil {
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

// WaitJS polls a JavaScript condition until it holds (30 s at most).
func WaitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
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
