package api_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	pngenc "image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/audit"
	"boxoffice/internal/browsertest"
	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
	"boxoffice/internal/devs3"
	"boxoffice/internal/metrics"
	"boxoffice/internal/ops"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/session"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// deployment is the API with the console on a real loopback port, as
// `boxoffice dev` serves it (plain http: the cookie goes without Secure).
type deployment struct {
	env    *testfix.Env
	base   string
	client *sqs.Client // with SQS: the emulator holding the dead letters
	queues sqsqueue.Config
	bucket storefront.Bucket
	stores string // where stores are served (Stores)
}

type deploymentOpts struct {
	Work   bool // claim workers from the start
	SQS    bool // an SQS deployment with its dead-letter queue
	Stores bool // stores published to an S3 server and served at /s/ on an origin of their own
}

func newDeployment(t *testing.T, o deploymentOpts) *deployment {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &deployment{base: "http://" + ln.Addr().String()}
	sim := pspsim.New(pspsim.Config{WebhookURL: d.base + "/v1/webhooks/payments/sim", WebhookSecret: "whsec_console"})
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { simSrv.Close(); sim.Close() })
	// Rehearsals pay with a simulator of their own (test mode).
	testSim := pspsim.New(pspsim.Config{})
	testSimSrv := httptest.NewServer(testSim.Handler())
	t.Cleanup(func() { testSimSrv.Close(); testSim.Close() })
	fo := testfix.Options{Work: o.Work, Provider: payment.NewSim(simSrv.URL, 5*time.Second), Metrics: metrics.New(),
		TestModeProvider: payment.NewSim(testSimSrv.URL, 5*time.Second)}
	deps := api.Deps{AdminKey: adminKey, DevOrigins: true, WebhookSecrets: []string{"whsec_console"}}
	if o.Stores {
		s3srv, err := devs3.Start()
		require.NoError(t, err)
		t.Cleanup(s3srv.Close)
		client, err := storefront.NewS3(context.Background(), s3srv.URL, "us-east-1", s3srv.Provider())
		require.NoError(t, err)
		d.bucket = storefront.Bucket{Client: client, Name: "stores"}
		require.NoError(t, d.bucket.Ensure(context.Background()))
		fo.Stores = &storefront.Publisher{Bucket: d.bucket, APIBase: d.base}
	}
	d.env = testfix.New(t, fo)
	env := d.env
	backend := "river"
	if o.SQS {
		var mainURL, dlqURL string
		d.client, mainURL, dlqURL = testfix.SQS(t, 1, time.Second)
		d.queues = sqsqueue.Config{QueueURL: mainURL, DLQURL: dlqURL, MaxReceiveCount: 1, VisibilityTimeout: time.Second}
		backend, deps.DLQ = "sqs", sqsqueue.NewOps(d.client, d.queues, env.Schema.Pool)
	}
	if o.Stores {
		stores := &storefront.Server{Bucket: d.bucket, SlugOfHost: storefront.HostSlugs(env.Tenants)}
		storesSrv := httptest.NewServer(stores)
		t.Cleanup(storesSrv.Close)
		d.stores = storesSrv.URL
		deps.StoresURL, deps.StoreBucket = storesSrv.URL, &d.bucket
	}
	deps.Pool, deps.Tenants, deps.Products, deps.Reservations = env.Schema.Pool, env.Tenants, env.Products, env.Service
	deps.Metrics, deps.Logger, deps.River, deps.Checkout, deps.WaitingRoom = fo.Metrics, env.Logger, env.River, env.Checkout, env.Rooms
	deps.Reporter = ops.NewReporter(env.Schema.Pool, backend, deps.DLQ)
	deps.Audit, deps.Sessions = audit.New(env.Schema.Pool), session.New(env.Schema.Pool, session.Limits{})
	deps.Rehearsals, deps.Webhooks = env.Rehearsals, env.Webhooks
	srv := api.New(deps)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, srv.Start(ctx))
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		cancel()
		_ = srv.App().ShutdownWithTimeout(2 * time.Second)
		// A shutdown that came before the server began serving does not
		// stop it; closing its listener does.
		_ = ln.Close()
		<-served
	})
	return d
}

// signIn opens the console and signs in with key.
func (d *deployment) signIn(key string) chromedp.Action[chromedp.Void] {
	return browsertest.ConsoleSignIn(d.base, key)
}

// open goes to a console page.
func (d *deployment) open(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Navigate(d.base + "/console/" + hash)
}

