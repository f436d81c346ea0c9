// Package testfix builds test fixtures from option structs: a migrated
// schema with a tenant and products, and the services on top of it, built
// by internal/app as the binary builds them.
package testfix

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"boxoffice/internal/app"
	"boxoffice/internal/atrest"
	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/metrics"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/tracing"
	"boxoffice/internal/waitingroom"
	"boxoffice/internal/webhook"
)

// Env is one test's world: a private schema, a tenant and the services
// (built by app.New, as the binary builds them; the fields name the parts
// tests use most).
type Env struct {
	App      *app.App
	Checkout *checkout.Service
	Rooms    *waitingroom.Service
	Webhooks *webhook.Service
	Schema   *dbtest.Schema
	Tenants  *tenant.Store
	Products *product.Store
	Service  *reservation.Service
	Claimer  *reservation.Claimer
	River    *river.Client[pgx.Tx]
	Tenant   *tenant.Created
	Logger   *slog.Logger
	// Keys seal and MAC the secrets the services store (BOXOFFICE_SECRETS_KEY).
	Keys *atrest.Keyring
	// Rehearsals starts rehearsals (the work processes run them).
	Rehearsals *rehearsal.Store
}

// Options tunes New.
type Options struct {
	// Work starts River's claim workers and periodic jobs at once (the
	// client always has them; StartWorkers starts them later).
	Work bool
	// BatchSize is the claim batch size. Default 100.
	BatchSize int
	// SweepInterval for the sweeper when Work is set. Default 1h (off).
	SweepInterval time.Duration
	// MaxConns of the pool. Default 10.
	MaxConns int32
	// RequeueAfter for the repair job. Default 1h (off).
	RequeueAfter time.Duration
	// Metrics, when set, is what the services record into.
	Metrics *metrics.Metrics
	// Provider, when set, adds checkout with this payment provider and its
	// River workers.
	Provider payment.Provider
	// AuditInterval for the auditor when Work is set. Default 1h (off).
	AuditInterval time.Duration
	// BeforeJob, when set, is called as each periodic job starts.
	BeforeJob func(ctx context.Context, kind string)
	// Stores, when set, publishes stores (its Tenants is filled in).
	Stores *storefront.Publisher
	// Tracer, when set, traces the services and their queries (the pool
	// the services use then traces its queries too).
	Tracer trace.TracerProvider
	// Through, when set, is the host:port the services reach the database
	// by (a proctest.Gate the test cuts) instead of TEST_DATABASE_URL's.
	Through string
	// TestModeProvider, when set, is what rehearsals pay with.
	TestModeProvider payment.Provider
	// SMTPAddr, when set, is where checkout mails tickets (a mail.Sink's).
	SMTPAddr string
	// OfferTTL is how long waiting-list offers last. Default 15m.
	OfferTTL time.Duration
	// WebhookDisableAfter is how long a webhook endpoint may fail before
	// it is disabled. Default 24h.
	WebhookDisableAfter time.Duration
	// PublicTargetsOnly keeps webhook targets and JWKS URLs to public
	// https addresses, as in production (tests' own servers cannot be
	// reached then).
	PublicTargetsOnly bool
}

var slugs atomic.Int64

