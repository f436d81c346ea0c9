// Package app builds BoxOffice from its configuration: the one place where
// the services, the queue consumers and the API are wired together, and
// where a process runs them and stops them in order. The boxoffice binary,
// the test fixtures and the benchmarks all build through it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"golang.org/x/sync/errgroup"

	"boxoffice/api"
	"boxoffice/internal/admission"
	"boxoffice/internal/audit"
	"boxoffice/internal/checkout"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/logbuf"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/ops"
	"boxoffice/internal/outbox"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/session"
	"boxoffice/internal/sms"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/internal/ticket"
	"boxoffice/internal/tracing"
	"boxoffice/internal/waitingroom"
	"boxoffice/internal/webhook"
	"boxoffice/jobs"
	"boxoffice/migrations"
	"boxoffice/workers"
)

// Options are what a process adds to its configuration.
type Options struct {
	// Work adds the queue consumers: River's workers and periodic jobs, the
	// SQS consumers and the liveness lock (RunWorkers runs them).
	Work bool
	// Metrics receives what the services record. Default: a fresh registry.
	Metrics *metrics.Metrics
	// Provider, when set, is the payment provider instead of the one the
	// configuration names (tests and benchmarks run their own simulator).
	Provider payment.Provider
	// Schema is River's schema when the pool's search_path is a private
	// schema (tests).
	Schema string
	// RiverLogger receives River's own logs. Default: Logger.
	RiverLogger *slog.Logger
	// BeforeJob, when set, is called as each periodic job starts (tests).
	BeforeJob func(ctx context.Context, kind string)
	// StorePublisher, when set, publishes stores to its bucket instead of
	// the one the configuration names (tests).
	StorePublisher *storefront.Publisher
	// Tracer, when it records, traces requests from the API to the
	// decision and payment calls (internal/tracing). Default: off.
	Tracer trace.TracerProvider
	// Fence, when set, is the pool's fence (db.Fence): its state is
	// reported as metrics, and RunWorkers waits for one writer.
	Fence *db.Fence
	// TestModeProvider, when set, is what rehearsals pay with instead of
	// the simulator the configuration names (tests).
	TestModeProvider payment.Provider
}

// App is one process's services.
type App struct {
	Config  *config.Config
	Logger  *slog.Logger
	Pool    *pgxpool.Pool
	Metrics *metrics.Metrics
	Fence   *db.Fence // nil when the caller's pool has none (tests)
	// accessLog batches the API's access-log lines (nil when off).
	accessLog *logbuf.Writer

	Tenants      *tenant.Store
	Products     *product.Store
	Claimer      *reservation.Claimer
	Reservations *reservation.Service
	River        *river.Client[pgx.Tx]
	Reporter     *ops.Reporter
	Checkout     *checkout.Service    // nil without a payment provider
	Rooms        *waitingroom.Service // nil without an access-token secret
	Webhooks     *webhook.Service
	Liveness     *workers.Liveness // Work only

	// SQS backend only.
	Publisher *sqsqueue.Publisher
	Consumer  *workers.SQSConsumer // Work only
	SQSOps    *sqsqueue.Ops
	Events    *sqsqueue.Events // the outbox's SQS events queue, when configured

	// StorePublisher publishes tenants' stores to the bucket (nil unless
	// BOXOFFICE_STORE_AUTO_PUBLISH: then the API queues a republish on each change
	// of a store's settings, and the work processes run it).
	StorePublisher *storefront.Publisher

	// Tracer is the process's tracer provider (a no-op one when off).
	Tracer trace.TracerProvider
	// Rehearsals starts rehearsals (run by the work processes).
	Rehearsals *rehearsal.Store

	// stopping is closed when RunWorkers begins to stop (claim drains hand
	// their products over).
	stopping chan struct{}
}

// ErrNoSecretsKey stops a process that would store or read tenant secrets
// without the key that seals them.
var ErrNoSecretsKey = errors.New("BOXOFFICE_SECRETS_KEY is required: it seals tenant secrets in the database " +
	"(make one with: echo \"k1:$(openssl rand -base64 32)\"; docs/operations.md, Secrets at rest)")

