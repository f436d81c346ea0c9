package storefront_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/demo"
	"boxoffice/internal/product"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
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
			browsertest.Do(t, ctx, device.setup,
				chromedp.Navigate(store+"#/p/"+p.ID.String()),
				chromedp.WaitVisible(chromedp.CSS(`p.badge.upcoming`)))
			browsertest.Step(t, ctx, "1-countdown")
			require.Contains(t, browsertest.Text(t, ctx, `p.badge.upcoming`), "Opens in")
			// Past the opening the map shows by itself, and the page still
			// answers at once.
			opened, cancel := context.WithTimeout(ctx, time.Until(opensAt)+30*time.Second)
			defer cancel()
			browsertest.Do(t, opened,
				browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`))
			browsertest.Step(t, ctx, "2-open")
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
	browsertest.Do(t, ctx,
		chromedp.Navigate(store+"#/p/"+p.ID.String()),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`))
	require.NotContains(t, browsertest.Text(t, ctx, `main`), "Something went wrong")
}

// A double click on "Reserve random", and on pay, is one action: the
// store sends one request (a second click while it runs does nothing; a
// retry would reuse its Idempotency-Key), so the shopper holds what the
// page shows and pays once.
func TestDoubleClickIsOneAction(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Capacity: 100})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "dot")
	doubleClick := func(sel string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`(() => { const b = document.querySelector('` + sel + `'); b.click(); b.click(); })()`)
	}
	browsertest.Do(t, ctx,
		chromedp.Navigate(store+"#/p/"+p.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(`button.random`)),
		chromedp.SetValue(chromedp.CSS(`main select`), "2"),
		doubleClick(`button.random`),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
	)
	count := func(sql string) int {
		var n int
		require.NoError(t, w.env.Schema.Pool.QueryRow(context.Background(), sql, p.ID).Scan(&n))
		return n
	}
	require.Equal(t, 1, count(`SELECT count(*) FROM reservation_requests WHERE product_id = $1`), "one reservation")
	require.Equal(t, 2, count(`SELECT coalesce(sum(cardinality(numbers)), 0) FROM holds WHERE product_id = $1`),
		"two numbers held, as the page shows")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		fillEmail("dot@example.test"),
		doubleClick(`form.checkout button.primary`),
		tickets(2),
	)
	require.Equal(t, 1, count(`SELECT count(*) FROM orders WHERE product_id = $1`), "one order")
}

