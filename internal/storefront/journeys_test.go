package storefront_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/bench"
	"boxoffice/internal/browsertest"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// shopper opens a store logged in as buyer (a token handed over).
func (w *world) shopper(t *testing.T, tn *tenant.Created, store, buyer string) context.Context {
	t.Helper()
	tok, err := tenant.SignBuyerToken([]byte(tn.BuyerTokenSecret), tn.ID, buyer, time.Hour)
	require.NoError(t, err)
	ctx := browsertest.Browser(t)
	browsertest.Do(t, ctx, handOff(store, tn.Slug, tok), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)))
	return ctx
}

// handOff signs a shopper in as a tenant's own login does: the store made
// the state nonce (as when it sends the shopper to that login, which this
// skips), and the login sends the token back with it.
func handOff(store, slug, token string) chromedp.Action[chromedp.Void] {
	// The login page first: it lists nothing, so what the caller waits
	// for next can only be the page after the login.
	return chromedp.Steps(
		chromedp.Navigate(store+"#/login"),
		chromedp.WaitVisible(chromedp.CSS(`#login-email`)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`sessionStorage.setItem("bo.%s.handoff", "nonce-of-the-test")`, slug)),
		chromedp.Navigate(store+"#/login?token="+token+"&state=nonce-of-the-test"),
	)
}

// A link carrying someone else's token (a login CSRF: the victim would buy
// into the attacker's account) signs no one in; the tenant's own login,
// started from the store, does, and the store says who is signed in.
func TestLoginHandOffNeedsTheStoresNonce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tn := w.env.Tenant
	attacker, err := tenant.SignBuyerToken([]byte(tn.BuyerTokenSecret), tn.ID, "mallory", time.Hour)
	require.NoError(t, err)
	// The tenant's own login: it signs whoever comes in as ana and sends
	// the shopper back with the state it was given.
	login := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		tok, err := tenant.SignBuyerToken([]byte(tn.BuyerTokenSecret), tn.ID, "ana@example.test", time.Hour)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		q := r.URL.Query()
		http.Redirect(rw, r, q.Get("return")+"?token="+tok+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	}))
	t.Cleanup(login.Close)
	_, err = w.env.Tenants.SetStore(t.Context(), tn.ID, tenant.StoreSettings{Name: "Hall",
		Theme: map[string]string{"loginUrl": login.URL + "/login"}})
	require.NoError(t, err)
	store := w.publish(t, tn.Slug)
	ctx := browsertest.Browser(t)

	browsertest.Do(t, ctx,
		chromedp.Navigate(store+"#/login?token="+attacker),
		chromedp.WaitVisible(chromedp.CSS(`main [role=alert]`)),
	)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("bo.`+tn.Slug+`.token") || ""`))
	require.NoError(t, err)
	require.Empty(t, stored, "the attacker's token is not kept")
	require.NotContains(t, browsertest.Text(t, ctx, "#account"), "mallory")
	browsertest.Step(t, ctx, "1-refused")

	// The refusal offers the store's own ways in: off to the tenant's
	// login and back, signed in.
	_, err = chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`#login-own`))))
	require.NoError(t, err)
	browsertest.Do(t, ctx,
		browsertest.WaitJS(`(document.querySelector('#signed-in-as')?.textContent || '').includes('ana@example.test')`))
	browsertest.Step(t, ctx, "2-signed-in")
	require.NotContains(t, browsertest.Text(t, ctx, "main"), "mallory")
}