// A tenant's operator watches a small burst: the backlog rises on the live
// view, then drains when the claim workers start.
func TestConsoleOperatorWatchesBurst(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 200})
	_, opKey, err := d.env.Tenants.CreateKey(context.Background(), d.env.Tenant.ID, tenant.RoleOperator, "watch")
	require.NoError(t, err)
	ctx := browsertest.Browser(t)
	err = chromedp.Do(ctx, d.signIn(opKey), browsertest.WaitText(`main table`, p.Name),
		chromedp.Click(chromedp.CSS(`tr[data-id="`+p.ID.String()+`"] a`)), browsertest.WaitText(`#live-status`, "Updated"))
	require.NoError(t, err)
	require.NotContains(t, browsertest.Text(t, ctx, `#nav`), "Operations", "an operator has no admin pages")

	const burst = 40
	for i := range burst {
		buyer := fmt.Sprintf("fan-%d", i)
		req, _ := http.NewRequest(http.MethodPost, d.base+"/v1/products/"+p.ID.String()+"/reservations",
			strings.NewReader(`{"quantity":1}`))
		req.Header.Set("Authorization", "Bearer "+buyerToken(t, d.env.Tenant, buyer, time.Hour))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", buyer)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}
	err = chromedp.Do(ctx, browsertest.WaitText(`#queued`, fmt.Sprint(burst)))
	require.NoError(t, err, "the backlog shows on the live view")
	browsertest.Step(t, ctx, "1-backlog")

	d.env.StartWorkers(t)
	err = chromedp.Do(ctx, browsertest.WaitJS(`document.querySelector('#queued')?.textContent === '0'`),
		browsertest.WaitText(`[data-group="Stock"]`, "Held"+fmt.Sprint(burst)))
	require.NoError(t, err, "the backlog drains")
	// Decision latencies under a second read in milliseconds, not "0.0 s".
	claims, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-group="Claims"]').textContent`))
	require.NoError(t, err)
	require.Regexp(t, `Latency p50 / p99(\d+ ms|\d+\.\d s) / (\d+ ms|\d+\.\d s)`, claims)
	// The 15-minute chart has the burst in it (its history is refreshed
	// every 5 s).
	browsertest.Do(t, ctx, browsertest.WaitJS(
		`Number(document.querySelector('.chart[data-chart="accepted decided rejected"]')?.dataset.peak) >= 20`))
	// The whole page, charts included (the picture in docs/operations.md).
	browsertest.Do(t, ctx, chromedp.EmulateViewport(1280, 1120), chromedp.Sleep(1200*time.Millisecond))
	browsertest.Step(t, ctx, "2-drained")
}

// The platform admin peeks and redrives a dead letter, pauses and resumes
// checkout, and finds it all in the audit log.
func TestConsoleAdminOperates(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{SQS: true})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 10})
	bg := context.Background()
	// A request's message dead-lettered: received once (maxReceiveCount 1)
	// and left to time out.
	body := sqsqueue.NewRefBody(reservation.Ref{ID: uuid.New(), ProductID: p.ID, TenantID: d.env.Tenant.ID})
	_, err := d.client.SendMessage(bg, &sqs.SendMessageInput{QueueUrl: aws.String(d.queues.QueueURL), MessageBody: aws.String(body)})
	require.NoError(t, err)
	ops := sqsqueue.NewOps(d.client, d.queues, d.env.Schema.Pool)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, _ = d.client.ReceiveMessage(bg, &sqs.ReceiveMessageInput{QueueUrl: aws.String(d.queues.QueueURL), MaxNumberOfMessages: 10})
		msgs, err := ops.PeekDLQ(bg, 10)
		assert.NoError(c, err)
		assert.Len(c, msgs, 1)
	}, 15*time.Second, 200*time.Millisecond)

	ctx := browsertest.Browser(t)
	err = chromedp.Do(ctx, d.signIn(adminKey), d.open("#/ops"),
		browsertest.WaitJS(`document.querySelectorAll('tr.dead-letter').length === 1`))
	require.NoError(t, err, "the dead letter is listed")
	require.Contains(t, browsertest.Text(t, ctx, `#dlq`), p.ID.String())
	browsertest.Step(t, ctx, "1-dead-letter")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#redrive`)), browsertest.WaitText(`#redriven`, "Moved 1"))
	require.NoError(t, err, "redriven")

	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#pause-reason`), "provider incident"),
		chromedp.Click(chromedp.CSS(`#pause`)), chromedp.WaitVisible(chromedp.CSS(`#pause-confirm`)))
	require.NoError(t, err, "asked to confirm")
	require.Contains(t, browsertest.Text(t, ctx, `#checkout-state`), "open", "not paused before the confirmation")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pause`)), browsertest.WaitText(`#checkout-state`, "paused: provider incident"))
	require.NoError(t, err, "paused")
	paused, reason, err := d.env.Checkout.Paused(bg)
	require.NoError(t, err)
	require.True(t, paused)
	require.Equal(t, "provider incident", reason)
	browsertest.Step(t, ctx, "2-paused")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#resume`)), browsertest.WaitText(`#checkout-state`, "open"))
	require.NoError(t, err, "resumed")

	err = chromedp.Do(ctx, d.open("#/audit"), browsertest.WaitJS(`document.querySelectorAll('tr.audit-entry').length >= 4`))
	require.NoError(t, err)
	log := browsertest.Text(t, ctx, `main table`)
	for _, action := range []string{"console-sign-in", "ops-dlq-redrive", "ops-checkout-pause", "ops-checkout-resume"} {
		require.Contains(t, log, action)
	}
	browsertest.Step(t, ctx, "3-audit")
}

