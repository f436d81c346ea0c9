package storefront_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/browsertest"
	"boxoffice/internal/config"
	"boxoffice/internal/devs3"
	"boxoffice/internal/letter/lettertest"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

const webhookSecret = "whsec_browser"

// world is a deployment for a shopper: the API with workers and payments,
// the stores published to an S3 server and served on an origin of their
// own (as dev's store server and a CDN do), mail caught.
type world struct {
	env    *testfix.Env
	base   string // the API, on a real loopback port
	stores string // where stores are served by path, on another port
	sink   *mail.Sink
	bucket storefront.Bucket
}

// worldOption changes the world's API before it starts.
type worldOption func(*api.Deps)

// strictCORS lets browsers call the API only from tenants' registered store
// domains, as in production (the world otherwise allows local origins, as
// dev does).
func strictCORS(d *api.Deps) { d.DevOrigins = false }

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, testfix.Options{Work: true})
}

func newWorldWith(t *testing.T, o testfix.Options, opts ...worldOption) *world {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	sim := pspsim.New(pspsim.Config{WebhookURL: base + "/v1/webhooks/payments/sim", WebhookSecret: webhookSecret,
		Latency: 50 * time.Millisecond})
	simSrv := httptest.NewServer(sim.Handler())
	s3srv, err := devs3.Start()
	require.NoError(t, err)
	client, err := storefront.NewS3(context.Background(), s3srv.URL, "us-east-1", s3srv.Provider())
	require.NoError(t, err)
	bucket := storefront.Bucket{Client: client, Name: "stores"}
	require.NoError(t, bucket.Ensure(context.Background()))
	o.Provider = payment.NewSim(simSrv.URL, 5*time.Second)
	o.Stores = &storefront.Publisher{Bucket: bucket}
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	mailer := &mail.Sender{Addr: sink.Addr(), From: "tickets@boxoffice.test"}
	o.SMTPAddr = sink.Addr()
	env := testfix.New(t, o)

	stores := &storefront.Server{Bucket: bucket, SlugOfHost: storefront.HostSlugs(env.Tenants)}

	storesSrv := httptest.NewServer(stores)
	deps := api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, River: env.River, Checkout: env.Checkout,
		WebhookSecrets: []string{webhookSecret}, WaitingRoom: env.Rooms, Login: login.NewStore(env.Schema.Pool, env.Keys),
		Mailer: mailer, StoresURL: storesSrv.URL, StoreBucket: &bucket, DevOrigins: true, LoginChallengeBits: 8,
		StreamPeriod: config.Default().StreamPeriod}
	for _, opt := range opts {
		opt(&deps)
	}
	srv := api.New(deps)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, srv.Start(ctx))
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		cancel()
		simSrv.Close()
		sim.Close()
		_ = srv.App().ShutdownWithTimeout(2 * time.Second)
		storesSrv.Close()
		s3srv.Close()
		sink.Close()
	})
	return &world{env: env, base: base, stores: storesSrv.URL, sink: sink, bucket: bucket}
}

// publish builds and publishes a tenant's store.
func (w *world) publish(t *testing.T, slug string) string {
	t.Helper()
	p := &storefront.Publisher{Tenants: w.env.Tenants, Bucket: w.bucket, APIBase: w.base}
	require.NoError(t, p.Publish(context.Background(), slug))
	return w.stores + "/s/" + slug + "/"
}

// venue is a small seated plan: two sections, the North one at a level.
func venue() *product.Layout {
	row := func(name string, y float64) product.Row { return product.Row{Name: name, Seats: 10, X: 0, Y: y} }
	return &product.Layout{
		PriceLevels: []product.PriceLevel{{Name: "Front", PriceCents: 9000}},
		Sections: []product.Section{
			{Name: "North", PriceLevel: "Front", X: 0, Y: 0, Rows: []product.Row{row("A", 0), row("B", 1.5)}},
			{Name: "South", X: 0, Y: 6, Rows: []product.Row{row("A", 0), row("B", 1.5)}},
		},
	}
}

// clickSeat clicks seat i of the map where it is drawn.
func clickSeat(i int) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		pos, err := seatInView(ctx, t, i)
		if err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.MouseClickXY(pos.X, pos.Y)(ctx, t)
	}
}