// openProduct opens a seated product from the store's home page and waits
// until its map is drawn with the availability.
func openProduct(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.CSS(`a[href="#/p/`+id+`"]`)),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`),
	)
}

// pickAndHold opens a product, clicks the seats and reserves them.
func pickAndHold(productID string, seats ...int) chromedp.Action[chromedp.Void] {
	steps := []chromedp.Action[chromedp.Void]{openProduct(productID)}
	for _, s := range seats {
		steps = append(steps, clickSeat(s))
	}
	return chromedp.Steps(append(steps, chromedp.Click(chromedp.CSS(`.bar button.primary`)))...)
}

// venueShopper publishes a 40-seat venue and signs buyer in to its store:
// the world, the venue's product, the store's address and buyer's browser.
func venueShopper(t *testing.T, buyer string) (*world, *product.Product, string, context.Context) {
	t.Helper()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	store := w.publish(t, w.env.Tenant.Slug)
	return w, p, store, w.shopper(t, w.env.Tenant, store, buyer)
}

// twoShoppers publishes a 40-seat venue and signs two shoppers, ana and bo,
// in to its store, each in a browser of their own.
func twoShoppers(t *testing.T) (productID string, ana, bo context.Context) {
	t.Helper()
	w, p, store, ana := venueShopper(t, "ana")
	return p.ID.String(), ana, w.shopper(t, w.env.Tenant, store, "bo")
}

// A seat another shopper holds turns taken on a map that is open, within a
// second of the hold (the feed looks every BOXOFFICE_STREAM_PERIOD, 250 ms
// by default), without a reload; freed again, it turns free.
func TestSeatTakenElsewhereShowsWithinASecond(t *testing.T) {
	t.Parallel()
	id, ana, bo := twoShoppers(t)
	browsertest.Do(t, ana, openProduct(id))
	browsertest.Do(t, bo, openProduct(id), clickSeat(5), browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	// Bo's page shows the hold once its own poll saw it decided: ana's map
	// has had at least that long.
	within := func(what, cond string) {
		t.Helper()
		start := time.Now()
		_, err := chromedp.Run(ana, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(time.Second), chromedp.WithPollingInterval(20*time.Millisecond)))
		require.NoError(t, err, "%s on the open map within a second", what)
		t.Logf("%s on the other map %v after the holder's page said so", what, time.Since(start).Round(time.Millisecond))
	}
	within("taken", `window.__seatMap.taken(5)`)
	browsertest.Shot(t, ana, "1-taken-elsewhere")
	browsertest.Do(t, bo, chromedp.Click(chromedp.CSS(`.bar button:not(.primary)`)), chromedp.WaitVisible(chromedp.CSS(`p[role="alert"]`)))
	within("freed", `!window.__seatMap.taken(5)`)
}

// Two shoppers pick the same seat: one holds it, the other is told, sees
// the map updated and picks another.
func TestSameSeatTwoBrowsers(t *testing.T) {
	t.Parallel()
	id, ana, bo := twoShoppers(t)
	// Both have seat 6 picked; both reserve at once (before either hold
	// can reach the other's map through the stream).
	for _, ctx := range []context.Context{ana, bo} {
		browsertest.Do(t, ctx,
			openProduct(id),
			clickSeat(5), browsertest.WaitJS(`window.__seatMap.picked.size === 1`))
	}
	errs := make(chan error, 2)
	for _, ctx := range []context.Context{ana, bo} {
		go func() { errs <- chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.bar button.primary`))) }()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	outcome := `document.querySelector('.countdown') ? 'held' : document.querySelector('p.error[role="alert"]:not([hidden])') ? 'taken' : ''`
	results := map[string]context.Context{}
	for _, ctx := range []context.Context{ana, bo} {
		got, err := chromedp.Run(ctx, chromedp.Poll[string](outcome, chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err)
		results[got] = ctx
	}
	require.Len(t, results, 2, "one holds the seat, the other is told it was taken")
	loser := results["taken"]
	require.Contains(t, browsertest.Text(t, loser, "p.error:not([hidden])"), "Someone was faster")
	require.NoError(t, chromedp.Do(loser, browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready() && window.__seatMap.taken(5)`)),
		"the map shows it taken")
	browsertest.Step(t, loser, "1-seat-taken")
	browsertest.Do(t, loser, clickSeat(6), browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	require.Contains(t, browsertest.Text(t, loser, ".summary"), "North · Row A · Seat 7")
	browsertest.Step(t, loser, "2-another")
}

// A declined payment, then paying again while the seats are held.
func TestDeclineThenPayAgain(t *testing.T) {
	t.Parallel()
	_, p, _, ctx := venueShopper(t, "cy")
	browsertest.Do(t, ctx,
		pickAndHold(p.ID.String(), 12),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay("cy@example.test", pspsim.MethodDecline),
		chromedp.WaitVisible(chromedp.CSS(`p.error[role="alert"]:not([hidden])`)),
	)
	require.Contains(t, browsertest.Text(t, ctx, "p.error:not([hidden])"), "declined")
	browsertest.Step(t, ctx, "1-declined")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`button.primary`)), // pay again
		pay("cy@example.test", pspsim.MethodOK), tickets(1),
	)
	require.Contains(t, browsertest.Text(t, ctx, ".tickets"), "North · Row B · Seat 3")
	browsertest.Step(t, ctx, "2-paid")
}

// A reservation that waited past the API's deadline behind a lock is
// answered 503 PRODUCT_BUSY with Retry-After. The store says it is busy,
// sends the same request again (its Idempotency-Key makes that safe) and
// the shopper has their hold once the lock is gone: one request recorded,
// and no dialog stopped the page meanwhile.
func TestBusyAnswerIsSentAgain(t *testing.T) {
	t.Parallel()
	w, p, _, ctx := venueShopper(t, "flo")
	// A long transaction keeps every new request out (an operator's
	// maintenance, say); reads go on.
	lock, err := w.env.Schema.Pool.Begin(context.Background())
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(context.Background()) }()
	_, err = lock.Exec(context.Background(), `LOCK TABLE reservation_requests IN EXCLUSIVE MODE`)
	require.NoError(t, err)

	browsertest.Do(t, ctx, pickAndHold(p.ID.String(), 12),
		browsertest.WaitJS(`!document.getElementById('toast').hidden && document.getElementById('toast').textContent.includes('Busy')`))
	browsertest.Step(t, ctx, "1-busy")
	require.NoError(t, lock.Rollback(context.Background()))
	browsertest.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "North · Row B · Seat 3")
	browsertest.Step(t, ctx, "2-held")
	var requests int
	require.NoError(t, w.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM reservation_requests WHERE buyer_id = 'flo'`).Scan(&requests))
	require.Equal(t, 1, requests)
}