// New builds the services on pool (the caller's, which it closes after the
// App is done).
func New(ctx context.Context, cfg *config.Config, pool *pgxpool.Pool, logger *slog.Logger, o Options) (*App, error) {
	if cfg.SecretsKey == nil {
		return nil, ErrNoSecretsKey
	}
	a := &App{Config: cfg, Logger: logger, Pool: pool, Metrics: o.Metrics, stopping: make(chan struct{}),
		Tenants: tenant.NewStore(pool, cfg.SecretsKey), Products: product.NewStore(pool, TenantQuota(cfg)), Tracer: o.Tracer, Fence: o.Fence}
	if a.Tracer == nil {
		a.Tracer = noop.NewTracerProvider()
	}
	if a.Metrics == nil {
		a.Metrics = metrics.New()
		// Every process reports its own pool (a registry given by a caller
		// may already have it).
		a.Metrics.Registry.MustRegister(ops.NewPoolCollector(pool))
		if o.Fence != nil {
			a.Metrics.Registry.MustRegister(ops.NewFenceCollector(o.Fence))
		}
	}
	a.Claimer = reservation.NewClaimer(pool, logger, a.Metrics, reservation.ClaimerOptions{
		Limits:       reservation.Limits{Global: cfg.ClaimRate, PerProduct: cfg.ClaimRatePerProduct},
		TenantClaims: cfg.TenantClaims, Tracer: a.Tracer})

	// Services that enqueue jobs insert them with a client of their own
	// that runs nothing: River's working client, built last, needs them.
	inserter, err := workers.NewInserter(pool, o.Schema, logger, a.Tracer)
	if err != nil {
		return nil, err
	}
	var enqueuer reservation.Enqueuer = reservation.RiverEnqueuer{Client: inserter}
	if cfg.QueueBackend == "sqs" {
		if err := a.setupSQS(ctx, o.Work); err != nil {
			return nil, err
		}
		enqueuer = a.Publisher
	}

	provider := o.Provider
	switch {
	case provider != nil:
	case cfg.PaymentProvider == "stripe":
		provider = payment.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIURL)
	case cfg.PaymentProviderURL != "":
		provider = payment.NewSim(cfg.PaymentProviderURL, cfg.PaymentTimeout)
	}
	if provider != nil && tracing.Enabled(a.Tracer) {
		provider = payment.Traced(provider, a.Tracer)
	}
	if provider != nil {
		a.Checkout = checkout.NewService(pool, inserter, provider, ticket.NewSigner([]byte(cfg.TicketSecret)),
			a.Metrics, logger, checkoutConfig(cfg, o, a.Tracer))
	}
	if cfg.AccessTokenSecret != "" {
		a.Rooms = waitingroom.NewService(pool, waitingroom.NewTokens([]byte(cfg.AccessTokenSecret)), admission.Signals{},
			waitingroom.Feedback{SlowClaimsAfter: cfg.AdmissionSlowClaims, PaymentTroubleAt: int64(cfg.AdmissionPaymentTrouble)},
			logger)
	}
	a.StorePublisher = o.StorePublisher
	if a.StorePublisher == nil && cfg.StoreAutoPublish {
		client, err := storefront.NewS3(ctx, cfg.S3Endpoint, cfg.SQSRegion, cfg.S3Credentials)
		if err != nil {
			return nil, err
		}
		a.StorePublisher = &storefront.Publisher{Tenants: a.Tenants, APIBase: cfg.StoreAPIURL, StripeKey: cfg.StoreStripeKey,
			Bucket: storefront.Bucket{Client: client, Name: cfg.StoreBucket}}
	}
	accept := reservation.ServiceOptions{Linger: cfg.AcceptLinger, Transactions: cfg.AcceptTransactions, Tracer: a.Tracer}
	if cfg.ClaimInRequest {
		accept.ClaimInRequest = a.Claimer
	}
	a.Reservations = reservation.NewService(pool, enqueuer, a.Metrics, logger, accept)
	a.Rehearsals = rehearsal.NewStore(pool, inserter)
	a.Webhooks = webhook.NewService(pool, cfg.SecretsKey, inserter, mailSender(cfg), a.Metrics, logger, webhook.Config{
		AllowPrivate: cfg.PrivateTargets, Timeout: cfg.WebhookTimeout, FirstRetry: cfg.WebhookFirstRetry,
		DisableAfter: cfg.WebhookDisableAfter})
	// Rehearsals run in the work processes with this process's services.
	runner := &rehearsal.Runner{Store: a.Rehearsals, Pool: pool, Products: a.Products, Rooms: a.Rooms,
		Reservations: a.Reservations, Checkout: a.Checkout, Logger: logger}
	var events outbox.Publisher
	if a.Events != nil {
		events = a.Events
	}
	a.River, err = workers.NewRiverClient(pool, workers.RiverOptions{
		Events: events, Schema: o.Schema,
		Work: o.Work, Workers: cfg.Workers, BatchSize: cfg.ClaimBatchSize,
		Jobs: jobs.Config{SweepInterval: cfg.SweepInterval, AuditInterval: cfg.AuditInterval,
			WaitlistInterval: cfg.WaitlistInterval, OfferTTL: cfg.OfferTTL,
			RepairInterval: min(cfg.RepublishAfter, cfg.RequeueAfter) / 2,
			RepublishAfter: cfg.RepublishAfter, RedeliveryWindow: cfg.RedeliveryWindow()},
		Claimer: a.Claimer, Enqueuer: enqueuer, Metrics: a.Metrics, Logger: logger, RiverLogger: o.RiverLogger,
		Checkout: a.Checkout, PaymentWorkers: cfg.PaymentWorkers, BeforeJob: o.BeforeJob, Stores: a.StorePublisher,
		Tracer: a.Tracer, Rehearsals: runner, Stopping: a.stopping, Webhooks: a.Webhooks,
	})
	if err != nil {
		return nil, err
	}
	a.Reporter = ops.NewReporter(pool, cfg.QueueBackend, a.SQSOps)
	if o.Work {
		a.Liveness = workers.NewLiveness(pool, a.River, a.Metrics, logger)
	}
	return a, nil
}

