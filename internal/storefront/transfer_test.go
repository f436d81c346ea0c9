package storefront_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/checkout"
	"boxoffice/internal/product"
	"boxoffice/internal/testfix"
)

var mailedCode = regexp.MustCompile(`: ([A-Za-z0-9_-]{40,})`)

// Journey: a date with its venue; ana signs in with her address, reads when
// and where on the product page, buys two seats and gives one to ben from
// her order. Her code for it stops admitting; ben signs in with his
// address and finds the ticket under "My tickets", with the code he was
// mailed, which checks in.
func TestTransferInTheStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	starts := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Hour)
	doors := starts.Add(-time.Hour)
	_, err := w.env.Products.Update(ctx, p.TenantID, p.ID, product.Update{StartsAt: &starts, DoorsAt: &doors,
		Transfers: &product.Transfers{HoursBefore: 1, MaxTimes: 2}})
	require.NoError(t, err)
	venueName, address, zone := "Coliseu dos Recreios", "Rua das Portas de Santo Antão 96, Lisboa", "Europe/Lisbon"
	_, err = w.env.Products.UpdateEvent(ctx, p.TenantID, p.EventID, product.EventUpdate{
		Venue: &product.Venue{Name: venueName, Address: address}, TimeZone: &zone})
	require.NoError(t, err)
	store := w.publish(t, w.env.Tenant.Slug)

	ana := browsertest.Browser(t)
	w.logInByEmail(t, ana, store, "ana@example.test")
	browsertest.Do(t, ana,
		chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		openProduct(p.ID.String()),
	)
	details := browsertest.Text(t, ana, ".event-details")
	require.Contains(t, details, venueName)
	require.Contains(t, details, "Europe/Lisbon")
	require.Contains(t, browsertest.Text(t, ana, ".event-hero .policy"), "may be given to someone else until",
		"the policy is said before one buys")
	browsertest.Step(t, ana, "1-event-details")
	browsertest.Do(t, ana, holdTwoAndPay("ana@example.test"))
	orders, err := w.env.Checkout.ListForBuyer(ctx, p.TenantID, buyerOf(t, w, "ana@example.test"), 10)
	require.NoError(t, err)
	require.Len(t, orders, 1)
	given := orders[0].Tickets[0]

	browsertest.Do(t, ana,
		chromedp.Click(chromedp.CSS(`li[data-ticket="`+given.ID.String()+`"] button.link`)),
		chromedp.WaitVisible(chromedp.CSS(`#transfer-`+given.ID.String())),
		chromedp.SendKeys(chromedp.CSS(`#transfer-`+given.ID.String()), "ben@example.test"),
	)
	browsertest.Step(t, ana, "2-transfer-form")
	browsertest.Do(t, ana,
		chromedp.Click(chromedp.CSS(`li[data-ticket="`+given.ID.String()+`"] form.transfer button.primary`)),
		browsertest.WaitJS(`location.hash === '#/tickets' && document.querySelectorAll('.tickets.held li.ticket').length === 1`),
	)
	sent := browsertest.Text(t, ana, "main")
	require.Contains(t, sent, "ben@example.test")
	require.NotContains(t, sent, "null", "a ticket of ana's own shows nothing where a received one says so")
	browsertest.Step(t, ana, "3-sent")
	res, err := w.env.Checkout.CheckIn(ctx, p.TenantID, given.Code, "gate")
	require.NoError(t, err)
	require.Equal(t, checkout.VoidTicket, res.Result, "ana's code for it no longer admits")
	require.Equal(t, "TRANSFERRED", res.Void)

	var code string
	require.Eventually(t, func() bool {
		for _, m := range w.sink.Messages() {
			if m.To == "ben@example.test" && strings.Contains(m.Data, "transferred to you") {
				code = mailedCode.FindStringSubmatch(m.Data)[1]
			}
		}
		return code != ""
	}, 20*time.Second, 50*time.Millisecond, "ben is mailed the new code")

	ben := browsertest.Browser(t)
	w.logInByEmail(t, ben, store, "ben@example.test")
	browsertest.Do(t, ben,
		chromedp.Click(chromedp.CSS(`#account a[href="#/tickets"]`)),
		browsertest.WaitJS(`document.querySelectorAll('.tickets.held img.qr').length === 1 && document.querySelector('.tickets.held img.qr').complete`),
	)
	mine := browsertest.Text(t, ben, ".tickets.held")
	require.Contains(t, mine, code)
	require.Contains(t, mine, "Given to you")
	require.Contains(t, mine, venueName)
	browsertest.Step(t, ben, "4-received")
	res, err = w.env.Checkout.CheckIn(ctx, p.TenantID, code, "gate")
	require.NoError(t, err)
	require.Equal(t, checkout.CheckedIn, res.Result)
	w.env.RequireInvariants(t)
}

// buyerOf is the buyer id the store's login gives an address.
func buyerOf(t *testing.T, w *world, email string) string {
	t.Helper()
	var id string
	require.NoError(t, w.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT buyer_id FROM login_buyers WHERE tenant_id = $1 AND identifier = $2`, w.env.Tenant.ID, "email:"+email).Scan(&id))
	return id
}