// The hold's time runs out: the page says the seats were released.
func TestHoldRunsOut(t *testing.T) {
	t.Parallel()
	w := newWorldWith(t, testfix.Options{Work: true, SweepInterval: time.Second})
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40, HoldSeconds: 30})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "dee")
	// The South section, through the section overview (it starts below
	// the fold of the whole-venue view).
	browsertest.Do(t, ctx,
		openProduct(p.ID.String()),
		chromedp.Click(chromedp.CSS(`nav.sections button:nth-child(3)`)),
		clickSeat(20), browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "South · Row A · Seat 1")
	browsertest.Step(t, ctx, "1-held")
	browsertest.Do(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelector('p.expired') !== null`,
		chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	require.Contains(t, browsertest.Text(t, ctx, "p.expired"), "released")
	browsertest.Step(t, ctx, "2-expired")
	w.env.RequireInvariants(t)
}

var sixDigits = regexp.MustCompile(`\b[0-9]{6}\b`)

// Passwordless login: ask for a code, read it from the mail, log in, and
// the account menu appears.
func TestPasswordlessLoginInTheStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := browsertest.Browser(t)
	w.logInByEmail(t, ctx, store, "eve@example.test")
	browsertest.Step(t, ctx, "2-logged-in")
}

// logInByEmail signs in on the store's login page with a code mailed to
// email, read from the mail catcher as the shopper reads it.
func (w *world) logInByEmail(t *testing.T, ctx context.Context, store, email string) {
	t.Helper()
	browsertest.Do(t, ctx,
		chromedp.Navigate(store+"#/login"),
		chromedp.WaitVisible(chromedp.CSS(`#login-email`)),
		chromedp.SendKeys(chromedp.CSS(`#login-email`), email),
		chromedp.Click(chromedp.CSS(`form button`)),
		chromedp.WaitVisible(chromedp.CSS(`#login-code`)),
	)
	browsertest.Step(t, ctx, "1-code-sent")
	var code string
	require.Eventually(t, func() bool {
		for _, m := range w.sink.Messages() {
			if m.To == email {
				code = sixDigits.FindString(m.Data[strings.Index(m.Data, "\r\n\r\n"):])
			}
		}
		return code != ""
	}, 10*time.Second, 50*time.Millisecond)
	browsertest.Do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`#login-code`), code),
		chromedp.Click(chromedp.CSS(`#login-code ~ button`)),
		chromedp.WaitVisible(chromedp.CSS(`#account a[href="#/orders"]`)),
	)
}

