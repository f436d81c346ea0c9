package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"golang.org/x/sync/errgroup"

	"boxoffice/api"
	"boxoffice/internal/checkout"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/ops"
	"boxoffice/internal/outbox"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/tenant"
	"boxoffice/internal/ticket"
	"boxoffice/internal/waitingroom"
	"boxoffice/jobs"
	"boxoffice/migrations"
	"boxoffice/workers"
)

// app is the wiring shared by serve, work and dev.
type app struct {
	cfg      *config.Config
	logger   *slog.Logger
	pool     *pgxpool.Pool
	metrics  *metrics.Metrics
	claimer  *reservation.Claimer
	river    *river.Client[pgx.Tx]
	service  *reservation.Service
	tenants  *tenant.Store
	products *product.Store
	reporter *ops.Reporter
	liveness *workers.Liveness // work only

	checkout *checkout.Service    // nil without a payment provider
	rooms    *waitingroom.Service // nil without an access-token secret

	// SQS backend only.
	publisher *sqsqueue.Publisher
	consumer  *sqsqueue.Consumer
	sqsOps    *sqsqueue.Ops
	events    *sqsqueue.Events // the outbox's SQS events queue, when configured
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func withConfig(ctx context.Context, run func(context.Context, *config.Config, *slog.Logger) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return run(ctx, cfg, newLogger(cfg.LogLevel))
}

// migrate applies migrations. Only dev creates a missing database: for
// serve, work and migrate a missing database is more likely a typo in
// DATABASE_URL than a wish, and is reported as such.
func migrate(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	pool, err := openDatabase(ctx, cfg, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := migrations.New(pool, migrations.Options{Lock: true, Logger: logger})
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Up(ctx)
}

func runMigrate(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	if err := migrate(ctx, cfg, logger); err != nil {
		return err
	}
	logger.Info("migrations applied")
	return nil
}

// openDatabase connects to DATABASE_URL; its errors name the variable and
// the URL (password redacted), since that is what the operator must fix.
func openDatabase(ctx context.Context, cfg *config.Config, maxConns int32) (*pgxpool.Pool, error) {
	pool, err := db.Open(ctx, cfg.DatabaseURL, db.PoolOptions{MaxConns: maxConns})
	if err != nil {
		hint := ""
		if db.IsUndefinedDatabase(err) {
			hint = " (the database does not exist: create it, or run `boxoffice dev`, which creates its own)"
		}
		return nil, fmt.Errorf("DATABASE_URL %s: %w%s", db.Redact(cfg.DatabaseURL), err, hint)
	}
	return pool, nil
}

// newApp connects and builds the services; work adds the queue consumers
// (River's workers and periodic jobs, and the SQS consumer).
func newApp(ctx context.Context, cfg *config.Config, logger *slog.Logger, work bool) (*app, error) {
	pool, err := openDatabase(ctx, cfg, int32(cfg.DBMaxConns))
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, logger: logger, pool: pool, metrics: metrics.New(),
		tenants: tenant.NewStore(pool), products: product.NewStore(pool)}
	a.products.SetDefaultQuota(tenant.Quota{Products: cfg.TenantMaxProducts, Capacity: int64(cfg.TenantMaxCapacity)})
	a.claimer = reservation.NewClaimer(pool, logger, a.metrics)
	a.claimer.SetLimits(reservation.Limits{Global: cfg.ClaimRate, PerProduct: cfg.ClaimRatePerProduct})

	var enqueuer reservation.Enqueuer // nil: River's, once its client exists
	if cfg.QueueBackend == "sqs" {
		if err := a.setupSQS(ctx, work); err != nil {
			pool.Close()
			return nil, err
		}
		enqueuer = a.publisher
	}

	var provider payment.Provider
	switch {
	case cfg.PaymentProvider == "stripe":
		provider = payment.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIURL)
	case cfg.PaymentProviderURL != "":
		provider = payment.NewSim(cfg.PaymentProviderURL, cfg.PaymentTimeout)
	}
	if provider != nil {
		a.checkout = checkout.NewService(pool, nil, provider,
			ticket.NewSigner([]byte(cfg.TicketSecret)), a.metrics, logger,
			checkoutConfig(cfg))
		if cfg.SMTPAddr != "" {
			a.checkout.SetMailer(&mail.Sender{Addr: cfg.SMTPAddr, From: cfg.MailFrom})
		}
	}

	// River reports its producers' job counts at info level every few
	// seconds; keep its logs to warnings unless debugging.
	riverLogger := logger
	if cfg.LogLevel != "debug" {
		riverLogger = newLogger("warn")
	}
	if cfg.AccessTokenSecret != "" {
		a.rooms = waitingroom.NewService(pool, waitingroom.NewTokens([]byte(cfg.AccessTokenSecret)), logger)
		a.rooms.SetFeedback(waitingroom.Feedback{SlowClaimsAfter: cfg.AdmissionSlowClaims,
			PaymentTroubleAt: int64(cfg.AdmissionPaymentTrouble)})
	}
	var events outbox.Publisher
	if a.events != nil {
		events = a.events
	}
	a.river, err = workers.NewRiverClient(pool, workers.RiverOptions{
		Events: events, Rooms: a.rooms,
		Work: work, Workers: cfg.Workers, BatchSize: cfg.ClaimBatchSize,
		Jobs: jobs.Config{SweepInterval: cfg.SweepInterval, AuditInterval: cfg.AuditInterval,
			RepairInterval: min(cfg.RepublishAfter, cfg.RequeueAfter) / 2,
			RepublishAfter: cfg.RepublishAfter, RedeliveryWindow: cfg.RedeliveryWindow()},
		Claimer: a.claimer, Enqueuer: enqueuer, Metrics: a.metrics, Logger: logger, RiverLogger: riverLogger,
		Checkout: a.checkout, PaymentWorkers: cfg.PaymentWorkers,
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	if a.checkout != nil {
		a.checkout.SetRiver(a.river)
	}
	if enqueuer == nil {
		enqueuer = reservation.RiverEnqueuer{Client: a.river}
	}
	a.service = reservation.NewService(pool, enqueuer, a.metrics, logger)
	a.service.SetBatching(cfg.AcceptLinger)
	a.reporter = ops.NewReporter(pool, cfg.QueueBackend, a.sqsOps)
	if work {
		a.liveness = workers.NewLiveness(pool, a.river, a.metrics, logger)
		// Gauges read from the database: only River's leader reports them,
		// so a fleet does not report N copies (and the API none).
		collector := ops.NewCollector(a.reporter, logger)
		collector.Leader = func(ctx context.Context) bool { return workers.IsLeader(ctx, a.river) }
		a.metrics.Registry.MustRegister(collector)
	}
	return a, nil
}

// checkoutConfig is checkout's configuration from the environment's.
func checkoutConfig(cfg *config.Config) checkout.Config {
	c := checkout.DefaultConfig()
	c.Grace, c.PauseAfterUnknown = cfg.CheckoutGrace, cfg.PauseAfterUnknown
	return c
}

// setupSQS builds the SQS publisher, operations and (for work) consumer.
func (a *app) setupSQS(ctx context.Context, work bool) error {
	cfg := a.cfg
	if cfg.SQSQueueURL == "" || cfg.SQSDLQURL == "" {
		return errors.New("QUEUE_BACKEND=sqs needs SQS_QUEUE_URL and SQS_DLQ_URL (boxoffice dev starts an emulator instead)")
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
	a.publisher = sqsqueue.NewPublisher(client, cfg.SQSQueueURL, a.pool, a.logger)
	a.sqsOps = sqsqueue.NewOps(client, qcfg, a.pool)
	if work {
		a.consumer = sqsqueue.NewConsumer(client, qcfg, a.claimer, a.pool, a.logger)
		a.consumer.Metrics = a.metrics
	}
	if cfg.SQSEventsQueueURL != "" {
		a.events = sqsqueue.NewEvents(client, cfg.SQSEventsQueueURL, a.logger)
	}
	return nil
}

func (a *app) close() { a.pool.Close() }

// ready reports whether the database answers and has every migration.
func (a *app) ready(ctx context.Context) error {
	m, err := migrations.New(a.pool, migrations.Options{})
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

func (a *app) apiServer() *api.Server {
	return api.New(api.Deps{
		Pool: a.pool, Tenants: a.tenants, Products: a.products, Reservations: a.service,
		Metrics: a.metrics, Logger: a.logger, AdminKey: a.cfg.AdminKey, Ready: a.ready,
		River: a.river, Reporter: a.reporter, DLQ: a.sqsOps,
		Checkout: a.checkout, WebhookSecrets: a.cfg.WebhookSecrets, WaitingRoom: a.rooms,
		AvailabilityCacheBytes: a.cfg.AvailabilityCacheBytes,
		RateLimits: api.RateLimits{PerIP: a.cfg.RateLimitPerIP, PerBuyer: a.cfg.RateLimitPerBuyer,
			TrustedProxies: a.cfg.TrustedProxies},
	})
}

// listen binds the API address up front, so a busy port fails the start
// before anything is announced.
func (a *app) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a.cfg.Addr, err)
	}
	return ln, nil
}

// serveHTTP serves on ln until ctx ends, then shuts down gracefully. With
// SQS it also runs the publisher the accept path hands requests to.
func (a *app) serveHTTP(ctx context.Context, srv *api.Server, ln net.Listener) error {
	if a.publisher != nil {
		a.publisher.Start(ctx)
		defer a.publisher.Wait()
	}
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start API: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.App().Listener(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", a.cfg.Addr, err)
	case <-ctx.Done():
	}
	a.logger.Info("shutting down API")
	return srv.App().ShutdownWithTimeout(10 * time.Second)
}

// runWorkers starts River's workers and periodic jobs, the liveness loop,
// and the SQS consumers with their publisher (the repair job publishes). When
// ctx ends it stops them: consumers first, then River (in-flight batches
// finish within its stop timeout); the pool is closed by the caller after
// this returns. A part that fails stops the others with its error.
func (a *app) runWorkers(ctx context.Context) error {
	// The liveness lock comes first: no job may run without it.
	if err := a.liveness.Lock(ctx); err != nil {
		return err
	}
	if err := a.river.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.liveness.Run(gctx) })
	if a.consumer != nil {
		a.publisher.Start(gctx)
		g.Go(func() error {
			defer a.publisher.Wait()
			if err := a.consumer.Run(gctx); err != nil {
				return fmt.Errorf("sqs consumer: %w", err)
			}
			return nil
		})
	}
	if a.events != nil && a.checkout != nil {
		g.Go(func() error {
			a.events.Consume(gctx, a.cfg.SQSWaitTime, a.checkout.HandleEvent)
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		a.logger.Info("stopping workers")
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 30*time.Second)
		defer cancel()
		return a.river.Stop(stopCtx)
	})
	return g.Wait()
}