// seatInView is where seat i is on the page, the map scrolled into view
// first when it is not, as a shopper would.
func seatInView(ctx context.Context, t *chromedp.Target, i int) (struct{ X, Y float64 }, error) {
	return chromedp.Evaluate[struct{ X, Y float64 }](fmt.Sprintf(
		"(document.querySelector('canvas.map').getBoundingClientRect().bottom > innerHeight - 80 && document.querySelector('canvas.map').scrollIntoView({block: 'center'}), window.__seatMap.pos(%d))", i))(ctx, t)
}

// pay fills in the checkout form (the page is on its way to it) and pays.
func pay(email, method string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		fillEmail(email),
		chromedp.SetValue(chromedp.CSS(`#method`), method),
		chromedp.Click(chromedp.CSS(`form.checkout button.primary`)),
	)
}

// fillEmail types the address into checkout's e-mail field, unless the
// store filled it in from the login (then it must be that address).
func fillEmail(email string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[string](`document.querySelector('#email').value`)(ctx, t)
		if err != nil {
			return chromedp.Void{}, err
		}
		if v == "" {
			return chromedp.SendKeys(chromedp.CSS(`#email`), email)(ctx, t)
		}
		if v != email {
			return chromedp.Void{}, fmt.Errorf("checkout's e-mail is %q, not the login's %q", v, email)
		}
		return chromedp.Void{}, nil
	}
}

// tickets waits for n tickets with their QR codes.
func tickets(n int) chromedp.Action[chromedp.Void] {
	return browsertest.WaitJS(fmt.Sprintf(`document.querySelectorAll('.tickets img.qr').length === %d`, n))
}

// Journey: open the store, pick two seats on the map, hold them, pay with
// sim_ok, get two tickets with QR codes and the e-mail.
func TestBuyTwoSeats(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	fee := int64(150)
	_, err := w.env.Products.Update(context.Background(), w.env.Tenant.ID, p.ID, product.Update{FeeCents: &fee})
	require.NoError(t, err)
	token, err := tenant.SignBuyerToken([]byte(w.env.Tenant.BuyerTokenSecret), w.env.Tenant.ID, "ana", time.Hour)
	require.NoError(t, err)
	store := w.publish(t, w.env.Tenant.Slug)
	ctx := browsertest.Browser(t)

	// A tenant with its own login hands its token over.
	browsertest.Do(t, ctx,
		handOff(store, w.env.Tenant.Slug, token),
		chromedp.WaitVisible(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
	)
	browsertest.Step(t, ctx, "1-home")
	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="#/p/`+p.ID.String()+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`canvas.map`)),
		browsertest.WaitJS(`window.__seatMap && window.__seatMap.ready()`),
		clickSeat(2), clickSeat(3),
		browsertest.WaitJS(`window.__seatMap.picked.size === 2`),
	)
	total := browsertest.Text(t, ctx, ".total")
	require.Contains(t, total, "2 picked")
	require.Contains(t, total, "180.00", "two Front seats at 90.00")
	browsertest.Step(t, ctx, "2-picked")

	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`.countdown`)),
	)
	// The hold: each seat at its price, the fees and the total, and the
	// time left, also in the header's basket.
	held := browsertest.Text(t, ctx, ".summary")
	for _, line := range []string{"North · Row A · Seat 3\t€90.00", "North · Row A · Seat 4\t€90.00", "Booking fee (2 × €1.50)\t€3.00", "Total\t€183.00"} {
		require.Contains(t, held, line)
	}
	require.Contains(t, browsertest.Text(t, ctx, "#basket"), "Your hold")
	browsertest.Step(t, ctx, "3-held")

	browsertest.Do(t, ctx,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)),
		chromedp.WaitVisible(chromedp.CSS(`form.checkout`)),
	)
	require.Contains(t, browsertest.Text(t, ctx, ".summary"), "Total\t€183.00", "checkout sums up the order")
	require.Equal(t, "Pay €183.00", browsertest.Text(t, ctx, "form.checkout button.primary"))
	require.Regexp(t, `Your seats are held for \d+:\d\d`, browsertest.Text(t, ctx, ".hold-left"))
	browsertest.Step(t, ctx, "4-checkout")
	browsertest.Do(t, ctx,
		pay("ana@example.test", pspsim.MethodOK),
		browsertest.WaitJS(`document.querySelectorAll('.tickets img.qr').length === 2 && [...document.querySelectorAll('.tickets img.qr')].every(i => i.complete && i.naturalWidth > 0)`),
	)
	tickets := browsertest.Text(t, ctx, ".tickets")
	require.Contains(t, tickets, "North · Row A · Seat 3")
	require.Contains(t, browsertest.Text(t, ctx, "main"), "€183.00 (booking fees €3.00 included)")
	basket, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#basket').length`))
	require.NoError(t, err)
	require.Zero(t, basket, "the basket is empty once paid")
	browsertest.Step(t, ctx, "5-confirmed")

	// The tickets as a PDF, saved from the page: one page per seat, each
	// with the ticket's QR code.
	pdf := savedFile(t, ctx, "#tickets-pdf")
	pages, err := lettertest.Read(pdf)
	require.NoError(t, err)
	require.Len(t, pages, 2)
	orders, err := w.env.Checkout.ListForBuyer(context.Background(), p.TenantID, "ana", 10)
	require.NoError(t, err)
	for i, tk := range orders[0].Tickets {
		require.Contains(t, pages[i].Text, tk.Seat)
		require.Equal(t, []string{tk.Code}, pages[i].QR)
	}

	// The mail: HTML in the tenant's name with the total, the same tickets
	// attached.
	var letter mail.Parts
	require.Eventually(t, func() bool {
		for _, m := range w.sink.Messages() {
			if m.To == "ana@example.test" && strings.HasPrefix(m.Subject(), "Your tickets") {
				letter, err = m.Parts()
				return err == nil
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the tickets are mailed")
	require.Contains(t, letter.HTML, w.env.Tenant.Name)
	require.Contains(t, letter.HTML, "€183.00")
	require.Contains(t, letter.Text, "Booking fees")
	mailed, err := lettertest.Read(letter.Attachments[0].Data)
	require.NoError(t, err)
	require.Equal(t, pages, mailed)
	w.env.RequireInvariants(t)
}

// savedFile clicks the button that saves a file of the shopper's and
// returns the file's bytes, as the browser was handed them.
func savedFile(t *testing.T, ctx context.Context, button string) []byte {
	t.Helper()
	browsertest.Do(t, ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const make = URL.createObjectURL; window.__saved = null;
			URL.createObjectURL = (blob) => { blob.arrayBuffer().then((buf) => { let s = "";
				for (const c of new Uint8Array(buf)) s += String.fromCharCode(c); window.__saved = btoa(s); }); return make(blob); }; })()`),
		chromedp.Click(chromedp.CSS(button)),
		browsertest.WaitJS(`window.__saved !== null`),
	)
	b64, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__saved`))
	require.NoError(t, err)
	data, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	return data
}