// A tenant admin creates a seated product from a CSV seat map whose stalls
// are a price level, priced in the form, publishes it, and finds it in the
// store.
func TestConsoleTenantAdminPublishesSeatedProduct(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{Work: true, Stores: true})
	ctx := browsertest.Browser(t)
	var csv strings.Builder
	csv.WriteString("section,row,seat,x,y,price_level\n")
	for _, sec := range []string{"Stalls", "Circle"} {
		for r, row := range []string{"A", "B"} {
			level := ""
			if sec == "Stalls" {
				level = "Premium"
			}
			for s := 1; s <= 6; s++ {
				fmt.Fprintf(&csv, "%s,%s,%d,%d,%d,%s\n", sec, row, s, s, r, level)
			}
		}
	}
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/products/new"),
		chromedp.WaitVisible(chromedp.CSS(`#p-name`)),
		chromedp.SendKeys(chromedp.CSS(`#p-name`), "Opera Night"),
		chromedp.SetValue(chromedp.CSS(`#p-kind`), "seated"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#p-kind').dispatchEvent(new Event('change'))`),
		chromedp.SetValue(chromedp.CSS(`#p-seat-source`), "csv"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#p-seat-source').dispatchEvent(new Event('change'))`),
		chromedp.SetValue(chromedp.CSS(`#p-csv`), csv.String()),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#p-csv').dispatchEvent(new Event('input'))`),
		chromedp.WaitVisible(chromedp.CSS(`input[data-level="Premium"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[data-level="Premium"]`), "95.00"),
		chromedp.Click(chromedp.CSS(`#create-product`)),
		browsertest.WaitText(`#publication-state`, "Draft"))
	require.NoError(t, err)
	require.Contains(t, browsertest.Text(t, ctx, `main`), "Stalls (2 rows), Circle (2 rows)")
	list, err := d.env.Products.List(context.Background(), d.env.Tenant.ID, 10)
	require.NoError(t, err)
	require.Len(t, list, 1)
	p := list[0]
	require.Equal(t, 24, p.Capacity)
	require.Equal(t, "Circle · Row B · Seat 6", p.Layout.Label(24))
	require.Equal(t, int64(9500), p.Layout.Price(1, p.PriceCents), "the stalls sell at the level's price")
	// The waiting room's figures follow L and W as they are typed.
	err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#r-l`), "100"), chromedp.SetValue(chromedp.CSS(`#r-w`), "50"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#r-w').dispatchEvent(new Event('input'))`),
		browsertest.WaitText(`#littles-law`, "λ = L ÷ W = 2.00 shoppers/s"))
	require.NoError(t, err)
	browsertest.Step(t, ctx, "1-draft")

	// The event's picture is uploaded from the page, straight to the
	// stores' bucket, and saved with the product.
	picture := filepath.Join(t.TempDir(), "poster.png")
	var png bytes.Buffer
	require.NoError(t, pngenc.Encode(&png, image.NewRGBA(image.Rect(0, 0, 64, 40))))
	require.NoError(t, os.WriteFile(picture, png.Bytes(), 0o600))
	err = chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS(`#e-image-file`), []string{picture}),
		browsertest.WaitText(`#e-image-status`, "poster.png uploaded"), chromedp.Click(chromedp.CSS(`#save-product`)),
		browsertest.WaitJS(`/^images\/[0-9a-f-]{36}\.png$/.test(document.querySelector('#e-image')?.value || '') && !document.querySelector('#e-image-status')?.textContent`))
	require.NoError(t, err)
	saved, err := d.env.Products.Get(context.Background(), p.TenantID, p.ID)
	require.NoError(t, err)
	require.Regexp(t, `^images/[0-9a-f-]{36}\.png$`, saved.ImageURL, "the uploaded picture is the product's")

	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#publish`)), browsertest.WaitText(`#publication-state`, "Published"),
		d.open("#/store"), chromedp.WaitVisible(chromedp.CSS(`#publish-store`)), chromedp.Click(chromedp.CSS(`#publish-store`)),
		browsertest.WaitText(`#store-status`, "Publishing"))
	require.NoError(t, err)
	browsertest.Step(t, ctx, "2-store-settings")
	// The pickers start from the colours the store uses; one white text
	// cannot be read on is pointed out.
	require.Equal(t, "#c2185b", browsertest.Value(t, ctx, `#s-accent`))
	err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#s-accent`), "#ffdd00"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#s-accent').dispatchEvent(new Event('input'))`),
		browsertest.WaitText(`#contrast-note`, "White on the accent colour: 1.3:1"))
	require.NoError(t, err)
	// The publish job builds and uploads the store; the store lists the
	// product from the API.
	storeURL := d.stores + "/s/" + d.env.Tenant.Slug + "/"
	require.Contains(t, browsertest.Text(t, ctx, `#store-status`), storeURL, "the console links the store's own origin")
	require.Eventually(t, func() bool {
		resp, err := http.Get(storeURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the store is published")
	err = chromedp.Do(ctx, chromedp.Navigate(storeURL), browsertest.WaitText(`body`, "Opera Night"))
	require.NoError(t, err, "the product is in the store")
	browsertest.Step(t, ctx, "3-in-the-store")
}

// An operator's session cannot reach admin pages, nor another tenant's
// sales, through the pages or the API.
func TestConsoleOperatorKeptOut(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	other := d.env.NewTenant(t)
	theirs := d.env.Product(t, testfix.ProductOpts{Tenant: other.ID})
	_, opKey, err := d.env.Tenants.CreateKey(context.Background(), d.env.Tenant.ID, tenant.RoleOperator, "")
	require.NoError(t, err)
	ctx := browsertest.Browser(t)
	err = chromedp.Do(ctx, d.signIn(opKey))
	require.NoError(t, err)
	for _, hash := range []string{"#/keys", "#/ops", "#/products/new", "#/store", "#/audit"} {
		err = chromedp.Do(ctx, d.open(hash), browsertest.WaitText(`#not-allowed`, "Not allowed"))
		require.NoError(t, err, hash)
	}
	err = chromedp.Do(ctx, d.open("#/sales/"+theirs.ID.String()), browsertest.WaitText(`main h1`, "Not found"), browsertest.WaitText(`main p[role="alert"]`, "another tenant's"))
	require.NoError(t, err, "another tenant's sale")
	browsertest.Step(t, ctx, "not-allowed")
	// The API refuses the same things to the session, whatever the page does.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch('/v1/tenants/%s/api-keys').then(r => r.status)`, d.env.Tenant.ID), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, status)
	csrf, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch('/v1/console/session').then(r => r.json()).then(s => s.csrfToken)`,
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	status, err = chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`fetch('/v1/ops/checkout/pause', {method: 'POST', headers: {'X-CSRF-Token': %q}}).then(r => r.status)`, csrf),
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, status)
}

// Changes need the session's CSRF token, a page on another site cannot
// use the session, and an idle session sends the user back to sign in.
func TestConsoleCSRFAndExpiry(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 10})
	ctx := browsertest.Browser(t)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey))
	require.NoError(t, err)

	// The session without its token: refused.
	code, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch('/v1/products/%s', {method: 'PATCH',
		headers: {'Content-Type': 'application/json'}, body: '{"name":"Hijacked"}'}).then(r => r.json()).then(p => p.code)`, p.ID),
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, "CSRF_TOKEN_INVALID", code)

	// A page on another site (localhost is not 127.0.0.1) tries to make the
	// signed-in browser create an API key: the SameSite=Strict cookie is not
	// sent, and no page elsewhere can read or send the CSRF token.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><body><script>
			fetch(%q, {method: 'POST', credentials: 'include', mode: 'no-cors', headers: {'Content-Type': 'text/plain'},
			  body: '{"role":"tenant-admin","label":"evil"}'}).finally(() => document.body.dataset.done = '1');
		</script></body>`, d.base+"/v1/tenants/"+d.env.Tenant.ID.String()+"/api-keys")
	}))
	t.Cleanup(evil.Close)
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	err = chromedp.Do(ctx, chromedp.Navigate(evilURL), browsertest.WaitJS(`document.body.dataset.done === '1'`))
	require.NoError(t, err)
	keys, err := d.env.Tenants.ListKeys(context.Background(), d.env.Tenant.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1, "no key was made")
	got, err := d.env.Products.GetAny(context.Background(), p.ID)
	require.NoError(t, err)
	require.Equal(t, p.Name, got.Name, "nothing changed")

	// Idle past the limit: the next click lands on the sign-in page.
	err = chromedp.Do(ctx, d.open("#/products"), browsertest.WaitText(`main`, p.Name))
	require.NoError(t, err)
	d.env.Exec(t, `UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'`)
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#nav a[href="#/sales"]`)), browsertest.WaitText(`#signin-message`, "session ended"))
	require.NoError(t, err)
	browsertest.Step(t, ctx, "expired")
}

