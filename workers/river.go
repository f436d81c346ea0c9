package workers

import (
	"github.com/riverqueue/rivercontrib/otelriver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"boxoffice/internal/checkout"
	"boxoffice/internal/metrics"
	"boxoffice/internal/outbox"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/storefront"
	"boxoffice/internal/tracing"
	"boxoffice/internal/webhook"
	"boxoffice/jobs"
)

// RiverOptions configures the River client.
type RiverOptions struct {
	// Work starts the claim workers and periodic jobs. Without it the client
	// only inserts jobs, which is all the API needs.
	Work bool
	// Workers is how many products are drained at once.
	Workers int
	// BatchSize is the claim batch size.
	BatchSize int
	// Schema is River's schema; empty means the search_path.
	Schema string
	// Jobs configures the periodic jobs.
	Jobs jobs.Config
	// Claimer is the domain the workers call.
	Claimer *reservation.Claimer
	// Enqueuer republishes for the repair job; nil means River's own.
	Enqueuer reservation.Enqueuer
	// Checkout, when set, adds the payment workers and the reconciler.
	Checkout *checkout.Service
	// PaymentWorkers is how many provider calls run at once (default 50).
	PaymentWorkers int
	// Events, when set, receives the outbox (the SQS events queue).
	Events outbox.Publisher
	// Stores, when set, adds the store publisher (rebuilds a tenant's store
	// when its settings change).
	Stores  *storefront.Publisher
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// RiverLogger receives River's own logs. Default Logger.
	RiverLogger *slog.Logger
	// Rehearsals, when set, runs rehearsals (one at a time per process).
	Rehearsals *rehearsal.Runner
	// Tracer, when it records, traces job inserts and work (otelriver):
	// the trace context travels in the job's metadata.
	Tracer trace.TracerProvider
	// BeforeJob, when set, is called as each periodic job starts (tests).
	BeforeJob func(ctx context.Context, kind string)
	// Webhooks sends the tenants' webhook deliveries. Required with Work:
	// the outbox relay makes deliveries for it.
	Webhooks *webhook.Service
	// Stopping, closed when the process begins to stop, makes running
	// claim drains hand over (see ClaimWorker).
	Stopping <-chan struct{}
}

// retryPolicy retries a failed job after attempt² seconds, at most five
// minutes (workers with a policy of their own keep it). River's default,
// attempt⁴ seconds, waited 81 s before a fourth attempt and 256 s before a
// fifth: jobs that failed while PostgreSQL failed over (each attempt a
// refused connection) left a shopper's order unconfirmed for two minutes
// after sales had resumed.
type retryPolicy struct{}

// NextRetry is when the job's next attempt is due.
func (retryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	n := time.Duration(max(job.Attempt, 1))
	return time.Now().Add(min(n*n*time.Second, 5*time.Minute))
}

// NewInserter returns a River client that only inserts jobs: what the
// services that enqueue work are built with, before the client that runs
// the workers (which needs those services) exists.
func NewInserter(pool *pgxpool.Pool, schema string, logger *slog.Logger, tp trace.TracerProvider) (*river.Client[pgx.Tx], error) {
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: logger, Middleware: middleware(tp)})
	if err != nil {
		return nil, fmt.Errorf("river inserter: %w", err)
	}
	return client, nil
}

// middleware traces inserts and work with tp, when tracing is on.
func middleware(tp trace.TracerProvider) []rivertype.Middleware {
	if !tracing.Enabled(tp) {
		return nil
	}
	return []rivertype.Middleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider: tp, MeterProvider: metricnoop.NewMeterProvider(), // metrics are Prometheus's
		EnableTracePropagation: true, EnableWorkSpanJobKindSuffix: true,
	})}
}

// NewRiverClient builds the River client of this process.
func NewRiverClient(pool *pgxpool.Pool, o RiverOptions) (*river.Client[pgx.Tx], error) {
	cfg := &river.Config{
		ID:     clientID(),
		Logger: o.RiverLogger, Schema: o.Schema,
		// Above the claim worker's timeout: a claim job still running after
		// this is stuck, and the rescuer makes it retryable.
		RescueStuckJobsAfter: 5 * time.Minute,
		RetryPolicy:          retryPolicy{},
	}
	if cfg.Logger == nil {
		cfg.Logger = o.Logger
	}
	cfg.Middleware = middleware(o.Tracer)
	if o.Work {
		w := river.NewWorkers()
		river.AddWorker(w, &ClaimWorker{Claimer: o.Claimer, BatchSize: o.BatchSize, Logger: o.Logger, Stopping: o.Stopping, Pool: pool})
		jobs.Register(w, jobs.Deps{Pool: pool, Claimer: o.Claimer, Enqueuer: o.Enqueuer, Checkout: o.Checkout, Events: o.Events, Webhooks: o.Webhooks,
			Metrics: o.Metrics, Logger: o.Logger, Config: o.Jobs, BeforeRun: o.BeforeJob})
		cfg.Workers = w
		cfg.Queues = map[string]river.QueueConfig{
			// A burst's first claim should start within milliseconds of its
			// first request, and a sale a busy drain hands its worker to
			// within milliseconds of the hand-over: fetch on notification or
			// a freed worker at most every 2 ms (with 10 ms, the fairness
			// scenario's hand-overs waited 1–9 ms for the fetch; 1–5 ms
			// with 2), and poll every 200 ms should a notification be missed.
			reservation.QueueClaims: {MaxWorkers: o.Workers, FetchCooldown: 2 * time.Millisecond,
				FetchPollInterval: 200 * time.Millisecond},
			jobs.QueueMaintenance: {MaxWorkers: 2},
			jobs.QueueTicks:       {MaxWorkers: 2},
		}
		cfg.PeriodicJobs = jobs.Periodic(o.Jobs, o.Checkout != nil, o.Webhooks != nil)
		river.AddWorker(w, &webhook.DeliverWorker{Service: o.Webhooks})
		// Endpoints mostly wait on the network: many at once, as payments.
		cfg.Queues[webhook.QueueWebhooks] = river.QueueConfig{MaxWorkers: 20}
		if o.Rehearsals != nil {
			river.AddWorker(w, &rehearsal.Worker{Runner: o.Rehearsals})
			cfg.Queues[rehearsal.QueueRehearsals] = river.QueueConfig{MaxWorkers: 1}
		}
		if o.Stores != nil {
			river.AddWorker(w, &storefront.PublishWorker{Publisher: o.Stores})
			cfg.Queues[storefront.QueueStores] = river.QueueConfig{MaxWorkers: 1}
		}
		if o.Checkout != nil {
			addPaymentWorkers(w, o.Checkout)
			// Provider calls mostly wait: by Little's law the calls in flight
			// are throughput × latency (50 at 25 orders/s and 2 s each).
			cfg.Queues[checkout.QueuePayments] = river.QueueConfig{MaxWorkers: cmp.Or(o.PaymentWorkers, 50)}
		}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}

// clientID names this River client uniquely across the fleet and restarts:
// the liveness lock (see Liveness) is keyed on it.
func clientID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s_%d_%s", cmp.Or(host, "host"), os.Getpid(), rand.Text()[:8])
}
