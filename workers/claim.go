// Package workers holds the queue consumers. They are thin: decode the
// message, call internal/reservation, complete.
package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
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
}

// Timeout is unlimited: during an on-sale one drain can run for as long as
// requests keep coming, and cutting it short would only re-enqueue it.
func (w *ClaimWorker) Timeout(*river.Job[reservation.ClaimArgs]) time.Duration { return -1 }

// Work drains the product.
func (w *ClaimWorker) Work(ctx context.Context, job *river.Job[reservation.ClaimArgs]) error {
	res, err := w.Claimer.Drain(ctx, job.Args.ProductID, w.BatchSize, func(ctx context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil {
		return err
	}
	w.Logger.DebugContext(ctx, "product drained", "product", job.Args.ProductID,
		"batches", res.Batches, "requests", res.Requests, "numbers", res.Numbers)
	return nil
}