// A tenant admin rehearses an on-sale, reads the projection, and takes the
// rehearsed L and W for the sale.
func TestConsoleRehearsal(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{Work: true})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 40, PerBuyerLimit: 2, OnSaleAt: time.Now().Add(time.Hour),
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 500, ShoppingSeconds: 60}})
	ctx := browsertest.Browser(t)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/products/"+p.ID.String()),
		chromedp.Click(chromedp.CSS(`#rehearse-link`)), chromedp.WaitVisible(chromedp.CSS(`#h-buyers`)),
		chromedp.SetValue(chromedp.CSS(`#h-buyers`), "60"), chromedp.SetValue(chromedp.CSS(`#h-l`), "30"),
		chromedp.SetValue(chromedp.CSS(`#h-w`), "2"), chromedp.SetValue(chromedp.CSS(`#h-arrival`), "3"),
		chromedp.Click(chromedp.CSS(`#start-rehearsal`)),
		browsertest.WaitJS(`document.querySelector('tr.rehearsal[data-status="DONE"]') !== null`))
	require.NoError(t, err)
	sellOut := browsertest.Text(t, ctx, `tr.rehearsal td.sellout`)
	require.NotEqual(t, "not sold out", sellOut)
	browsertest.Step(t, ctx, "rehearsed")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.use-room`)), browsertest.WaitText(`#publication`, "Publication"))
	require.NoError(t, err)
	got, err := d.env.Products.Get(context.Background(), d.env.Tenant.ID, p.ID)
	require.NoError(t, err)
	require.Equal(t, 30, got.WaitingRoom.ActiveShoppers)
	require.Equal(t, 2, got.WaitingRoom.ShoppingSeconds)
}

// A page the user has left does not render over the one they opened: the
// sales list answering late once replaced a product form opened meanwhile.
func TestConsoleLatePageDoesNotReplaceTheNextOne(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	ctx := browsertest.Browser(t)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey),
		// The sales list answers half a second late from here on.
		chromedp.Evaluate[chromedp.Void](`(() => {
			const real = window.fetch;
			window.fetch = async (url, opts) => {
				const r = await real(url, opts);
				if (String(url).includes('/v1/ops/sales')) await new Promise((ok) => setTimeout(ok, 500));
				return r;
			};
		})()`),
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/products/new'`),
		chromedp.WaitVisible(chromedp.CSS(`#p-name`)),
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/sales'`),
		chromedp.Evaluate[chromedp.Void](`location.hash = '#/products/new'`),
		chromedp.WaitVisible(chromedp.CSS(`#p-name`)),
		chromedp.Sleep(time.Second))
	require.NoError(t, err)
	require.Equal(t, "New product", browsertest.Text(t, ctx, `main h1`), "the late sales list was not drawn over the form")
}