// Two tenants' stores: each shows its own name, colours and products only.
func TestTwoTenantsTwoStores(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	other := w.env.NewTenant(t)
	_, err := w.env.Tenants.SetStore(context.Background(), w.env.Tenant.ID, tenant.StoreSettings{Name: "Blue Arena",
		Theme: map[string]string{"primary": "#1040c0", "font": "serif"}})
	require.NoError(t, err)
	_, err = w.env.Tenants.SetStore(context.Background(), other.ID, tenant.StoreSettings{Name: "Red Club",
		Theme: map[string]string{"primary": "#c01010"}})
	require.NoError(t, err)
	mine := w.env.Product(t, testfix.ProductOpts{Capacity: 10})
	theirs := w.env.Product(t, testfix.ProductOpts{Tenant: other.ID, Capacity: 10})
	blue, red := w.publish(t, w.env.Tenant.Slug), w.publish(t, other.Slug)
	ctx := browsertest.Browser(t)
	for _, c := range []struct {
		url, name, colour, shows, hides string
	}{{blue, "Blue Arena", "#1040c0", mine.ID.String(), theirs.ID.String()}, {red, "Red Club", "#c01010", theirs.ID.String(), mine.ID.String()}} {
		browsertest.Do(t, ctx, chromedp.Navigate(c.url), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)))
		title, err := chromedp.Run(ctx, chromedp.Title())
		require.NoError(t, err)
		require.Equal(t, c.name, title)
		primary, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.documentElement).getPropertyValue('--primary').trim()`))
		require.NoError(t, err)
		require.Equal(t, c.colour, primary)
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`ul.cards`)))
		require.NoError(t, err)
		require.Contains(t, html, c.shows)
		require.NotContains(t, html, c.hides)
		browsertest.Step(t, ctx, c.name)
	}
}

// A million-number raffle: search a number and buy it.
func TestRaffleSearchAndBuy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Capacity: 1_000_000})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "fay")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#number`)),
		chromedp.SendKeys(chromedp.CSS(`#number`), "777777"),
		chromedp.Click(chromedp.CSS(`form.search button`)),
		browsertest.WaitJS(`document.querySelector('main').textContent.includes('777777 is free')`),
	)
	browsertest.Step(t, ctx, "1-found")
	// The pick shows as a chip whose button takes it back.
	pickIt := chromedp.Steps(chromedp.Click(chromedp.CSS(`#number-result button`)),
		chromedp.WaitVisible(chromedp.CSS(`.picked li`)))
	browsertest.Do(t, ctx, pickIt)
	require.Equal(t, []string{"#777777", "×"}, strings.Fields(browsertest.Text(t, ctx, ".bar .picked li")))
	require.Equal(t, "Number 777777 is in your picks. Remove", browsertest.Text(t, ctx, "#number-result"))
	browsertest.Step(t, ctx, "2-picked")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.picked button[aria-label="Remove number 777777"]`)),
		browsertest.WaitJS(`document.querySelectorAll('.picked li').length === 0 && document.querySelector('.bar button.primary').disabled`),
		browsertest.WaitJS(`document.querySelector('#number-result').textContent.includes('777777 is free')`),
		pickIt,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
	)
	// The reservation's answer waited for the decision (Prefer: wait): when
	// it brought it (201), the store read no status. (A machine too slow to
	// decide within the wait gets 202 and one waiting read instead.)
	learnt, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Created bool `json:"created"`
		Reads   int  `json:"reads"`
	}](`(() => { const es = performance.getEntriesByType('resource');
		return { created: es.some((e) => /\/products\/[^/]+\/reservations$/.test(e.name) && e.responseStatus === 201),
		         reads: es.filter((e) => e.name.includes('/v1/reservations/')).length }; })()`))
	require.NoError(t, err)
	if learnt.Created {
		require.Zero(t, learnt.Reads, "the decision came with the answer")
	} else {
		t.Log("the reservation was still queued when its answer's wait ended")
	}
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay("fay@example.test", pspsim.MethodOK), tickets(1),
	)
	require.Contains(t, browsertest.Text(t, ctx, ".tickets"), "Number 777777")
	browsertest.Step(t, ctx, "3-bought")
}

// A ten-million-number raffle: the page reads the bitmap pages its counts
// and the number searched need, not all 611; the shopper browses down from
// ten blocks of a million to a hundred numbers and picks one there.
func TestTenMillionRaffleReadsItsPages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Capacity: 10_000_000})
	r := w.env.Reserve(t, p, "early", reservation.Params{Numbers: testfix.Nums(7_654_321)})
	w.env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, w.env.Get(t, p, r.ID).Status)
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "gus")
	search := func(n string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.SetValue(chromedp.CSS(`#number`), ""),
			chromedp.SendKeys(chromedp.CSS(`#number`), n),
			chromedp.Click(chromedp.CSS(`form.search button`)),
			browsertest.WaitJS(`document.querySelector('#number-result').textContent.includes('`+n+`')`),
		)
	}
	pagesRead := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](
			`performance.getEntriesByType('resource').filter((e) => e.name.includes('/availability/pages/')).length`))
		require.NoError(t, err)
		return n
	}
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#number`)),
		rangeSays("1–1,000,000 1,000,000 free"),
		rangeSays("7,000,001–8,000,000 999,999 free"),
		search("7654321"),
	)
	blocks, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('ul.ranges button').length`))
	require.NoError(t, err)
	require.Equal(t, 10, blocks)
	require.Contains(t, browsertest.Text(t, ctx, "#number-result"), "Number 7654321 is taken")
	browsertest.Do(t, ctx, search("7654322"))
	require.Contains(t, browsertest.Text(t, ctx, "#number-result"), "Number 7654322 is free")
	// The blocks' counts need the pages where a million ends (9), the
	// number searched one more: the pages a block covers whole are counted
	// by the index.
	require.Equal(t, 10, pagesRead())
	browsertest.Step(t, ctx, "1-found")

	// Down to a hundred numbers: a million's blocks of ten thousand need its
	// 62 pages, the next levels nothing more.
	browsertest.Do(t, ctx,
		clickButton(`ul.ranges button`, "7,000,001–8,000,000"),
		rangeSays("7,650,001–7,660,000 9,999 free"),
		clickButton(`ul.ranges button`, "7,650,001–7,660,000"),
		rangeSays("7,654,301–7,654,400 99 free"),
		clickButton(`ul.ranges button`, "7,654,301–7,654,400"),
		browsertest.WaitJS(`document.querySelectorAll('ul.numbers button').length === 100`),
	)
	crumbs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelector('nav.crumbs').children].map((c) => c.textContent)`))
	require.NoError(t, err)
	require.Equal(t, []string{"All numbers", "7,000,001–8,000,000", "7,650,001–7,660,000", "7,654,301–7,654,400"}, crumbs)
	taken, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('ul.numbers button:disabled')].map((b) => b.getAttribute('aria-label'))`))
	require.NoError(t, err)
	require.Equal(t, []string{"7654321, taken"}, taken)
	require.Equal(t, 69, pagesRead(), "pages 427–488 and the searched one")
	browsertest.Do(t, ctx, clickButton(`ul.numbers button`, "7654322"))
	pressed, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`document.querySelector('ul.numbers button[aria-label="7654322, picked"]')?.getAttribute('aria-pressed')`))
	require.NoError(t, err)
	require.Equal(t, "true", pressed)
	require.Contains(t, browsertest.Text(t, ctx, ".total"), "1 picked")
	browsertest.Do(t, ctx, chromedp.Evaluate[chromedp.Void](
		`document.querySelector('ul.numbers button[aria-pressed="true"]').scrollIntoView({block: "center"})`))
	browsertest.Step(t, ctx, "2-picked")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay("gus@example.test", pspsim.MethodOK), tickets(1),
	)
	require.Contains(t, browsertest.Text(t, ctx, ".tickets"), "Number 7654322")
}

// clickButton clicks the first button of sel whose text starts with text.
func clickButton(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		browsertest.WaitJS(fmt.Sprintf(`[...document.querySelectorAll(%q)].some((b) => b.textContent.startsWith(%q))`, sel, text)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`[...document.querySelectorAll(%q)].find((b) => b.textContent.startsWith(%q)).click()`, sel, text)),
	)
}

// holdTwoAndPay picks the map's first two seats, holds them, pays with
// sim_ok and waits for the two tickets.
func holdTwoAndPay(email string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		clickSeat(0), clickSeat(1),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		pay(email, pspsim.MethodOK), tickets(2),
	)
}

// Behind a waiting room: join (solving the proof of work), get admitted,
// pick two seats, hold, pay, two tickets.
func TestWaitingRoomJourney(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 10, ChallengeBits: 10}})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "gus")
	id := p.ID.String()
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="#/p/`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`main button.primary`)),
	)
	browsertest.Step(t, ctx, "1-room")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`main button.primary`)), // join
		chromedp.Poll[chromedp.Void](`window.__seatMap && window.__seatMap.ready()`,
			chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)),
	)
	browsertest.Step(t, ctx, "2-admitted")
	browsertest.Do(t, ctx, holdTwoAndPay("gus@example.test"))
	browsertest.Step(t, ctx, "3-confirmed")
	require.Eventually(t, func() bool {
		for _, m := range w.sink.Messages() {
			if m.To == "gus@example.test" && strings.Contains(m.Data, "North · Row A · Seat 1") {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the tickets are mailed")
}

// At 360 px wide every page fits: nothing scrolls sideways, and the map's
// seats can still be picked.
func TestNarrowScreen(t *testing.T) {
	t.Parallel()
	_, p, store, ctx := venueShopper(t, "hal")
	fits := `document.documentElement.scrollWidth <= 360`
	browsertest.Do(t, ctx, chromedp.EmulateViewport(360, 740, chromedp.EmulateMobile),
		chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)), browsertest.WaitJS(fits))
	browsertest.Step(t, ctx, "1-home")
	browsertest.Do(t, ctx,
		openProduct(p.ID.String()), browsertest.WaitJS(fits),
		clickSeat(0), browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)), browsertest.WaitJS(fits))
	browsertest.Step(t, ctx, "2-held")
}