// TenantQuota is the quota of tenants without one of their own.
func TenantQuota(cfg *config.Config) tenant.Quota {
	return tenant.Quota{Products: cfg.TenantMaxProducts, Capacity: int64(cfg.TenantMaxCapacity)}
}

// testModeProvider is the simulator rehearsals pay with: the one named
// for them, or the deployment's own provider when that is the simulator;
// never a real provider.
func testModeProvider(cfg *config.Config, o Options) payment.Provider {
	switch {
	case o.TestModeProvider != nil:
		return o.TestModeProvider
	case cfg.RehearsalPSPURL != "":
		return payment.NewSim(cfg.RehearsalPSPURL, cfg.PaymentTimeout)
	case o.Provider == nil && cfg.PaymentProvider != "stripe" && cfg.PaymentProviderURL != "":
		return payment.NewSim(cfg.PaymentProviderURL, cfg.PaymentTimeout)
	}
	return nil
}

// checkoutConfig is checkout's configuration from the process's.
func checkoutConfig(cfg *config.Config, o Options, tp trace.TracerProvider) checkout.Config {
	c := checkout.DefaultConfig()
	c.Grace, c.PauseAfterUnknown, c.ResolveAfter = cfg.CheckoutGrace, cfg.PauseAfterUnknown, cfg.PaymentResolveAfter
	if c.TestMode = testModeProvider(cfg, o); c.TestMode != nil && tracing.Enabled(tp) {
		c.TestMode = payment.Traced(c.TestMode, tp)
	}
	c.Mailer = mailSender(cfg)
	return c
}

// mailSender is the process's SMTP sender, nil without BOXOFFICE_SMTP_ADDR.
func mailSender(cfg *config.Config) *mail.Sender {
	if cfg.SMTPAddr == "" {
		return nil
	}
	return &mail.Sender{Addr: cfg.SMTPAddr, From: cfg.MailFrom, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
		TLS: cfg.SMTPTLS}
}

