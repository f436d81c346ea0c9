// Package workers holds every queue consumer and builds the River client:
// River's claim, payment and ticket workers with the periodic jobs of
// package jobs; the SQS request consumer and the SQS events consumer; and
// the liveness lock that gives a dead process's jobs back. The consumers
// decode the message, call the owning package and complete; the claim
// worker drains by the rules of package schedule.
package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"boxoffice/internal/reservation"
	"boxoffice/internal/schedule"
)

// ClaimWorker drains one product's QUEUED requests in claim batches and
// completes its job in the drain's final transaction.
type ClaimWorker struct {
	river.WorkerDefaults[reservation.ClaimArgs]
	Claimer   *reservation.Claimer
	BatchSize int
	Logger    *slog.Logger
	// Stopping is closed when the process begins to stop: a drain then
	// hands its product to a follow-up job for another process.
	Stopping <-chan struct{}
	// Pool reads River's table: what a drain owes other products' drains
	// (Turn).
	Pool *pgxpool.Pool
}

// Turn says what the drain of job, which has run for ran, owes other
// products' drains (schedule.Scheduler.Turn).
func (w *ClaimWorker) Turn(ctx context.Context, job reservation.ClaimArgs, ran time.Duration) schedule.Turn {
	return w.scheduler().Turn(ctx, tenantOf(job), ran)
}

// NewSaleWaiting says whether a product that has not had a turn waits for
// the worker of job's drain (schedule.Scheduler.NewSaleWaiting).
func (w *ClaimWorker) NewSaleWaiting(ctx context.Context, job reservation.ClaimArgs, ran time.Duration) bool {
	return w.scheduler().NewSaleWaiting(ctx, tenantOf(job), ran)
}

func (w *ClaimWorker) scheduler() schedule.Scheduler {
	return schedule.Scheduler{Pool: w.Pool, Queue: reservation.QueueClaims, Kind: reservation.ClaimArgs{}.Kind()}
}

// tenantOf is the tenant a claim job counts for in Turn, as
// riverjobs.JobTenant reads it from River's table. A job inserted before
// jobs named their tenant counts as a tenant of its own.
func tenantOf(job reservation.ClaimArgs) string {
	if job.TenantID != uuid.Nil {
		return job.TenantID.String()
	}
	return job.ProductID.String()
}

// Timeout leaves the drain its budget plus time for a last slow batch.
func (w *ClaimWorker) Timeout(*river.Job[reservation.ClaimArgs]) time.Duration {
	return schedule.Budget + 2*time.Minute
}

// Work drains the product.
func (w *ClaimWorker) Work(ctx context.Context, job *river.Job[reservation.ClaimArgs]) error {
	res, err := w.Claimer.Drain(ctx, job.Args.ProductID, reservation.DrainOptions{
		BatchSize: w.BatchSize,
		Budget:    schedule.Budget,
		Linger:    schedule.Linger,
		Gather:    schedule.Gather(),
		Stop:      w.Stopping,
		// Shared fairly between tenants, then between products.
		Yield:      w.scheduler().Yield(tenantOf(job.Args)),
		YieldEvery: schedule.LookEvery,
		Complete: func(ctx context.Context, tx pgx.Tx) error {
			_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		},
		// Completed first in the same transaction, this job no longer
		// blocks the unique insert of its successor. The successor has had
		// a turn: it waits behind products that have not (River fetches by
		// priority first, then oldest first), so a sale that starts while
		// every worker is busy gets the first worker handed over.
		Continue: func(ctx context.Context, tx pgx.Tx) error {
			_, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, job.Args,
				&river.InsertOpts{Priority: schedule.PriorityHadTurn})
			return err
		},
	})
	if err != nil {
		return err
	}
	w.Logger.DebugContext(ctx, "product drained", "product", job.Args.ProductID,
		"batches", res.Batches, "requests", res.Requests, "numbers", res.Numbers)
	return nil
}