// Picking with the keyboard alone: focus the map, move with the arrow keys,
// pick with Enter; each seat is announced with its label and price.
func TestKeyboardPicking(t *testing.T) {
	t.Parallel()
	_, p, _, ctx := venueShopper(t, "ivy")
	browsertest.Do(t, ctx,
		openProduct(p.ID.String()),
		chromedp.Focus(chromedp.CSS(`canvas.map`)),
		chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.Enter),
		browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		browsertest.WaitJS(`document.getElementById('announce').textContent.includes('North · Row B · Seat 2') && document.getElementById('announce').textContent.includes('picked')`),
	)
	said := browsertest.Text(t, ctx, "#announce")
	require.Contains(t, said, "90.00", "the price is said with the seat")
	require.Contains(t, said, "picked")
	browsertest.Do(t, ctx, chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(" "),
		browsertest.WaitJS(`window.__seatMap.picked.size === 2`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.countdown`)))
	seats := browsertest.Text(t, ctx, ".summary")
	require.Contains(t, seats, "North · Row B · Seat 2")
	require.Contains(t, seats, "North · Row B · Seat 3")
	browsertest.Step(t, ctx, "1-held-by-keyboard")
}

// The seat list, with the keyboard alone: Tab to "Seat list", open it,
// open a section, Tab along a row's free seats and pick two (a seat taken
// by someone else cannot be reached), then Tab on to Reserve. The list and
// the map are one selection.
func TestSeatListByKeyboard(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	w.env.Reserve(t, p, "someone", reservation.Params{Numbers: []int32{1}}) // North · Row A · Seat 1
	w.env.Drain(t, p, 10)
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "kim")
	focused := func(want string) chromedp.Action[chromedp.Void] {
		return browsertest.WaitJS(fmt.Sprintf(`(document.activeElement?.textContent || "").trim() === %q`, want))
	}
	browsertest.Do(t, ctx,
		openProduct(p.ID.String()),
		chromedp.Focus(chromedp.CSS(`a[href="#/"]`)), // the top of the page, as after a page load
		tabTo(`document.activeElement?.getAttribute('aria-controls')?.startsWith('seat-list')`),
		chromedp.KeyEvent(kb.Enter),
		browsertest.WaitJS(`document.activeElement?.tagName === 'SUMMARY'`),
		chromedp.KeyEvent(kb.Enter), // open North: its rows appear (the toggle event comes a moment later)
		browsertest.WaitJS(`document.querySelectorAll('.seat-btn').length === 20`),
		chromedp.KeyEvent("\t"), focused("2"), // seat 1 is taken: not reachable
		chromedp.KeyEvent(kb.Enter),
		chromedp.KeyEvent("\t"), focused("3"),
		chromedp.KeyEvent(" "),
		browsertest.WaitJS(`window.__seatMap.picked.size === 2`),
		browsertest.WaitJS(`document.activeElement.getAttribute('aria-pressed') === 'true'`),
		// The live region is written a moment after the pick, to be read.
		browsertest.WaitJS(`document.getElementById('announce').textContent.includes('North · Row A · Seat 3')`),
	)
	require.Contains(t, browsertest.Text(t, ctx, ".total"), "2 picked")
	browsertest.Step(t, ctx, "1-picked-from-the-list")
	browsertest.Do(t, ctx,
		tabTo(`document.activeElement?.classList.contains('primary') && document.activeElement.closest('.bar')`),
		chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.summary`)))
	held := browsertest.Text(t, ctx, ".summary")
	require.Contains(t, held, "North · Row A · Seat 2")
	require.Contains(t, held, "North · Row A · Seat 3")
}