// setupSQS builds the SQS publisher, operations and (for work) consumer.
func (a *App) setupSQS(ctx context.Context, work bool) error {
	cfg := a.Config
	if cfg.SQSQueueURL == "" || cfg.SQSDLQURL == "" {
		return errors.New("BOXOFFICE_QUEUE_BACKEND=sqs needs BOXOFFICE_SQS_QUEUE_URL and BOXOFFICE_SQS_DLQ_URL (boxoffice dev starts an emulator instead)")
	}
	client, err := sqsqueue.NewClient(ctx, cfg.SQSEndpoint, cfg.SQSRegion)
	if err != nil {
		return err
	}
	qcfg := sqsqueue.Config{
		QueueURL: cfg.SQSQueueURL, DLQURL: cfg.SQSDLQURL, MaxReceiveCount: cfg.SQSMaxReceiveCount,
		VisibilityTimeout: cfg.SQSVisibilityTimeout, WaitTime: cfg.SQSWaitTime, Pollers: cfg.SQSPollers,
		Workers: cfg.Workers, BatchSize: cfg.ClaimBatchSize,
	}
	a.Publisher = sqsqueue.NewPublisher(client, cfg.SQSQueueURL, a.Pool, a.Logger)
	a.Publisher.Tracer = tracing.Tracer(a.Tracer)
	a.SQSOps = sqsqueue.NewOps(client, qcfg, a.Pool)
	if work {
		a.Consumer = workers.NewSQSConsumer(client, qcfg, a.Claimer, a.Pool, a.Logger)
		a.Consumer.Metrics = a.Metrics
		a.Consumer.Tracer = tracing.Tracer(a.Tracer)
	}
	if cfg.SQSEventsQueueURL != "" {
		a.Events = sqsqueue.NewEvents(client, cfg.SQSEventsQueueURL, a.Logger)
	}
	return nil
}

