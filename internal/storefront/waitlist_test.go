package storefront_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// A sold-out show: Bo joins its waiting list from the event page and sees
// his place; Ana's hold on the last seats runs out, the seats are offered
// to Bo (mailed, and shown on the page he left open), and he picks them,
// pays and has his tickets, while the two he was offered were no one
// else's.
func TestWaitingListTakesTheSeatsOfAnExpiredHold(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: &product.Layout{Sections: []product.Section{
		{Name: "Front", Rows: []product.Row{{Name: "A", Seats: 4}}}}}})
	ana := w.env.Reserve(t, p, "ana", reservation.Params{Quantity: 4})
	w.env.Drain(t, p, 10)
	ana = w.env.Get(t, p, ana.ID)
	require.Equal(t, reservation.StatusHeld, ana.Status)
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "bo")

	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist-join`)))
	browsertest.Step(t, ctx, "1-sold-out")
	browsertest.Do(t, ctx, chromedp.SetValue(chromedp.CSS(`#waitlist-quantity`), "2"),
		chromedp.SendKeys(chromedp.CSS(`#waitlist-email`), "bo@example.test"),
		chromedp.Click(chromedp.CSS(`#waitlist-join`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist-position`)))
	require.Contains(t, browsertest.Text(t, ctx, `#waitlist-position`), "Number 1 in line, for 2 tickets")
	browsertest.Step(t, ctx, "2-in-line")

	// Ana's time runs out; the page Bo left open turns into his offer.
	w.env.ExpireHold(t, *ana.HoldID)
	browsertest.Do(t, ctx, chromedp.Poll[chromedp.Void](`!!document.querySelector('#offer') && window.__seatMap && window.__seatMap.ready()`,
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	require.Contains(t, browsertest.Text(t, ctx, `#offer`), "up to 2 tickets are held for you")
	browsertest.Step(t, ctx, "3-offer")
	require.Eventually(t, func() bool {
		for _, m := range w.sink.Messages() {
			if m.To == "bo@example.test" && strings.HasPrefix(m.Subject(), "Your turn") {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the offer is mailed too")
	// Four seats are free again, two of them Bo's: a walk-in finds two.
	walkIn := w.env.Reserve(t, p, "cy", reservation.Params{Quantity: 3})
	w.env.Drain(t, p, 10)
	require.Equal(t, reservation.ReasonNotEnoughLeft, w.env.Get(t, p, walkIn.ID).Reason, "two of the seats are Bo's")

	browsertest.Do(t, ctx, holdTwoAndPay("bo@example.test"))
	browsertest.Step(t, ctx, "4-tickets")
	w.env.RequireInvariants(t)
}