// listenMetrics binds the metrics address up front (nil when "off").
func (a *app) listenMetrics() (net.Listener, error) {
	if a.cfg.MetricsAddr == "off" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s (BOXOFFICE_METRICS_ADDR): %w", a.cfg.MetricsAddr, err)
	}
	return ln, nil
}

// serveMetrics serves this process's /metrics on ln until ctx ends.
func (a *app) serveMetrics(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler(slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn)))
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

func runServe(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	if cfg.AdminKey == "" {
		logger.Warn("BOXOFFICE_ADMIN_KEY is unset: platform admin endpoints refuse every request")
	}
	a, err := newApp(ctx, cfg, logger, false)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := a.listen()
	if err != nil {
		return err
	}
	mln, err := a.listenMetrics()
	if err != nil {
		_ = ln.Close()
		return err
	}
	logger.Info("API listening", "addr", cfg.Addr, "metrics", cfg.MetricsAddr)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.serveHTTP(ctx, a.apiServer(), ln) })
	g.Go(func() error { return a.serveMetrics(ctx, mln) })
	return g.Wait()
}

func runWork(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	a, err := newApp(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer a.close()
	mln, err := a.listenMetrics()
	if err != nil {
		return err
	}
	logger.Info("workers running", "workers", cfg.Workers, "claim_batch", cfg.ClaimBatchSize,
		"metrics", cfg.MetricsAddr, "client", a.river.ID())
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.runWorkers(ctx) })
	g.Go(func() error { return a.serveMetrics(ctx, mln) })
	return g.Wait()
}
