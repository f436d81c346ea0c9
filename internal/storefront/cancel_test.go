package storefront_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// Journey: the organiser lets buyers cancel until 48 hours before doors
// for €1.50 a ticket. The event's page and her hold say so before rita
// buys; her order's page (as My orders and the e-mails open it) names the
// date, its state and the way to cancel, which asks once more before it
// acts. Cancelled, the order's page follows the refund to its end: the
// tickets no longer admit, and what came back is the price less the fee.
// Opened where she is not signed in, the page has her log in first. A
// date whose window has closed offers no cancelling.
func TestShopperCancelsAnOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	starts := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Hour)
	_, err := w.env.Products.Update(ctx, p.TenantID, p.ID, product.Update{StartsAt: &starts,
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 150}})
	require.NoError(t, err)
	soon := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	tomorrow := time.Now().Add(24 * time.Hour)
	_, err = w.env.Products.Update(ctx, soon.TenantID, soon.ID, product.Update{StartsAt: &tomorrow,
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 150}})
	require.NoError(t, err)
	store := w.publish(t, w.env.Tenant.Slug)
	rita := w.shopper(t, w.env.Tenant, store, "rita")

	browsertest.Do(t, rita, chromedp.Navigate(store+"#/p/"+p.ID.String()),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`))
	require.Contains(t, browsertest.Text(t, rita, ".event-hero .policy"), "for a fee of €1.50 a ticket")
	browsertest.Do(t, rita, clickSeat(0), clickSeat(1), chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.summary .policy`)))
	require.Contains(t, browsertest.Text(t, rita, ".summary .policy"), "for a fee of €1.50 a ticket", "the hold says it too")
	browsertest.Do(t, rita, chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay("rita@example.test", pspsim.MethodOK), tickets(2))
	fresh := browsertest.Text(t, rita, "main")
	require.Contains(t, fresh, "on their way to rita@example.test")
	require.Contains(t, fresh, "€180.00", "two North seats at 90.00")
	browsertest.Step(t, rita, "1-confirmed")

	// Later, from her orders.
	browsertest.Do(t, rita, chromedp.Navigate(store+"#/orders"),
		chromedp.WaitVisible(chromedp.CSS(`ul.order-list li a`)), chromedp.Click(chromedp.CSS(`ul.order-list li a`)),
		chromedp.WaitVisible(chromedp.CSS(`section.cancel`)), tickets(2))
	page := browsertest.Text(t, rita, "main")
	require.Contains(t, page, p.Event.Name)
	require.Contains(t, page, "Paid")
	require.Contains(t, browsertest.Text(t, rita, "section.cancel"), "You may cancel until")
	links, err := chromedp.Run(rita, chromedp.Evaluate[int](`document.querySelectorAll('.ticket .link').length`))
	require.NoError(t, err)
	require.Zero(t, links, "this date's tickets may not be given away: no offer to")
	browsertest.Step(t, rita, "2-order")

	browsertest.Do(t, rita, chromedp.Click(chromedp.CSS(`section.cancel > button`)),
		chromedp.WaitVisible(chromedp.CSS(`form.cancel-order button.danger`)))
	require.Contains(t, browsertest.Text(t, rita, "form.cancel-order"), "less €1.50 a ticket")
	var sold int
	require.NoError(t, w.env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM tickets WHERE status = 'VALID'`).Scan(&sold))
	require.Equal(t, 2, sold, "nothing happens before she confirms")
	browsertest.Step(t, rita, "3-confirm")
	browsertest.Do(t, rita, chromedp.Click(chromedp.CSS(`form.cancel-order button.danger`)),
		browsertest.WaitJS(`!!document.querySelector('main .badge.order-cancelled')`))
	page = browsertest.Text(t, rita, "main")
	require.Contains(t, page, "Cancelled")
	require.Contains(t, page, "€177.00 refunded", "€180.00 less two fees of €1.50")
	require.NotContains(t, page, "Cancel this order")
	gone, err := chromedp.Run(rita, chromedp.Evaluate[int](`document.querySelectorAll('.tickets li.ticket.gone').length`))
	require.NoError(t, err)
	require.Equal(t, 2, gone, "the tickets no longer admit")
	browsertest.Step(t, rita, "4-cancelled")
	var status, orderID string
	var refunded int64
	require.NoError(t, w.env.Schema.Pool.QueryRow(ctx, `SELECT status, refunded_cents, id::text FROM orders`).
		Scan(&status, &refunded, &orderID))
	require.Equal(t, "CANCELLED", status)
	require.Equal(t, int64(17700), refunded)

	// The refund's e-mail links to the order: opened in a browser where she
	// is not signed in, the store has her log in, then shows it.
	elsewhere := browsertest.Browser(t)
	tok, err := tenant.SignBuyerToken([]byte(w.env.Tenant.BuyerTokenSecret), w.env.Tenant.ID, "rita", time.Hour)
	require.NoError(t, err)
	browsertest.Do(t, elsewhere, chromedp.Navigate(store+"#/o/"+orderID), chromedp.WaitVisible(chromedp.CSS(`#login-email`)),
		handOff(store, w.env.Tenant.Slug, tok), browsertest.WaitJS(`!!document.querySelector('main .badge.order-cancelled')`))
	require.Contains(t, browsertest.Text(t, elsewhere, "main"), "€177.00 refunded")

	// Doors tomorrow: the window closed a day ago.
	browsertest.Do(t, rita, chromedp.Navigate(store+"#/p/"+soon.ID.String()),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`))
	has, err := chromedp.Run(rita, chromedp.Evaluate[bool](`!!document.querySelector('.event-hero .policy')`))
	require.NoError(t, err)
	require.False(t, has, "no cancelling once the window has closed")
}