// No page shows "null" (or another unformatted value) where something is
// left out: the platform admin's sales list, the store preview without a
// logo.
func TestConsoleShowsNoNull(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	d.env.Product(t, testfix.ProductOpts{})
	ctx := browsertest.Browser(t)
	browsertest.Do(t, ctx, d.signIn(adminKey), d.open("#/sales"), browsertest.WaitText(`main`, "Product"))
	browsertest.NoLeakedValues(t, ctx, "the admin's sales list")
	ctx = browsertest.Browser(t)
	browsertest.Do(t, ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/store"),
		chromedp.WaitVisible(chromedp.CSS(`#store-preview h2`)))
	browsertest.NoLeakedValues(t, ctx, "the store preview")
}

// A link to an order that is not the tenant's says it is not found.
func TestConsoleUnknownOrder(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	ctx := browsertest.Browser(t)
	browsertest.Do(t, ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/orders/"+uuid.NewString()), browsertest.WaitText(`main h1`, "Not found"))
	require.Contains(t, browsertest.Text(t, ctx, `main p[role="alert"]`), "Nothing here has this id")
}

// A tenant admin finds an order, refunds one of its two tickets with a
// reason, and watches the refund go through: the ticket is void, the order
// confirmed again with the amount refunded, the refund in its timeline.
func TestConsoleTenantAdminRefunds(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{Work: true})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 10})
	o := d.env.Confirmed(t, p, "rita", 2, pspsim.MethodOK)
	ctx := browsertest.Browser(t)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/orders/"+o.ID.String()),
		browsertest.WaitText(`.order-status`, "Confirmed"), chromedp.WaitVisible(chromedp.CSS(`#refund-form`)))
	require.NoError(t, err, "the order page offers a refund")
	browsertest.Step(t, ctx, "1-order")

	first := `tr[data-ticket="` + o.Tickets[0].ID.String() + `"]`
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#refund-selected`)), browsertest.WaitText(`#refund-form .error`, "Tick the tickets"),
		chromedp.Click(chromedp.CSS(first+` .refund-pick`)),
		chromedp.SendKeys(chromedp.CSS(`#refund-reason`), "cannot attend"),
		chromedp.Click(chromedp.CSS(`#refund-selected`)), browsertest.WaitText(`#refund-selected`, "Refund the ticked tickets?"),
		chromedp.Click(chromedp.CSS(`#refund-selected`)),
		browsertest.WaitText(`tr.refund`, "Refunded"), browsertest.WaitText(`.order-status`, "Confirmed"),
		browsertest.WaitText(first+` .ticket-status`, "Void"), browsertest.WaitText(`.refunded`, "50.00 EUR"))
	require.NoError(t, err, "refunded, and the page follows")
	require.Contains(t, browsertest.Text(t, ctx, `main`), "cannot attend")
	browsertest.Step(t, ctx, "2-refunded")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#resend-tickets`)), browsertest.WaitText(`#resend-tickets`, "Sent again to rita@example.test"))
	require.NoError(t, err, "the tickets are resent")
	err = chromedp.Do(ctx, d.open("#/report/"+p.ID.String()), browsertest.WaitText(`#report-event`, "Date to be announced (UTC)"),
		browsertest.WaitText(`main .tiles`, "50.00 EUR (1)"), chromedp.WaitVisible(chromedp.CSS(`#attendees-csv`)))
	require.NoError(t, err, "the sales report names the date and counts the refund")
	browsertest.Step(t, ctx, "3-report")

	got, err := d.env.Checkout.Get(context.Background(), p.TenantID, o.ID, "")
	require.NoError(t, err)
	require.Equal(t, int64(5000), got.RefundedCents)
	entries, err := audit.New(d.env.Schema.Pool).List(context.Background(), d.env.Tenant.ID, 0, 100)
	require.NoError(t, err)
	actions := []string{}
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	require.Contains(t, actions, "refund-order", "audited")
	d.env.RequireInvariants(t)
}

