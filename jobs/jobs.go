// Package jobs holds BoxOffice's periodic jobs, run by River on the elected
// leader: the hold sweeper, the invariant auditor and the claim-job repair.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"boxoffice/internal/inventory"
	"boxoffice/internal/metrics"
	"boxoffice/internal/reservation"
)

// QueueMaintenance is the River queue periodic jobs run on, apart from claims
// so that a long drain never delays expiry.
const QueueMaintenance = "maintenance"

// Config configures the periodic jobs.
type Config struct {
	// SweepInterval is how often expired holds are swept. Required.
	SweepInterval time.Duration
	// AuditInterval is how often invariants are audited. Required.
	AuditInterval time.Duration
	// RequeueAfter is how old a QUEUED request must be before its claim job
	// is enqueued again. Required.
	RequeueAfter time.Duration
}

// Deps are what the jobs work with.
type Deps struct {
	Pool    *pgxpool.Pool
	Claimer *reservation.Claimer
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	Config  Config
	// MaxSweep caps the claims freed per product per sweep. Default 10,000.
	MaxSweep int
}

// Register adds the periodic jobs' workers to workers.
func Register(workers *river.Workers, d Deps) {
	if d.MaxSweep == 0 {
		d.MaxSweep = 10_000
	}
	river.AddWorker(workers, &ExpireHoldsWorker{deps: d})
	river.AddWorker(workers, &AuditWorker{deps: d})
	river.AddWorker(workers, &RequeueWorker{deps: d})
}

// Periodic returns the schedule of the periodic jobs.
func Periodic(c Config) []*river.PeriodicJob {
	every := func(d time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(d),
			func() (river.JobArgs, *river.InsertOpts) {
				return args, &river.InsertOpts{Queue: QueueMaintenance, MaxAttempts: 1}
			}, &river.PeriodicJobOpts{RunOnStart: true})
	}
	return []*river.PeriodicJob{
		every(c.SweepInterval, ExpireHoldsArgs{}),
		every(c.AuditInterval, AuditArgs{}),
		every(c.RequeueAfter/2, RequeueArgs{}),
	}
}

// queryTimeout bounds each periodic job run.
const queryTimeout = 30 * time.Second

// ExpireHoldsArgs runs the hold sweeper.
type ExpireHoldsArgs struct{}

// Kind is River's name for the job.
func (ExpireHoldsArgs) Kind() string { return "expire_holds" }

// ExpireHoldsWorker sweeps expired holds.
type ExpireHoldsWorker struct {
	river.WorkerDefaults[ExpireHoldsArgs]
	deps Deps
}

// Work runs one sweep.
func (w *ExpireHoldsWorker) Work(ctx context.Context, _ *river.Job[ExpireHoldsArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	res, err := w.deps.Claimer.ExpireHolds(ctx, w.deps.MaxSweep)
	if err != nil {
		return err
	}
	if res.HoldsExpired > 0 || res.ClaimsFreed > 0 {
		w.deps.Logger.InfoContext(ctx, "holds expired", "products", res.Products,
			"holds", res.HoldsExpired, "numbers_freed", res.ClaimsFreed)
	}
	return nil
}

// AuditArgs runs the invariant auditor.
type AuditArgs struct{}

// Kind is River's name for the job.
func (AuditArgs) Kind() string { return "audit_invariants" }

// AuditWorker checks every product's inventory invariants and alarms (log at
// error level, and a counter that must stay 0) on any violation.
type AuditWorker struct {
	river.WorkerDefaults[AuditArgs]
	deps Deps
}

// Work runs one audit.
func (w *AuditWorker) Work(ctx context.Context, _ *river.Job[AuditArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	violations, products, err := inventory.AuditAll(ctx, w.deps.Pool)
	if err != nil {
		return err
	}
	for _, v := range violations {
		w.deps.Logger.ErrorContext(ctx, "INVARIANT VIOLATION", "product", v.ProductID, "rule", v.Rule, "detail", v.Detail)
	}
	w.deps.Metrics.InvariantViolations(len(violations))
	w.deps.Logger.DebugContext(ctx, "invariants audited", "products", products, "violations", len(violations))
	return nil
}

// RequeueArgs runs the claim-job repair.
type RequeueArgs struct{}

// Kind is River's name for the job.
func (RequeueArgs) Kind() string { return "requeue_claims" }

// RequeueWorker enqueues a claim job again for every product with requests
// QUEUED longer than the threshold, in case their job was lost (discarded
// after repeated failures, or deleted by hand). The job is unique per product,
// so this is a no-op while one waits or runs.
type RequeueWorker struct {
	river.WorkerDefaults[RequeueArgs]
	deps Deps
}

// Work runs one repair pass.
func (w *RequeueWorker) Work(ctx context.Context, _ *river.Job[RequeueArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	rows, err := w.deps.Pool.Query(ctx, `
		SELECT DISTINCT product_id FROM reservation_requests
		WHERE status = 'QUEUED' AND created_at < now() - make_interval(secs => $1)`,
		w.deps.Config.RequeueAfter.Seconds())
	if err != nil {
		return fmt.Errorf("find stale queued requests: %w", err)
	}
	products, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(products) == 0 {
		return err
	}
	params := make([]river.InsertManyParams, len(products))
	for i, p := range products {
		params[i] = river.InsertManyParams{Args: reservation.ClaimArgs{ProductID: p}}
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	results, err := client.InsertMany(ctx, params)
	if err != nil {
		return fmt.Errorf("requeue claim jobs: %w", err)
	}
	inserted := 0
	for _, r := range results {
		if !r.UniqueSkippedAsDuplicate {
			inserted++
		}
	}
	if inserted > 0 {
		w.deps.Metrics.Requeued(inserted)
		w.deps.Logger.WarnContext(ctx, "claim jobs requeued for stale requests", "products", inserted)
	}
	return nil
}