// New builds an Env with one tenant.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if o.BatchSize == 0 {
		o.BatchSize = 100
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Hour
	}
	if o.RequeueAfter == 0 {
		o.RequeueAfter = time.Hour
	}
	if o.MaxConns == 0 {
		o.MaxConns = 10
	}
	if o.AuditInterval == 0 {
		o.AuditInterval = time.Hour
	}
	schema := dbtest.NewSchema(t, o.MaxConns)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := config.Default()
	cfg.Workers, cfg.ClaimBatchSize = 4, o.BatchSize
	cfg.SweepInterval, cfg.AuditInterval = o.SweepInterval, o.AuditInterval
	if o.OfferTTL > 0 {
		cfg.OfferTTL = o.OfferTTL
	}
	cfg.RequeueAfter, cfg.RepublishAfter = o.RequeueAfter, o.RequeueAfter
	cfg.AccessTokenSecret, cfg.TicketSecret = "test access secret", "test ticket secret"
	keys, err := atrest.Parse(atrest.Generate("test"))
	require.NoError(t, err)
	cfg.SecretsKey = keys
	cfg.PaymentResolveAfter = time.Second
	cfg.SMTPAddr, cfg.MailFrom = o.SMTPAddr, "tickets@boxoffice.test"
	// Webhook receivers and JWKS servers of tests listen on loopback; a
	// failed delivery is retried within a second.
	cfg.PrivateTargets, cfg.WebhookFirstRetry = !o.PublicTargetsOnly, 100*time.Millisecond
	if o.WebhookDisableAfter > 0 {
		cfg.WebhookDisableAfter = o.WebhookDisableAfter
	}
	// Each accept in a transaction of its own: tests count what one
	// request does.
	cfg.AcceptLinger = 0
	if o.Stores != nil {
		o.Stores.Tenants = tenant.NewStore(schema.Pool, keys)
	}
	pool := schema.Pool
	if o.Tracer != nil || o.Through != "" {
		opts := db.PoolOptions{MaxConns: o.MaxConns, Schema: schema.Name}
		if o.Tracer != nil {
			opts.Tracer = tracing.NewQueries(o.Tracer)
		}
		dbURL, err := url.Parse(schema.URL)
		require.NoError(t, err)
		if o.Through != "" {
			dbURL.Host = o.Through
		}
		own, err := db.Open(context.Background(), dbURL.String(), opts)
		require.NoError(t, err)
		t.Cleanup(own.Close)
		pool = own
	}
	a, err := app.New(context.Background(), cfg, pool, logger, app.Options{
		Work: true, Metrics: o.Metrics, Provider: o.Provider, Schema: schema.Name, BeforeJob: o.BeforeJob,
		StorePublisher: o.Stores, Tracer: o.Tracer, TestModeProvider: o.TestModeProvider})
	require.NoError(t, err)
	e := &Env{
		App:        a,
		Rehearsals: a.Rehearsals,
		Schema:     schema,
		Tenants:    a.Tenants,
		Products:   a.Products,
		Claimer:    a.Claimer,
		Checkout:   a.Checkout,
		Rooms:      a.Rooms,
		Webhooks:   a.Webhooks,
		River:      a.River,
		Service:    a.Reservations,
		Logger:     logger,
		Keys:       keys,
	}
	if o.Work {
		e.StartWorkers(t)
	}
	e.Tenant = e.NewTenant(t)
	return e
}

// StartWorkers starts River's workers and periodic jobs, and the waiting
// rooms' admission, until the test ends.
func (e *Env) StartWorkers(t testing.TB) {
	t.Helper()
	require.NoError(t, e.River.Start(context.Background()))
	stopAdmission := e.App.StartAdmission()
	t.Cleanup(func() {
		stopAdmission()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.River.Stop(ctx)
	})
}

// NewTenant creates another tenant.
func (e *Env) NewTenant(t testing.TB) *tenant.Created {
	t.Helper()
	n := slugs.Add(1)
	tn, err := e.Tenants.Create(context.Background(), tenant.CreateParams{Slug: fmt.Sprintf("tenant-%d", n), Name: "Tenant"})
	require.NoError(t, err)
	return tn
}

// ProductOpts describes a product; zero values take sensible test defaults.
type ProductOpts struct {
	Tenant        uuid.UUID
	WaitingRoom   *waitingroom.Settings
	Capacity      int
	Layout        *product.Layout
	PerBuyerLimit int
	HoldSeconds   int
	OnSaleAt      time.Time
	RefundPolicy  string
}

