package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/internal/tenant"
	"boxoffice/internal/tracing"
	"boxoffice/migrations"
)

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
	if cfg.CPUProfile != "" {
		// Profiling a process as it runs in a deployment (the burst
		// benchmark profiles serve and work this way); written on exit.
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("BOXOFFICE_CPUPROFILE: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("BOXOFFICE_CPUPROFILE: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	tuneGC(cfg.GCPercent)
	logger := newLogger(cfg.LogLevel)
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	return run(ctx, cfg, logger)
}

// migrate applies migrations. Only dev creates a missing database: for
// serve, work and migrate a missing database is more likely a typo in
// DATABASE_URL than a wish, and is reported as such.
func migrate(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	if cfg.SecretsKey == nil {
		return app.ErrNoSecretsKey
	}
	pool, fence, err := openDatabase(ctx, cfg, logger, db.PoolOptions{MaxConns: 4})
	if err != nil {
		return err
	}
	defer pool.Close()
	if fence.Conflict() {
		return fmt.Errorf("DATABASE_URL %s: %d hosts accept writes: fence the old primary before migrating",
			db.Redact(cfg.DatabaseURL), fence.Writers())
	}
	m, err := migrations.New(pool, migrations.Options{Lock: true, Logger: logger})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Up(ctx); err != nil {
		return err
	}
	// Secrets left in clear, or sealed under a key being rotated out, are
	// sealed under the first key of BOXOFFICE_SECRETS_KEY.
	n, err := tenant.NewStore(pool, cfg.SecretsKey).Reseal(ctx)
	if err != nil {
		return fmt.Errorf("seal tenant secrets: %w", err)
	}
	if n > 0 {
		logger.Info("tenant secrets sealed under the current key", "tenants", n)
	}
	return nil
}

func runMigrate(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	if err := migrate(ctx, cfg, logger); err != nil {
		return err
	}
	logger.Info("migrations applied")
	return nil
}

// openDatabase connects to DATABASE_URL behind a fence (db.Fence): before
// the first connection it asks every host the URL lists whether it accepts
// writes, so a fresh process never trusts the first writer it reaches. Its
// errors name the variable and the URL (password redacted), since that is
// what the operator must fix.
func openDatabase(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts db.PoolOptions) (*pgxpool.Pool, *db.Fence, error) {
	fence, err := db.NewFence(cfg.DatabaseURL, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("DATABASE_URL %s: %w", db.Redact(cfg.DatabaseURL), err)
	}
	fence.Probe(ctx)
	opts.Fence = fence
	pool, err := db.Open(ctx, cfg.DatabaseURL, opts)
	if err != nil {
		hint := ""
		if db.IsUndefinedDatabase(err) {
			hint = " (the database does not exist: create it, or run `boxoffice dev`, which creates its own)"
		}
		return nil, nil, fmt.Errorf("DATABASE_URL %s: %w%s", db.Redact(cfg.DatabaseURL), err, hint)
	}
	return pool, fence, nil
}

// connectionCheck is how often a server checks, during a long statement,
// that this process is still there (client_connection_check_interval): a
// killed worker's statement then ends within it instead of running on with
// its product's locks.
const connectionCheck = 2 * time.Second

// idleInTransaction is how long a session may sit in a transaction its
// process does not advance (idle_in_transaction_session_timeout): no
// transaction here waits on anything but the database, so only a frozen
// process (SIGSTOP, a paused host) reaches it, and its locks are freed.
const idleInTransaction = 5 * time.Second

// build connects and builds the process's services; work adds the queue
// consumers. The returned close ends the pool.
func build(ctx context.Context, cfg *config.Config, logger *slog.Logger, work bool) (*app.App, func(), error) {
	tp, shutdownTracing, err := tracing.Setup(ctx, cfg.Tracing, "boxoffice")
	if err != nil {
		return nil, nil, err
	}
	var queries pgx.QueryTracer
	if cfg.Tracing {
		queries = tracing.NewQueries(tp)
		logger.Info("tracing on: spans exported over OTLP/HTTP")
	}
	pool, fence, err := openDatabase(ctx, cfg, logger, db.PoolOptions{
		MaxConns: int32(cfg.DBMaxConns), MinConns: int32(cfg.DBMinConns), Tracer: queries,
		LockTimeout: cfg.DBLockTimeout, StatementTimeout: cfg.DBStatementTimeout, ConnectionCheck: connectionCheck,
		IdleInTransaction: idleInTransaction})
	if err != nil {
		return nil, nil, err
	}
	fenceCtx, stopFence := context.WithCancel(context.WithoutCancel(ctx))
	fenceDone := make(chan struct{})
	go func() {
		defer close(fenceDone)
		_ = fence.Run(fenceCtx, cfg.FenceProbeInterval)
	}()
	closeAll := func() {
		stopFence()
		<-fenceDone
		pool.Close()
		// Flush the spans still buffered (bounded: the collector may be gone).
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdownTracing(flushCtx); err != nil {
			logger.Warn("flushing traces", "error", err)
		}
	}
	// River reports its producers' job counts at info level every few
	// seconds; keep its logs to warnings unless debugging.
	riverLogger := logger
	if cfg.LogLevel != "debug" {
		riverLogger = newLogger("warn")
	}
	a, err := app.New(ctx, cfg, pool, logger, app.Options{Work: work, RiverLogger: riverLogger, Tracer: tp, Fence: fence})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	a.Metrics.SetBuild(buildVersion(version))
	return a, closeAll, nil
}

// listen binds the API address up front, so a busy port fails the start
// before anything is announced.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

func runServe(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	if cfg.AdminKey == "" {
		logger.Warn("BOXOFFICE_ADMIN_KEY is unset: platform admin endpoints refuse every request")
	}
	a, closeDB, err := build(ctx, cfg, logger, false)
	if err != nil {
		return err
	}
	defer closeDB()
	ln, err := listen(cfg.Addr)
	if err != nil {
		return err
	}
	mln, err := a.ListenMetrics()
	if err != nil {
		_ = ln.Close()
		return err
	}
	logger.Info("API listening", "addr", cfg.Addr, "metrics", cfg.MetricsAddr)
	return app.Run(ctx, append(a.APIParts(a.API(), ln), a.MetricsPart(mln))...)
}

func runWork(ctx context.Context, cfg *config.Config, logger *slog.Logger) error {
	a, closeDB, err := build(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer closeDB()
	mln, err := a.ListenMetrics()
	if err != nil {
		return err
	}
	logger.Info("workers running", "workers", cfg.Workers, "claim_batch", cfg.ClaimBatchSize,
		"metrics", cfg.MetricsAddr, "client", a.River.ID())
	return app.Run(ctx, a.WorkersPart(), a.MetricsPart(mln))
}

// tuneGC sets the collector's target (BOXOFFICE_GC_PERCENT) unless GOGC,
// the runtime's own knob, is set.
func tuneGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}