// At the gate's help desk an operator finds a buyer's order by their e-mail
// or the reference their tickets' e-mail printed, opens it and checks a ticket in; the check-in is the order's from then on.
func TestConsoleOperatorFindsOrderAndChecksIn(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{Work: true})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 10})
	// A date of an event, as the gate meets it.
	d.env.Exec(t, `UPDATE products SET starts_at = '2027-06-05T21:00:00Z' WHERE id = $1`, p.ID)
	rita := d.env.Confirmed(t, p, "rita", 2, pspsim.MethodOK)
	d.env.Confirmed(t, p, "sam", 1, pspsim.MethodOK)
	_, opKey, err := d.env.Tenants.CreateKey(context.Background(), d.env.Tenant.ID, tenant.RoleOperator, "gate")
	require.NoError(t, err)
	ctx := browsertest.Browser(t)

	oneOrder := browsertest.WaitJS(`document.querySelectorAll('#order-results tbody tr').length === 1`)
	err = chromedp.Do(ctx, d.signIn(opKey), d.open("#/orders"), browsertest.WaitText(`#order-results`, "rita@example.test"),
		chromedp.SetValue(chromedp.CSS(`#order-q`), "Sam@Example.test"), chromedp.Click(chromedp.CSS(`main form button`)), oneOrder)
	require.NoError(t, err, "the search finds an order by e-mail")
	require.NotContains(t, browsertest.Text(t, ctx, `#order-results`), "rita@example.test")
	err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#order-q`), strings.ToUpper(rita.Ref)),
		chromedp.Click(chromedp.CSS(`main form button`)), browsertest.WaitText(`#order-results`, "rita@example.test"), oneOrder)
	require.NoError(t, err, "the search finds an order by the reference its e-mails print")
	results := browsertest.Text(t, ctx, `#order-results`)
	require.Contains(t, results, rita.Ref)
	require.Contains(t, results, "rita@example.test")
	require.NotContains(t, results, "sam@example.test")
	require.Contains(t, results, "Confirmed")
	forWhat := browsertest.Text(t, ctx, `#order-results td.for`)
	require.Contains(t, forWhat, p.Name+" · ", "the order names its product and date")
	require.Contains(t, forWhat, "2027")
	browsertest.Step(t, ctx, "1-found")

	first := `tr[data-ticket="` + rita.Tickets[0].ID.String() + `"]`
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#order-results a`)), browsertest.WaitText(`.order-status`, "Confirmed"),
		chromedp.WaitVisible(chromedp.CSS(first+` .check-in`)))
	require.NoError(t, err, "the order opens from the results")
	require.Equal(t, forWhat, browsertest.Text(t, ctx, `#order-for`))
	err = chromedp.Do(ctx, browsertest.WaitJS(`!document.querySelector('#refund-form')`))
	require.NoError(t, err, "refunds are the tenant admin's")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(first+` .check-in`)), browsertest.WaitText(first+` .check-in`, "Check in "+rita.Tickets[0].Seat+"?"))
	require.NoError(t, err, "a check-in is confirmed first: it cannot be undone")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(first+` .check-in`)),
		browsertest.WaitJS(`!document.querySelector('`+first+` .check-in')`), browsertest.WaitText(first, " by "))
	require.NoError(t, err, "the ticket is checked in, and the page says by whom")
	browsertest.Step(t, ctx, "2-checked-in")

	err = chromedp.Do(ctx, d.open("#/orders"), browsertest.WaitText(`#order-results`, "rita@example.test"),
		oneOrder, chromedp.Click(chromedp.CSS(`#order-results a`)), browsertest.WaitText(`.order-status`, "Confirmed"), browsertest.WaitText(first, " by "))
	require.NoError(t, err, "the search keeps the query, and the check-in stays")
	second := `tr[data-ticket="` + rita.Tickets[1].ID.String() + `"]`
	require.NotEmpty(t, browsertest.Text(t, ctx, second+` .check-in`), "the other ticket is still to check in")
	d.env.RequireInvariants(t)
}