// Product creates a numbered product (or seated when a layout is given).
func (e *Env) Product(t testing.TB, o ProductOpts) *product.Product {
	t.Helper()
	if o.Tenant == uuid.Nil {
		o.Tenant = e.Tenant.ID
	}
	kind := product.KindNumbered
	if o.Layout != nil {
		kind = product.KindSeated
		if o.Capacity == 0 {
			o.Capacity = o.Layout.Number()
		}
	}
	if o.Capacity == 0 {
		o.Capacity = 100
	}
	p, err := e.Products.Create(context.Background(), product.CreateParams{
		TenantID: o.Tenant, Slug: fmt.Sprintf("p-%d", slugs.Add(1)), Name: "Product", Kind: kind,
		Capacity: o.Capacity, Layout: o.Layout, PriceCents: 5000, Currency: "EUR",
		PerBuyerLimit: o.PerBuyerLimit, HoldSeconds: o.HoldSeconds, OnSaleAt: o.OnSaleAt, WaitingRoom: o.WaitingRoom,
		RefundPolicy: o.RefundPolicy,
	})
	require.NoError(t, err)
	return p
}

// Reserve records a request for buyer with a fresh idempotency key. t may
// be an *assert.CollectT inside a condition, or a goroutine's collector.
func (e *Env) Reserve(t require.TestingT, p *product.Product, buyer string, params reservation.Params) *reservation.Request {
	helper(t)
	acc, err := e.Service.Accept(context.Background(), reservation.AcceptParams{
		Product: p, BuyerID: buyer, IdempotencyKey: uuid.NewString(), Params: params,
	})
	require.NoError(t, err)
	return acc.Request
}

// Get reads a request back (t as in Reserve).
func (e *Env) Get(t require.TestingT, p *product.Product, id uuid.UUID) *reservation.Request {
	helper(t)
	r, err := e.Service.Get(context.Background(), p.TenantID, id, "")
	require.NoError(t, err)
	return r
}

// Drain claims every QUEUED request of p itself, then waits for any that a
// running River worker had locked meanwhile.
func (e *Env) Drain(t testing.TB, p *product.Product, batch int) {
	t.Helper()
	for {
		res, err := e.Claimer.ClaimBatch(context.Background(), p.ID, batch)
		require.NoError(t, err)
		if res.Requests == 0 {
			break
		}
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var queued int
		assert.NoError(c, e.Schema.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, p.ID).Scan(&queued))
		assert.Zero(c, queued)
	}, 10*time.Second, 10*time.Millisecond, "requests left QUEUED")
}

// Confirmed buys quantity numbers of p for buyer and pays with method (a
// simulator method): reserve, claim, order, and wait until the order is
// confirmed and captured. The payment workers must be running.
func (e *Env) Confirmed(t testing.TB, p *product.Product, buyer string, quantity int, method string) *checkout.Order {
	t.Helper()
	r := e.Reserve(t, p, buyer, reservation.Params{Quantity: quantity})
	e.Drain(t, p, 100)
	got := e.Get(t, p, r.ID)
	require.Equal(t, reservation.StatusHeld, got.Status, "reason %s", got.Reason)
	o, _, err := e.Checkout.Create(context.Background(), checkout.CreateParams{TenantID: p.TenantID, BuyerID: buyer,
		IdempotencyKey: uuid.NewString(), HoldID: *got.HoldID, PaymentMethod: method, Email: buyer + "@example.test"})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		o, err = e.Checkout.Get(context.Background(), p.TenantID, o.ID, "")
		if assert.NoError(c, err) {
			assert.Equal(c, checkout.StatusConfirmed, o.Status)
			assert.Equal(c, "CAPTURED", o.CaptureStatus)
		}
	}, 20*time.Second, 20*time.Millisecond, "order %s confirmed and captured", o.ID)
	return o
}

// CodeList makes a list of codes of the tenant with the terms.
func (e *Env) CodeList(t testing.TB, tenantID uuid.UUID, terms codes.Terms, list ...string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, pgx.BeginFunc(context.Background(), e.Schema.Pool, func(tx pgx.Tx) error {
		var err error
		id, err = codes.CreateList(context.Background(), tx, tenantID, terms, list)
		return err
	}))
	return id
}

// ExpireHold moves a hold's expiry an hour into the past, as time would
// (holds last 30 s at the least).
func (e *Env) ExpireHold(t testing.TB, holdID uuid.UUID) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), e.Schema.Pool, func(tx pgx.Tx) error {
		h, err := reservation.LockHold(context.Background(), tx, holdID)
		if err != nil {
			return err
		}
		return reservation.ExtendHold(context.Background(), tx, h, -time.Hour)
	}))
}

