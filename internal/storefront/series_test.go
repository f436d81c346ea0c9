package storefront_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/testfix"
)

// Journey: an event plays three evenings (the third's sale opens
// tomorrow) beside a show of one date. The store's home shows the event
// once, "3 dates"; its page lists the dates in order, each with its state
// and price; ana opens the second evening, sees the others to switch to,
// holds two seats, finds the second evening on her hold, pays, and finds
// the order under the event's name and date among her orders.
func TestSeriesInTheStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	single := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	first := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	zone := "Europe/Lisbon"
	name := "The Four Seasons"
	_, err := w.env.Products.UpdateEvent(ctx, first.TenantID, first.EventID, product.EventUpdate{Name: &name,
		Venue: &product.Venue{Name: "Teatro da Cidade", Address: "Rua do Teatro 12, Lisboa"}, TimeZone: &zone})
	require.NoError(t, err)
	evening := time.Now().Add(20 * 24 * time.Hour).Truncate(time.Hour)
	_, err = w.env.Products.Update(ctx, first.TenantID, first.ID, product.Update{StartsAt: &evening})
	require.NoError(t, err)
	dates := []*product.Product{first}
	for i, slug := range []string{"four-seasons-2", "four-seasons-3"} {
		starts := evening.AddDate(0, 0, i+1)
		onSale := time.Now().Add(-time.Minute)
		if i == 1 {
			onSale = time.Now().Add(24 * time.Hour)
		}
		p, err := w.env.Products.Create(ctx, product.CreateParams{TenantID: first.TenantID, Slug: slug, Name: name,
			Kind: product.KindSeated, Layout: venue(), Capacity: 40, PriceCents: 4500, Currency: "EUR",
			EventID: &first.EventID, OnSaleAt: onSale, Dates: product.Dates{StartsAt: &starts}})
		require.NoError(t, err)
		dates = append(dates, p)
	}
	// Made last, the third date comes first in the catalog's order (by
	// opening): the page still lists the dates by when they are.
	store := w.publish(t, w.env.Tenant.Slug)
	ana := w.shopper(t, w.env.Tenant, store, "ana")
	series := `li.card[data-event="` + first.EventID.String() + `"]`
	browsertest.Do(t, ana, chromedp.WaitVisible(chromedp.CSS(series)))
	require.Contains(t, browsertest.Text(t, ana, series), "3 dates")
	require.Contains(t, browsertest.Text(t, ana, series), name)
	cards := browsertest.Text(t, ana, "ul.cards")
	require.Equal(t, 1, strings.Count(cards, name), "one card for the three dates")
	require.NoError(t, chromedp.Do(ana, chromedp.WaitVisible(chromedp.CSS(`li.card[data-product="`+single.ID.String()+`"]`))),
		"a show of one date keeps its own card")
	browsertest.Step(t, ana, "1-home")

	browsertest.Do(t, ana, chromedp.Click(chromedp.CSS(series+` h2 a`)),
		chromedp.WaitVisible(chromedp.CSS(`ul.dates`)))
	listed, err := chromedp.Run(ana, chromedp.Evaluate[[]string](`[...document.querySelectorAll('li.date')].map((li) => li.dataset.product)`))
	require.NoError(t, err)
	require.Equal(t, []string{dates[0].ID.String(), dates[1].ID.String(), dates[2].ID.String()}, listed, "by when they are")
	require.Contains(t, browsertest.Text(t, ana, ".event-details"), "Teatro da Cidade")
	row := func(p *product.Product) string { return `li.date[data-product="` + p.ID.String() + `"]` }
	require.Contains(t, browsertest.Text(t, ana, row(dates[0])), "On sale")
	require.Contains(t, browsertest.Text(t, ana, row(dates[2])), "Opens in")
	require.Contains(t, browsertest.Text(t, ana, row(dates[2])+" a.button"), "View")
	day := browsertest.Text(t, ana, row(dates[1])+" .date-when strong")
	browsertest.Step(t, ana, "2-dates")

	browsertest.Do(t, ana, chromedp.Click(chromedp.CSS(row(dates[1])+" a.button")),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`))
	back, err := chromedp.Run(ana, chromedp.Evaluate[string](`document.querySelector('main > p:first-child a').getAttribute('href')`))
	require.NoError(t, err)
	require.Equal(t, "#/e/"+first.EventID.String(), back, "back to the dates")
	others, err := chromedp.Run(ana, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.other-dates li')].map((li) =>
		li.querySelector('a')?.getAttribute('href') || 'here')`))
	require.NoError(t, err)
	require.Equal(t, []string{"#/p/" + dates[0].ID.String(), "here", "#/p/" + dates[2].ID.String()}, others)
	browsertest.Step(t, ana, "3-second-evening")
	browsertest.Do(t, ana, clickSeat(0), clickSeat(1), chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)), chromedp.WaitVisible(chromedp.CSS(`.summary .event-details`)))
	require.Contains(t, browsertest.Text(t, ana, ".summary .event-details"), day, "the hold says which evening")
	browsertest.Step(t, ana, "4-held")

	// Paid, the order names the evening among her orders.
	browsertest.Do(t, ana, chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay("ana@example.test", pspsim.MethodOK), tickets(2),
		chromedp.Navigate(store+"#/orders"), chromedp.WaitVisible(chromedp.CSS(`ul.order-list li`)))
	order := browsertest.Text(t, ana, `ul.order-list li`)
	require.Contains(t, order, name)
	require.Contains(t, order, "Paid")
	require.Contains(t, order, "€180.00", "two North seats at 90.00")
	browsertest.Step(t, ana, "5-orders")

	// From one evening to another without going back.
	browsertest.Do(t, ana, chromedp.Navigate(store+"#/p/"+dates[1].ID.String()),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`),
		chromedp.Click(chromedp.CSS(`.other-dates a[href="#/p/`+dates[2].ID.String()+`"]`)),
		browsertest.WaitJS(`(document.querySelector('main .badge.upcoming')?.textContent || '').includes('Opens in')`))
}
