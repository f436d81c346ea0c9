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
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // start the browser now
	return ctx
}

// Shot saves a screenshot of the page to a temporary folder (kept out of
// the tree; BOXOFFICE_SCREENSHOTS names another folder).
func Shot(t *testing.T, ctx context.Context, step string) {
	t.Helper()
	dir := os.Getenv("BOXOFFICE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "boxoffice-screenshots")
	}
	dir = filepath.Join(dir, t.Name())
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