// tabTo presses Tab until the JavaScript condition holds of the focused
// element (at most 200 times).
func tabTo(cond string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for range 200 {
			ok, err := chromedp.Evaluate[bool](`!!(`+cond+`)`)(ctx, t)
			if err != nil || ok {
				return chromedp.Void{}, err
			}
			if _, err := chromedp.KeyEvent("\t")(ctx, t); err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, fmt.Errorf("tabbed 200 times and never reached %s", cond)
	}
}

// A stadium of 9,000 seats on a phone: the whole venue first, drawn as its
// sections with their free seats (the seats too small to pick); a tap on a
// section shows its seats, and a tap on a seat picks it.
func TestBigVenueOnAPhone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	layout := bench.StadiumLayout(9000)
	p := w.env.Product(t, testfix.ProductOpts{Layout: layout, Capacity: layout.Number()})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := w.shopper(t, w.env.Tenant, store, "pia")
	browsertest.Do(t, ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)),
		openProduct(p.ID.String()), browsertest.WaitJS(`window.__seatMap.overview()`))
	browsertest.Step(t, ctx, "1-whole-venue")
	tapSection := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		pos, err := chromedp.Evaluate[struct{ X, Y float64 }](
			`(document.querySelector('canvas.map').scrollIntoView({block: 'center'}), window.__seatMap.sectionPos(1))`)(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.MouseClickXY(pos.X, pos.Y)(ctx, tg)
	}
	// The section is announced a moment after it is drawn (a live region
	// is read when its text changes).
	browsertest.Do(t, ctx, tapSection, browsertest.WaitJS(`!window.__seatMap.overview()`),
		browsertest.WaitJS(`document.querySelector('#announce').textContent.includes('S02')`))
	browsertest.Step(t, ctx, "2-section")
	// Where the shopper tapped: S02's middle row's middle seat.
	browsertest.Do(t, ctx, clickSeat(3000+15*100+49), browsertest.WaitJS(`window.__seatMap.picked.size === 1`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.summary`)))
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "S02 · Row 16 · Seat 50")
	browsertest.Step(t, ctx, "3-held")
}

// Seats picked before logging in are still picked after: "Reserve" sends
// the shopper to the login, which says why, and the login back to the map
// with the pick.
func TestPickSurvivesTheLogin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := browsertest.Browser(t)
	browsertest.Do(t, ctx, chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)),
		openProduct(p.ID.String()), clickSeat(4), clickSeat(5), browsertest.WaitJS(`window.__seatMap.picked.size === 2`),
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`#login-email`)))
	require.Equal(t, "Log in to reserve: your picks are kept for when you come back.", browsertest.Text(t, ctx, "main .notice"),
		"the login page says why the shopper is there")
	w.logInByEmail(t, ctx, store, "lea@example.test")
	browsertest.Do(t, ctx, browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready() && window.__seatMap.picked.size === 2`))
	require.Contains(t, browsertest.Text(t, ctx, ".total"), "2 picked")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.summary`)))
	held := browsertest.Text(t, ctx, ".summary")
	require.Contains(t, held, "North · Row A · Seat 5")
	require.Contains(t, held, "North · Row A · Seat 6")
}