// A tenant admin gives a product its date and its event a venue in the
// console, the API then carrying both; then adds a second date of the
// event, a draft copy of the first a day later.
func TestConsoleTenantAdminSetsDatesAndVenue(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	stalls := &product.Layout{Sections: []product.Section{{Name: "Stalls", Rows: []product.Row{{Name: "A", Seats: 5}, {Name: "B", Seats: 5}}}}}
	p := d.env.Product(t, testfix.ProductOpts{Layout: stalls})
	ctx := browsertest.Browser(t)
	// A saved form re-renders the page: the mark on the old one is gone.
	mark := chromedp.Evaluate[chromedp.Void](`document.querySelector('#event-form').dataset.old = '1'`)
	rendered := browsertest.WaitJS(`!!document.querySelector('#event-form') && !document.querySelector('#event-form').dataset.old`)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/products/"+p.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(`#event-form`)),
		chromedp.SetValue(chromedp.CSS(`#e-starts`), "2027-06-05T21:00"),
		chromedp.SetValue(chromedp.CSS(`#e-doors`), "2027-06-05T20:00"),
		mark, chromedp.Click(chromedp.CSS(`#save-product`)), rendered,
		chromedp.SendKeys(chromedp.CSS(`#v-name`), "Coliseu"),
		chromedp.SendKeys(chromedp.CSS(`#v-address`), "Lisboa"),
		chromedp.SetValue(chromedp.CSS(`#v-zone`), "Mars/Olympus"),
		chromedp.Click(chromedp.CSS(`#save-event`)), browsertest.WaitText(`#event-form .error`, "time zone"),
		chromedp.SetValue(chromedp.CSS(`#v-zone`), "Europe/Lisbon"),
		mark, chromedp.Click(chromedp.CSS(`#save-event`)), rendered)
	require.NoError(t, err)
	require.Equal(t, "2027-06-05T21:00", browsertest.Value(t, ctx, `#e-starts`), "the page shows the saved date")
	browsertest.Step(t, ctx, "1-date-and-venue")
	got, err := d.env.Products.Get(context.Background(), p.TenantID, p.ID)
	require.NoError(t, err)
	require.NotNil(t, got.StartsAt)
	require.NotNil(t, got.DoorsAt)
	require.Equal(t, time.Hour, got.StartsAt.Sub(*got.DoorsAt))
	require.Equal(t, "Coliseu", got.Event.Venue.Name)
	require.Equal(t, "Europe/Lisbon", got.Event.TimeZone)

	err = chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#d-starts`), "2027-06-06T21:00"),
		chromedp.Click(chromedp.CSS(`#add-date`)),
		browsertest.WaitJS(`location.hash !== '#/products/`+p.ID.String()+`' && document.querySelectorAll('#event-dates tbody tr').length === 2`))
	require.NoError(t, err)
	browsertest.Step(t, ctx, "2-second-date")
	dates, err := d.env.Products.DatesOf(context.Background(), p.TenantID, p.EventID)
	require.NoError(t, err)
	require.Len(t, dates, 2)
	second := dates[1]
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	require.NoError(t, err)
	require.Equal(t, "#/products/"+second.ID.String(), hash)
	require.Equal(t, product.Draft, second.Publication, "published when it is ready")
	require.Equal(t, 24*time.Hour, second.StartsAt.Sub(*got.StartsAt))
	require.Equal(t, time.Hour, second.StartsAt.Sub(*second.DoorsAt), "doors as long before as the first date's")
	require.Equal(t, got.PriceCents, second.PriceCents)
	require.Equal(t, got.Capacity, second.Capacity)
	require.Equal(t, got.Layout.Sections[0].Name, second.Layout.Sections[0].Name, "the same seat map")
	require.Contains(t, browsertest.Text(t, ctx, `#event-dates`), "(this one)")

	// The sales list names both dates alike: their starts tell them apart,
	// in the browser's zone as every time of the console.
	err = chromedp.Do(ctx, d.open("#/sales"), chromedp.WaitVisible(chromedp.CSS(`tr[data-id="`+second.ID.String()+`"]`)))
	require.NoError(t, err)
	date := func(id uuid.UUID) string {
		return browsertest.Text(t, ctx, `tr[data-id="`+id.String()+`"] td.date`)
	}
	local := func(at time.Time) string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`new Date(%q).toLocaleString(undefined, {day: 'numeric', month: 'short', year: 'numeric'})`, at.Format(time.RFC3339))))
		require.NoError(t, err)
		return s
	}
	require.Contains(t, date(p.ID), local(*got.StartsAt))
	require.Contains(t, date(second.ID), local(*second.StartsAt))
	require.NotEqual(t, date(p.ID), date(second.ID))
	browsertest.Step(t, ctx, "3-sales")
}

// A tenant admin runs the sale from the console: the admission rate
// changed and paused mid-sale on the waiting-room page, a shopper found
// in the line and taken out; then the date is cancelled and the page
// follows the refunds until every order is refunded.
func TestConsoleTenantAdminControlsAndCancelsTheSale(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{Work: true})
	ctx0 := context.Background()
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 20, WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 10,
		ShoppingSeconds: 60}, OnSaleAt: time.Now().Add(time.Hour)})
	var entries []waitingroom.Entry
	for i := range 4 {
		e, _, err := d.env.Rooms.Join(ctx0, p.TenantID, p.ID, fmt.Sprintf("fan-%d", i))
		require.NoError(t, err)
		entries = append(entries, e)
	}
	d.env.Open(t, p)
	ctx := browsertest.Browser(t)
	err := chromedp.Do(ctx, d.signIn(d.env.Tenant.APIKey), d.open("#/products/"+p.ID.String()),
		chromedp.Click(chromedp.CSS(`#queue-link`)), chromedp.WaitVisible(chromedp.CSS(`#admission-form`)),
		browsertest.WaitText(`#queue-live .tiles`, "Waiting"),
		chromedp.SetValue(chromedp.CSS(`#q-w`), "120"), browsertest.WaitText(`#q-pace`, "0.08 shoppers/s"),
		chromedp.Click(chromedp.CSS(`#q-apply`)),
		chromedp.Click(chromedp.CSS(`#q-pause`)), browsertest.WaitText(`#q-state`, "Admission paused"))
	require.NoError(t, err, "admission slowed and paused")
	got, err := d.env.Products.Get(ctx0, p.TenantID, p.ID)
	require.NoError(t, err)
	require.Equal(t, 120, got.WaitingRoom.ShoppingSeconds)
	require.True(t, got.WaitingRoom.Paused)
	res, err := d.env.Rooms.Tick(ctx0)
	require.NoError(t, err)
	require.Zero(t, res[0].Admitted, "the controller follows the pause")

	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#q-search`), "fan-2"),
		chromedp.Click(chromedp.CSS(`#queue-search button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-entry="`+entries[2].ID.String()+`"] .remove-entry`)))
	require.NoError(t, err, "the shopper is found")
	browsertest.Step(t, ctx, "1-queue")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`.remove-entry`)), chromedp.Click(chromedp.CSS(`.remove-entry`)),
		browsertest.WaitText(`tr[data-entry="`+entries[2].ID.String()+`"]`, "Removed"))
	require.NoError(t, err, "and taken out")

	// Sales, then the cancellation.
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#q-pause`)), browsertest.WaitText(`#q-state`, "Admitting"))
	require.NoError(t, err)
	_, err = d.env.Products.Update(ctx0, p.TenantID, p.ID, product.Update{WaitingRoom: &waitingroom.Settings{}})
	require.ErrorIs(t, err, product.ErrAlreadyOnSale, "the room is tuned, not replaced, once the sale runs")
	noRoom := d.env.Product(t, testfix.ProductOpts{Capacity: 20})
	orders := []*checkout.Order{d.env.Confirmed(t, noRoom, "ann", 2, pspsim.MethodOK), d.env.Confirmed(t, noRoom, "bea", 1, pspsim.MethodOK)}
	err = chromedp.Do(ctx, d.open("#/products/"+noRoom.ID.String()), chromedp.WaitVisible(chromedp.CSS(`#cancel-date-form`)),
		chromedp.Click(chromedp.CSS(`#cancel-date`)), browsertest.WaitText(`#cancel-date-form .error`, "Say why"),
		chromedp.SendKeys(chromedp.CSS(`#cancel-reason`), "The band split up."),
		chromedp.Click(chromedp.CSS(`#cancel-date`)), browsertest.WaitText(`#cancel-date`, "refund everyone?"),
		chromedp.Click(chromedp.CSS(`#cancel-date`)),
		browsertest.WaitText(`#publication-state`, "Cancelled"),
		browsertest.WaitJS(`document.querySelector('#cancellation-state')?.dataset.state === 'DONE'`),
		browsertest.WaitText(`#cancellation .refunded`, "2"))
	require.NoError(t, err, "cancelled, and the page follows the refunds to the end")
	require.Contains(t, browsertest.Text(t, ctx, `#cancellation`), "The band split up.")
	browsertest.Step(t, ctx, "2-cancelled")
	for _, o := range orders {
		got, err := d.env.Checkout.Get(ctx0, noRoom.TenantID, o.ID, "")
		require.NoError(t, err)
		require.Equal(t, checkout.StatusCancelled, got.Status)
	}
	entriesLog, err := audit.New(d.env.Schema.Pool).List(ctx0, d.env.Tenant.ID, 0, 100)
	require.NoError(t, err)
	actions := []string{}
	for _, e := range entriesLog {
		actions = append(actions, e.Action)
	}
	require.Subset(t, actions, []string{"tune-admission", "remove-queue-entry", "cancel-date"}, "audited")
	d.env.RequireInvariants(t)
}