// RequireInvariants audits every product and fails on any violation.
func (e *Env) RequireInvariants(t testing.TB) {
	t.Helper()
	v, _, err := reservation.AuditAll(context.Background(), e.Schema.Pool, checkout.AuditSales)
	require.NoError(t, err)
	require.Empty(t, v)
}

// Open puts a product that is not on sale yet on sale now (with its
// waiting room's opening).
func (e *Env) Open(t testing.TB, p *product.Product) {
	t.Helper()
	_, err := e.Products.Reschedule(context.Background(), p.TenantID, p.ID, time.Now().Add(-time.Second))
	require.NoError(t, err)
}

// Exec runs SQL in the test schema (for setting up time travel, say).
func (e *Env) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	_, err := e.Schema.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Nums is shorthand for a slice of numbers.
func Nums(n ...int32) []int32 { return n }

// VerifyNoLeaks is every package's TestMain: it runs the tests, stops the
// shared SQS emulator, and fails the package when a test left goroutines
// behind (a River client not stopped, a pool or consumer not closed).
// Process-wide goroutines of libraries are not ours to stop: fasthttp's
// Date-header refresher, Fiber's clock and kumo's other emulated services.
func VerifyNoLeaks(m *testing.M) {
	code := m.Run()
	sqsServer.mu.Lock()
	if sqsServer.srv != nil {
		sqsServer.srv.Close()
	}
	sqsServer.mu.Unlock()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
			// fasthttp's idle-worker cleaner outlives a shut-down server by up to 10 s.
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
			// Fiber's shared timestamp clock (named differently without -race).
			goleak.IgnoreAnyFunction("github.com/gofiber/fiber/v2/utils.StartTimeStampUpdater.func1.1"),
			goleak.IgnoreAnyFunction("github.com/sivchari/kumo/internal/service/dynamodb.(*MemoryStorage).ttlReaper"),
			// fasthttp compresses on a pool of workers that lives with the process.
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp/stackless.funcWorker"),
			// fasthttp's client: its idle connections' cleaner outlives them by
			// up to 10 s, its dialer's address cache lives with the process.
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sqsServer is the package's one kumo emulator: kumo keeps its queues in
// process-wide state and starting servers concurrently races, so tests share
// one server and isolate themselves by queue name.
var sqsServer struct {
	mu  sync.Mutex
	srv *kumo.Server
}

// SQS returns an SQS client of the shared in-process emulator and a fresh
// main queue with its dead-letter queue (redrive after maxReceiveCount).
func SQS(t testing.TB, maxReceiveCount int, visibility time.Duration) (client *sqs.Client, mainURL, dlqURL string) {
	t.Helper()
	sqsServer.mu.Lock()
	if sqsServer.srv == nil {
		sqsServer.srv = kumo.NewServer()
	}
	url := sqsServer.srv.URL
	sqsServer.mu.Unlock()
	ctx := context.Background()
	client, err := sqsqueue.NewClient(ctx, url, "us-east-1")
	require.NoError(t, err)
	mainURL, dlqURL, err = sqsqueue.EnsureQueues(ctx, client, "q-"+uuid.NewString()[:12], maxReceiveCount, visibility)
	require.NoError(t, err)
	return client, mainURL, dlqURL
}

// checkoutConfig resolves payment outcomes after a second, not a minute.

// helper marks the caller as a helper when t can say so (an *assert.CollectT
// cannot).
func helper(t require.TestingT) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
}

// InGoroutine adapts t for use off the test goroutine: a failed check is
// reported with t.Errorf (safe from any goroutine) and ends only the calling
// goroutine, where require would call t.FailNow from the wrong one.
func InGoroutine(t testing.TB) require.TestingT { return goroutineT{t} }

type goroutineT struct{ t testing.TB }

func (g goroutineT) Errorf(format string, args ...any) { g.t.Errorf(format, args...) }
func (g goroutineT) FailNow()                          { runtime.Goexit() }