// A link to an event, an order or a reservation the shopper cannot have
// (a typo, another account's, long gone) says what was not found and
// leads back to the events; an unknown event's answer, which takes the
// catalog a second to be sure of, does not draw over the page the shopper
// went on to.
func TestNotFoundPages(t *testing.T) {
	t.Parallel()
	_, _, store, ctx := venueShopper(t, "nia")
	missing := uuid.NewString()
	for _, c := range []struct{ hash, says string }{
		{"#/p/" + missing, "This event is not (or no longer) on sale here."},
		{"#/o/" + missing, "There is no such order in your account."},
		{"#/r/" + missing, "There is no such reservation in your account."},
	} {
		browsertest.Do(t, ctx, chromedp.Navigate(store+c.hash),
			browsertest.WaitJS(`document.querySelector('main h1')?.textContent === 'Not found'`))
		require.Equal(t, c.says, browsertest.Text(t, ctx, `main p[role="alert"]`), c.hash)
	}
	browsertest.Step(t, ctx, "1-not-found")
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(`main a[href="#/"]`)), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)))

	browsertest.Do(t, ctx, chromedp.Navigate(store+"#/p/"+uuid.NewString()), chromedp.Sleep(500*time.Millisecond), chromedp.Navigate(store+"#/"),
		chromedp.WaitVisible(chromedp.CSS(`ul.cards`)), chromedp.Sleep(3*time.Second))
	home, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('main ul.cards') && !document.querySelector('main [role="alert"]')`))
	require.NoError(t, err)
	require.True(t, home, "the events, not the error of the event left behind")
}

// rangeSays waits for a block of a raffle's numbers to say want (its
// range, then how many are free): "7000001–8000000 999999 free".
func rangeSays(want string) chromedp.Action[chromedp.Void] {
	return browsertest.WaitJS(fmt.Sprintf(`[...document.querySelectorAll('ul.ranges button')].some((b) => b.textContent === %q)`, want))
}