// The live view shows a sold-out sale's waiting list: how many wait, the
// offers out and the numbers they hold back.
func TestConsoleShowsTheWaitingList(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	ctx := context.Background()
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 2})
	first := d.env.Reserve(t, p, "ana", reservation.Params{Quantity: 1})
	d.env.Reserve(t, p, "bea", reservation.Params{Quantity: 1})
	d.env.Drain(t, p, 10)
	for _, who := range []string{"cy", "di", "ed"} {
		_, _, err := d.env.Service.JoinWaitlist(ctx, p, who, who+"@example.test", 1)
		require.NoError(t, err)
	}
	held := d.env.Get(t, p, first.ID)
	_, err := d.env.Service.Release(ctx, p.TenantID, "ana", *held.HoldID)
	require.NoError(t, err)
	res, err := d.env.Claimer.ServeWaitlists(ctx, time.Hour, 100)
	require.NoError(t, err)
	require.Equal(t, 1, res.Offers)

	b := browsertest.Browser(t)
	err = chromedp.Do(b, d.signIn(d.env.Tenant.APIKey), d.open("#/sales/"+p.ID.String()),
		browsertest.WaitText(`[data-group="Waiting list"]`, "In line2"), browsertest.WaitText(`[data-group="Waiting list"]`, "Offers out1"),
		browsertest.WaitText(`[data-group="Stock"]`, "Offered to the waiting list1"))
	require.NoError(t, err)
	browsertest.Step(t, b, "1-waiting-list")
}

// A tenant admin makes a list of discount codes in the console: five
// generated, two typed; the list shows with its codes and no use yet.
func TestConsoleCreatesDiscountCodes(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 10})
	b := browsertest.Browser(t)
	err := chromedp.Do(b, d.signIn(d.env.Tenant.APIKey), d.open("#/codes"), chromedp.WaitVisible(chromedp.CSS(`#no-codes`)),
		chromedp.SendKeys(chromedp.CSS(`#c-name`), "Fan club"),
		chromedp.SetValue(chromedp.CSS(`#c-product`), p.ID.String()),
		chromedp.SetValue(chromedp.CSS(`#c-value`), "15"),
		chromedp.SetValue(chromedp.CSS(`#c-generate`), "5"),
		chromedp.SetValue(chromedp.CSS(`#c-codes`), "code\nCLUB-ONE\nclub-two,extra"),
		chromedp.Click(chromedp.CSS(`#create-codes`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.code-list`)))
	require.NoError(t, err)
	require.Contains(t, browsertest.Text(t, b, `tr.code-list`), "15% off")
	browsertest.Step(t, b, "1-codes")
	lists, err := codes.Lists(context.Background(), d.env.Schema.Pool, d.env.Tenant.ID)
	require.NoError(t, err)
	require.Len(t, lists, 1)
	require.Equal(t, 7, lists[0].Codes)
	require.Equal(t, p.ID, *lists[0].ProductID)
	usage, err := codes.CodesOf(context.Background(), d.env.Schema.Pool, lists[0].ID)
	require.NoError(t, err)
	require.Contains(t, usage, codes.Usage{Code: "CLUB-TWO"})
}