// Ready reports whether the database answers and has every migration.
func (a *App) Ready(ctx context.Context) error {
	m, err := migrations.New(a.Pool, migrations.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	current, err := m.Current(ctx)
	if err != nil {
		return err
	}
	if !current {
		return errors.New("database migrations pending")
	}
	return nil
}

// API builds the HTTP API on the services.
func (a *App) API() *api.Server {
	cfg := a.Config
	mailer := mailSender(cfg)
	var texts sms.Sender
	switch cfg.SMSProvider {
	case "twilio":
		texts = &sms.Twilio{AccountSID: cfg.TwilioAccountSID, AuthToken: cfg.TwilioAuthToken, From: cfg.TwilioFrom,
			BaseURL: cfg.TwilioAPIURL}
	case "mail":
		texts = sms.ToMail{Mail: mailer}
	}
	return api.New(api.Deps{
		Audit: audit.New(a.Pool), Rehearsals: a.Rehearsals, Sessions: session.New(a.Pool, session.Limits{Idle: cfg.ConsoleIdle, Absolute: cfg.ConsoleMaxAge}),
		Login: login.NewStore(a.Pool, cfg.SecretsKey), Mailer: mailer, SMS: texts, StoresURL: cfg.StoresURL, ReservedHosts: reservedHosts(cfg),
		StoreBucket: a.storeBucket(),
		Pool:        a.Pool, Tenants: a.Tenants, Products: a.Products, Reservations: a.Reservations,
		Metrics: a.Metrics, Logger: a.Logger, AdminKey: cfg.AdminKey, DevOrigins: cfg.DevOrigins, AccessLog: a.accessLogger(), PrivateTargets: cfg.PrivateTargets, Ready: a.Ready, Tracer: a.Tracer,
		River: a.River, Reporter: a.Reporter, DLQ: a.SQSOps, Webhooks: a.Webhooks,
		Checkout: a.Checkout, WebhookSecrets: cfg.WebhookSecrets, WaitingRoom: a.Rooms,
		AvailabilityCacheBytes: cfg.AvailabilityCacheBytes, StreamsPerClient: cfg.StreamsPerClient, StreamPeriod: cfg.StreamPeriod,
		LoginChallengeBits: cfg.LoginChallengeBits, SMSDailyCap: cfg.SMSDailyCap,
		RateLimits: api.RateLimits{PerIP: cfg.RateLimitPerIP, PerBuyer: cfg.RateLimitPerBuyer, LoginPerIP: cfg.RateLimitLogin,
			TrustedProxies: cfg.TrustedProxies},
	})
}

// accessLogger is the API's access log (nil when BOXOFFICE_ACCESS_LOG is
// off): JSON lines on stderr like the process's other logs, written in
// batches (logbuf) so a burst does not pay a write call per request.
func (a *App) accessLogger() io.Writer {
	if !a.Config.AccessLog {
		return nil // not a nil *logbuf.Writer, which would not be a nil io.Writer
	}
	if a.accessLog == nil {
		a.accessLog = logbuf.New(os.Stderr, 200*time.Millisecond)
	}
	return a.accessLog
}

// ServeAPI serves srv on ln until ctx ends, then stops accepting and lets
// requests in flight finish (their accept batches commit).
func (a *App) ServeAPI(ctx context.Context, srv *api.Server, ln net.Listener) error {
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start API: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.App().Listener(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	a.Logger.Info("shutting down API")
	err := srv.App().ShutdownWithTimeout(10 * time.Second)
	if a.accessLog != nil {
		a.accessLog.Flush() // the last requests' lines
	}
	return err
}

// waitForOneWriter returns once the fence sees at most one writer.
func (a *App) waitForOneWriter(ctx context.Context) error {
	if a.Fence == nil || !a.Fence.Conflict() {
		return nil
	}
	a.Logger.Error("workers wait: more than one database host accepts writes", "writers", a.Fence.Writers())
	t := time.NewTicker(a.Config.FenceProbeInterval)
	defer t.Stop()
	for a.Fence.Conflict() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	a.Logger.Info("one database writer: workers start")
	return nil
}

// A Part is one thing a process runs: Run works until ctx ends, then stops
// and returns (nil on a clean stop), or returns early with the error that
// stops the process.
type Part struct {
	Name string
	Run  func(ctx context.Context) error
}

// Run runs the parts together until ctx ends or one of them fails, which
// stops the others; it returns once every part has returned.
func Run(ctx context.Context, parts ...Part) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range parts {
		g.Go(func() error {
			if err := p.Run(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// APIParts are what an API process runs: the API (srv) on ln, and with SQS
// the publisher its accepts hand requests to.
func (a *App) APIParts(srv *api.Server, ln net.Listener) []Part {
	parts := []Part{{"api", func(ctx context.Context) error { return a.ServeAPI(ctx, srv, ln) }}}
	if a.Publisher != nil {
		parts = append(parts, Part{"sqs publisher", a.Publisher.Run})
	}
	return parts
}

// MetricsPart serves this process's /metrics on ln (nothing when nil).
func (a *App) MetricsPart(ln net.Listener) Part {
	return Part{"metrics", func(ctx context.Context) error { return a.ServeMetrics(ctx, ln) }}
}

// WorkersPart runs what a work process runs (RunWorkers).
func (a *App) WorkersPart() Part { return Part{"workers", a.RunWorkers} }

// RunWorkers runs a work process's parts (workerParts) once this process
// may: it waits while two database hosts accept writes, and takes its
// liveness lock first, since no job may run without it. It also adds the
// database gauges to the metrics. A part that fails stops the others with
// its error; the caller closes the pool after this returns.
func (a *App) RunWorkers(ctx context.Context) error {
	// Gauges read from the database: only River's leader reports them, so a
	// fleet does not report N copies (and the API none).
	collector := ops.NewCollector(a.Reporter, a.Logger)
	collector.Leader = func(ctx context.Context) bool { return workers.IsLeader(ctx, a.River) }
	if err := a.Metrics.Registry.Register(collector); err != nil {
		return fmt.Errorf("register database gauges: %w", err)
	}
	// A process that starts while two hosts accept writes waits until
	// one is fenced (its API, if any, answers 503 WRITER_CONFLICT).
	if err := a.waitForOneWriter(ctx); err != nil {
		return err
	}
	if err := a.retryWhileUnavailable(ctx, "liveness lock", func() error { return a.Liveness.Lock(ctx) }); err != nil {
		return err
	}
	return Run(ctx, a.workerParts()...)
}

// workerParts is what a work process runs: River's workers and periodic
// jobs, and, when the process has them, the SQS consumer with the
// publisher its repair job publishes with, the waiting rooms' admission,
// and the SQS events consumer.
func (a *App) workerParts() []Part {
	parts := []Part{{"river", a.runRiver}}
	if a.Consumer != nil {
		parts = append(parts, Part{"sqs publisher", a.Publisher.Run}, Part{"sqs consumer", a.Consumer.Run})
	}
	if a.Rooms != nil {
		parts = append(parts, Part{"admission", a.runAdmission})
	}
	if a.Events != nil && a.Checkout != nil {
		parts = append(parts, Part{"sqs events", func(ctx context.Context) error {
			workers.ConsumeEvents(ctx, a.Events, a.Config.SQSWaitTime, a.Checkout.HandleEvent, a.Logger)
			return nil
		}})
	}
	return parts
}

// runRiver runs River's client with the liveness loop until ctx ends, then
// stops it: drains hand their products over first, River waits for the
// batches running (within its stop timeout), and the liveness lock is
// released only then — released earlier, another process would take this
// one's running jobs while they finish.
func (a *App) runRiver(ctx context.Context) error {
	// River runs on a context of its own: cancelling the one given to Start
	// would cancel the jobs running, and a stop should let their batches
	// commit.
	if err := a.retryWhileUnavailable(ctx, "start workers", func() error { return a.River.Start(context.WithoutCancel(ctx)) }); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	livenessCtx, stopLiveness := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLiveness()
	liveness := make(chan error, 1)
	go func() { liveness <- a.Liveness.Run(livenessCtx) }()
	select {
	case err := <-liveness:
		return errors.Join(err, a.stopRiver(ctx))
	case <-ctx.Done():
	}
	a.Logger.Info("stopping workers")
	err := a.stopRiver(ctx)
	stopLiveness()
	return errors.Join(err, <-liveness)
}

// retryWhileUnavailable calls try until it succeeds or fails for another
// reason than a database it cannot reach (db.IsUnavailable; a fenced
// writer is not that), waiting 250 ms between calls and doubling up to
// 5 s, or until ctx ends (ctx.Err()). A work process's start reads the
// database after its pool is open (its liveness lock, River's queue
// settings): one whose database restarts meanwhile waits for it, as a
// running one does, instead of exiting.
func (a *App) retryWhileUnavailable(ctx context.Context, what string, try func() error) error {
	wait := 250 * time.Millisecond
	for {
		err := try()
		if err == nil || !db.IsUnavailable(err) || errors.Is(err, db.ErrFenced) {
			return err
		}
		a.Logger.Warn(what+": the database is unavailable; trying again", "error", err, "after", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// stopRiver stops River's client: drains hand over first, then River waits
// for their batches; jobs still running after the stop timeout are
// cancelled (they are retried) rather than left running in a process that
// exits.
func (a *App) stopRiver(ctx context.Context) error {
	close(a.stopping)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.River.Stop(stopCtx); err != nil {
		cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = a.River.StopAndCancel(cancelCtx)
		return fmt.Errorf("stop workers: %w", err)
	}
	return nil
}

// runAdmission steps the waiting rooms until ctx ends.
func (a *App) runAdmission(ctx context.Context) error {
	a.Rooms.RunAdmission(ctx, a.Metrics)
	return nil
}

// StartAdmission runs the waiting rooms' admission until the returned stop,
// which waits for the last step to end: for tests and benchmarks that start
// River themselves. Nothing to run without waiting rooms.
func (a *App) StartAdmission() (stop func()) {
	if a.Rooms == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.runAdmission(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// ListenMetrics binds the metrics address up front (nil when "off").
func (a *App) ListenMetrics() (net.Listener, error) {
	if a.Config.MetricsAddr == "off" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", a.Config.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s (BOXOFFICE_METRICS_ADDR): %w", a.Config.MetricsAddr, err)
	}
	return ln, nil
}

// ServeMetrics serves this process's /metrics on ln until ctx ends.
func (a *App) ServeMetrics(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler(slog.NewLogLogger(a.Logger.Handler(), slog.LevelWarn)))
	// A work process has no API: its health is answered here.
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := a.Ready(ctx); err != nil {
			a.Logger.Warn("not ready", "error", err)
			http.Error(w, "not ready: database unreachable or migrations pending", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve metrics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutCtx)
}

// reservedHosts are the hosts the API and the console answer on (its
// listen address, unless a wildcard, and the addresses stores call), which
// no tenant may claim as a store domain.
func reservedHosts(cfg *config.Config) []string {
	// A host given with its port reserves that port (dev serves the API
	// and the stores on two ports of 127.0.0.1); one without reserves the
	// host on every port.
	var out []string
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && host != "" && host != "0.0.0.0" && host != "::" {
		out = append(out, strings.ToLower(cfg.Addr))
	}
	for _, raw := range []string{cfg.StoreAPIURL, cfg.StoresURL} {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			out = append(out, strings.ToLower(u.Host))
		}
	}
	return out
}

// storeBucket is where logos are uploaded and stores published (nil
// without auto-publishing).
func (a *App) storeBucket() *storefront.Bucket {
	if a.StorePublisher == nil {
		return nil
	}
	return &a.StorePublisher.Bucket
}
