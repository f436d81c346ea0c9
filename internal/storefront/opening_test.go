package storefront_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/testfix"
)

// A tab left on a product's countdown goes through the opening on its own,
// on a desktop and on a phone: the countdown ends, the seat map appears and
// the page stays responsive (it once re-rendered itself in a loop from the
// catalog cached while the sale was upcoming, and froze the tab).
func TestCountdownThroughTheOpening(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env.Product(t, testfix.ProductOpts{Capacity: 10}) // on sale already
	store := w.publish(t, w.env.Tenant.Slug)
	for _, device := range []struct {
		name  string
		setup chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1280, 800)},
		{"phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)},
	} {
		t.Run(device.name, func(t *testing.T) {
			t.Parallel()
			ctx := w.shopper(t, w.env.Tenant, store, "early-"+device.name)
			opensAt := time.Now().Add(8 * time.Second)
			p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40, OnSaleAt: opensAt})
			require.NoError(t, chromedp.Do(ctx, device.setup,
				chromedp.Navigate(store+"#/p/"+p.ID.String()),
				chromedp.WaitVisible(chromedp.CSS(`p.badge.upcoming`))))
			browsertest.Shot(t, ctx, "1-countdown")
			require.Contains(t, browsertest.Text(t, ctx, `p.badge.upcoming`), "Opens in")
			// Past the opening the map shows by itself, and the page still
			// answers at once.
			opened, cancel := context.WithTimeout(ctx, time.Until(opensAt)+30*time.Second)
			defer cancel()
			require.NoError(t, chromedp.Do(opened,
				browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`)))
			browsertest.Shot(t, ctx, "2-open")
			responsive, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			for range 5 {
				_, err := chromedp.Run(responsive, chromedp.Evaluate[bool](`document.querySelector('canvas') !== null`))
				require.NoError(t, err, "the page answers after the opening")
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// An event published after the store was loaded opens from a link: the
// store asks the catalog again instead of saying there is no such event.
func TestEventPublishedAfterTheStoreLoaded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env.Product(t, testfix.ProductOpts{Capacity: 10})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "late")
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(store+"#/p/"+p.ID.String()),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`)))
	require.NotContains(t, browsertest.Text(t, ctx, `main`), "Something went wrong")
}
