package storefront_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/codes"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// A shopper types a discount code at checkout: a wrong one is refused with
// its reason, the right one shows its discount in the summary and on the
// pay button, and the order charges that price.
func TestDiscountCodeAtCheckout(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	pct := 20
	w.env.CodeList(t, p.TenantID, codes.Terms{Name: "Fans", PercentOff: &pct, UsesPerCode: 1, PerBuyer: 1}, "FAN-2027")
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "dora")
	browsertest.Do(t, ctx, openProduct(p.ID.String()), clickSeat(0), clickSeat(1),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`#discount-code`)),
		chromedp.SendKeys(chromedp.CSS(`#discount-code`), "nope"), chromedp.Click(chromedp.CSS(`#apply-code`)),
		browsertest.WaitJS(`document.querySelector('#discount-note').textContent.includes('no such code')`))
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#discount-code').value = ''`),
		chromedp.SendKeys(chromedp.CSS(`#discount-code`), "fan-2027"), chromedp.Click(chromedp.CSS(`#apply-code`)),
		browsertest.WaitJS(`!!document.querySelector('.summary .discount')`))
	require.Contains(t, browsertest.Text(t, ctx, `.summary`), "Discount (FAN-2027)")
	require.Contains(t, browsertest.Text(t, ctx, `.summary`), "−€36.00")
	require.Contains(t, browsertest.Text(t, ctx, `form.checkout button.primary`), "€144.00")
	browsertest.Step(t, ctx, "1-code-applied")
	browsertest.Do(t, ctx, pay("dora@example.test", pspsim.MethodOK), tickets(2))
	require.Contains(t, browsertest.Text(t, ctx, `main`), "Discount (FAN-2027) −€36.00")
	browsertest.Step(t, ctx, "2-paid")
	lists, err := codes.Lists(context.Background(), w.env.Schema.Pool, p.TenantID)
	require.NoError(t, err)
	require.Equal(t, 1, lists[0].Used)
}

// A presale: before the general sale the event page asks for a code; a
// wrong one is refused and asked for again, the fan club's lets the
// shopper pick and hold seats an hour before everyone else.
func TestPresaleWithACode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	opens := time.Now().Add(time.Hour)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40, OnSaleAt: opens})
	from := time.Now().Add(-time.Minute)
	w.env.CodeList(t, p.TenantID, codes.Terms{Kind: codes.KindPresale, Name: "Fan club", ProductID: &p.ID, UsesPerCode: 1,
		PerBuyer: 1, ValidFrom: &from, ValidUntil: &opens}, "CLUB-7")
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "eli")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#presale-code`)))
	browsertest.Step(t, ctx, "1-presale")
	browsertest.Do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#presale-code`), "club-7"), chromedp.Click(chromedp.CSS(`#presale-enter`)),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`), clickSeat(0),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "North · Row A · Seat 1")
	browsertest.Step(t, ctx, "2-held-in-the-presale")
	w.env.RequireInvariants(t)
}

// A presale behind the waiting room: the event page asks a code holder for
// the code, which puts them in the presale's queue; a wrong code is
// refused; when the window opens the presale is drawn, the shopper is
// admitted and holds a seat two hours before the general sale.
func TestPresaleQueueWithACode(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	general := time.Now().Add(3 * time.Hour)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40, OnSaleAt: general,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 10}})
	from := time.Now().Add(time.Hour)
	w.env.CodeList(t, p.TenantID, codes.Terms{Kind: codes.KindPresale, Name: "Fan club", ProductID: &p.ID, UsesPerCode: 1,
		PerBuyer: 1, ValidFrom: &from, ValidUntil: &general}, "CLUB-9")
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "ivo")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#presale-code`)))
	browsertest.Step(t, ctx, "1-presale-queue")
	browsertest.Do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#presale-code`), "club-0"), chromedp.Click(chromedp.CSS(`#presale-enter`)),
		chromedp.WaitVisible(chromedp.CSS(`.queue .error`)))
	require.Contains(t, browsertest.Text(t, ctx, ".queue"), "no such code")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`.queue a`)), chromedp.WaitVisible(chromedp.CSS(`#presale-code`)),
		chromedp.SendKeys(chromedp.CSS(`#presale-code`), "club-9"), chromedp.Click(chromedp.CSS(`#presale-enter`)),
		browsertest.WaitJS(`document.querySelector(".queue")?.textContent.includes("presale opens")`))
	browsertest.Step(t, ctx, "2-waiting-for-the-presale-draw")

	// The window opens: the presale is drawn and its queue admitted.
	w.env.Exec(t, `UPDATE code_lists SET valid_from = now() - interval '1 second' WHERE product_id = $1`, p.ID)
	w.env.Exec(t, `UPDATE presale_rounds SET opens_at = now() - interval '1 second' WHERE product_id = $1`, p.ID)
	browsertest.Do(t, ctx, chromedp.Poll[chromedp.Void](`window.__seatMap && window.__seatMap.ready()`,
		chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)),
		clickSeat(0), chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "North · Row A · Seat 1")
	browsertest.Step(t, ctx, "3-held-in-the-presale")
	w.env.RequireInvariants(t)
}