// The store's files carry their cache headers: the page short-lived, the
// hashed assets immutable.
func TestStoreFilesAndHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := w.publish(t, w.env.Tenant.Slug)
	resp, err := http.Get(store)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=60", resp.Header.Get("Cache-Control"))
	page := new(strings.Builder)
	_, _ = fmt.Fprint(page, readAll(t, resp))
	var asset, styles string
	for _, part := range strings.Split(page.String(), `"`) {
		if strings.HasPrefix(part, "assets/app.") {
			asset = part
		}
		if strings.HasPrefix(part, "assets/style.") {
			styles = part
		}
	}
	require.NotEmpty(t, asset, "the module has a hashed name")
	a, err := http.Get(store + asset)
	require.NoError(t, err)
	defer a.Body.Close()
	require.Equal(t, "public, max-age=31536000, immutable", a.Header.Get("Cache-Control"))
	require.Equal(t, "text/javascript; charset=utf-8", a.Header.Get("Content-Type"))
	require.True(t, a.Uncompressed, "the module travels gzipped")
	raw := readAll(t, a)
	// What the page weighs on the wire: the page, its module and styles,
	// gzipped.
	var wire int
	for _, path := range []string{"", asset, styles} {
		req, err := http.NewRequest(http.MethodGet, store+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(t, err)
		wire += len(readAll(t, res))
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		require.Equal(t, "gzip", res.Header.Get("Content-Encoding"), path)
	}
	require.Less(t, wire, len(raw), "the page, module and styles gzipped weigh less than the module alone")
	// Nothing from another host but the API.
	require.NotContains(t, strings.ReplaceAll(page.String(), w.base, ""), "http://")
	require.NotContains(t, page.String(), "https://cdn")
	missing, err := http.Get(w.stores + "/s/nobody/")
	require.NoError(t, err)
	missing.Body.Close()
	require.Equal(t, http.StatusNotFound, missing.StatusCode)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b := new(strings.Builder)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