// A store on its own domain, calling the API on another origin (the store
// on localhost, the API on 127.0.0.1, as a tenant's domain and the API's
// host would be): sign in by e-mail code, join a waiting room that asks for
// proof of work, get admitted, pick seats, hold, pay, get the tickets —
// every call cross-origin, each preflight allowing the headers the store
// sends.
func TestStoreOnItsOwnOrigin(t *testing.T) {
	t.Parallel()
	w := newWorldWith(t, testfix.Options{Work: true}, strictCORS)
	port := w.stores[strings.LastIndex(w.stores, ":")+1:]
	storeOrigin := "http://localhost:" + port
	_, err := w.env.Tenants.SetStore(context.Background(), w.env.Tenant.ID, tenant.StoreSettings{
		Name: "Cross Origin Hall", Domains: []string{"localhost:" + port}})
	require.NoError(t, err)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 10, ChallengeBits: 10}})
	pub := &storefront.Publisher{Tenants: w.env.Tenants, Bucket: w.bucket, APIBase: w.base}
	require.NoError(t, pub.Publish(context.Background(), w.env.Tenant.Slug))
	store := storeOrigin + "/s/" + w.env.Tenant.Slug + "/"
	id := p.ID.String()

	ctx := browsertest.Browser(t)
	w.logInByEmail(t, ctx, store, "cora@example.test")
	browsertest.Do(t, ctx,
		chromedp.Navigate(store+"#/p/"+id),
		chromedp.WaitVisible(chromedp.CSS(`main button.primary`)),
		// Join (then solve the proof of work), clicked in the page: the page
		// may render again between finding the button and a click from
		// outside (seen under load: the node was gone, or the click landed
		// on the page before it settled), so it is clicked until it took.
		browsertest.WaitJS(`location.hash.startsWith('#/q/') || !!document.querySelector('main button.primary')?.click()`),
		chromedp.Poll[chromedp.Void](`window.__seatMap && window.__seatMap.ready()`,
			chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)),
		holdTwoAndPay("cora@example.test"),
	)
	browsertest.Step(t, ctx, "1-tickets")
	origin, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.origin`))
	require.NoError(t, err)
	require.Equal(t, storeOrigin, origin, "the store ran on its own origin")
}

// A plan given as rows with seat counts only (no positions) is drawn as
// rows, one below the other, not as one line of overlapping seats.
func TestRowsWithoutPositionsAreDrawnAsRows(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var sections []product.Section
	for _, name := range []string{"Floor", "Upper"} {
		s := product.Section{Name: name}
		for r := 1; r <= 3; r++ {
			s.Rows = append(s.Rows, product.Row{Name: fmt.Sprint(r), Seats: 5})
		}
		sections = append(sections, s)
	}
	p := w.env.Product(t, testfix.ProductOpts{Layout: &product.Layout{Sections: sections}})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "rows")
	browsertest.Do(t, ctx, openProduct(p.ID.String()))
	browsertest.Step(t, ctx, "1-rows")
	ys, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](
		`Array.from({length: 30}, (_, i) => Math.round(window.__seatMap.pos(i).y))`))
	require.NoError(t, err)
	rows := map[float64]bool{}
	for _, y := range ys {
		rows[y] = true
	}
	require.Len(t, rows, 6, "six rows drawn at six heights: %v", ys)
	require.Less(t, ys[0], ys[5], "the second row below the first")
	require.Less(t, ys[14], ys[15], "the second section below the first")
}

// The demo stadium (what `make run` seeds) is drawn as a stadium: a floor
// and two curved tiers of rows cut into wedge-shaped sections, seats apart
// from each other, over an area rather than along one line.
func TestDemoStadiumIsDrawnAsAStadium(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: demo.Stadium()})
	// In the catalog from the start: the store's catalog may be cached
	// for seconds.
	hall := w.env.Product(t, testfix.ProductOpts{Layout: demo.Hall()})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "fan")
	browsertest.Do(t, ctx, chromedp.EmulateViewport(1280, 800), openProduct(p.ID.String()))
	browsertest.Step(t, ctx, "1-stadium")
	type point struct{ X, Y int }
	pts, err := chromedp.Run(ctx, chromedp.Evaluate[[]point](
		`window.__seatMap.seats.map((_, i) => { const p = window.__seatMap.pos(i); return {X: Math.round(p.x), Y: Math.round(p.y)}; })`))
	require.NoError(t, err)
	require.Equal(t, p.Capacity, len(pts))
	seen := map[point]bool{}
	ys := map[int]bool{}
	for _, pt := range pts {
		require.False(t, seen[pt], "two seats drawn at %v", pt)
		seen[pt] = true
		ys[pt.Y/10] = true
	}
	require.Greater(t, len(ys), 20, "seats spread over the height of the plan, not one line")

	// A concert hall too: stalls and a curved balcony, each drawn as its
	// shape under its seats; the tooltip names the seat under the pointer.
	browsertest.Do(t, ctx, chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)),
		openProduct(hall.ID.String()), hover(40))
	require.Regexp(t, `^Stalls · Row B · Seat \d+ · €\d+\.00$`, browsertest.Text(t, ctx, ".tip"))
	browsertest.Step(t, ctx, "2-hall")
}

// hover moves the pointer over seat i of the map.
func hover(i int) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		pos, err := seatInView(ctx, t, i)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos.X, pos.Y)(ctx, t)
	}
}
