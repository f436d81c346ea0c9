// Package workers holds every queue consumer and builds the River client:
// River's claim, payment and ticket workers with the periodic jobs of
// package jobs; the SQS request consumer and the SQS events consumer; and
// the liveness lock that gives a dead process's jobs back. The consumers
// are thin: decode the message, call the owning package, complete.
package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"boxoffice/internal/reservation"
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
	// Pool reads River's table: whether other claim jobs wait (yield).
	Pool *pgxpool.Pool
}

// drainSlice is how long a drain runs before it gives its worker to other
// products' waiting jobs, if there are any.
const drainSlice = 250 * time.Millisecond

// othersWaiting says whether other claim jobs wait for a worker.
func (w *ClaimWorker) othersWaiting(ctx context.Context) bool {
	var waiting bool
	err := w.Pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM river_job
		               WHERE queue = $1 AND state = 'available' AND scheduled_at <= now())`,
		reservation.QueueClaims).Scan(&waiting)
	return err == nil && waiting
}

// drainLinger is how long a drain watches an emptied queue before its job
// ends (see reservation.DrainOptions.Linger).
const drainLinger = 250 * time.Millisecond

// drainBudget is how long one claim job drains before handing on to a fresh
// job. Bounded so River's job timeout and stuck-job rescue stay meaningful.
const drainBudget = 30 * time.Second

// Timeout leaves the drain its budget plus time for a last slow batch.
func (w *ClaimWorker) Timeout(*river.Job[reservation.ClaimArgs]) time.Duration {
	return drainBudget + 2*time.Minute
}

// Work drains the product.
func (w *ClaimWorker) Work(ctx context.Context, job *river.Job[reservation.ClaimArgs]) error {
	res, err := w.Claimer.Drain(ctx, job.Args.ProductID, reservation.DrainOptions{
		BatchSize: w.BatchSize,
		Budget:    drainBudget,
		Linger:    drainLinger,
		Stop:      w.Stopping,
		// Shared fairly: when products wait for a worker, a drain that has
		// had its slice hands over and queues behind them.
		Yield:      w.othersWaiting,
		YieldAfter: drainSlice,
		Complete: func(ctx context.Context, tx pgx.Tx) error {
			_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		},
		// Completed first in the same transaction, this job no longer
		// blocks the unique insert of its successor.
		Continue: func(ctx context.Context, tx pgx.Tx) error {
			_, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, job.Args, nil)
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
