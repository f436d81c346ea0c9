// Package workers holds every queue consumer and builds the River client:
// River's claim, payment and ticket workers with the periodic jobs of
// package jobs; the SQS request consumer and the SQS events consumer; and
// the liveness lock that gives a dead process's jobs back. The consumers
// decode the message, call the owning package and complete; the claim
// worker also decides, from River's jobs table, when a drain owes its
// worker to another product (Turn).
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
	"boxoffice/internal/riverjobs"
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

// drainSlice is how long a drain runs before it gives its worker to a
// waiting job of its own tenant's other products.
const drainSlice = 250 * time.Millisecond

// turnEvery is how often a drain asks whether it owes its worker to a
// waiting job or a pace (Turn).
const turnEvery = 25 * time.Millisecond

// newSaleEvery is how often, between those, a drain looks whether a
// product that has not had a turn waits for a worker (NewSaleWaiting, one
// read of River's fetch index), and asks Turn at once if so: a sale opening
// while every worker is busy then waits for a worker about this long, or a
// batch, rather than turnEvery: a small sale's first requests are its
// slowest when they wait for a hand-over, and they set its p99.
const newSaleEvery = 5 * time.Millisecond

// handOverGrace is how long a tenant still counts a drain that handed over
// to its next product: from the follow-up's insert until River has started
// the next job (80 ms and more on a busy machine) the tenant seems to run
// one drain fewer, and another tenant's drain would yield to it for nothing.
const handOverGrace = 500 * time.Millisecond

// Turn says what the drain of job, which has run for ran, owes other
// products' drains.
//
// Its worker, to a claim job waiting for one: at once to a tenant running at
// least two drains fewer than this drain's tenant (after the swap it still
// runs no more); after the drain's slice, to a tenant running one fewer
// (tenants with equal shares take turns) and to another product of its own
// tenant. So workers are shared first between tenants, then between a
// tenant's products: one tenant's big on-sale of many products keeps as many
// workers as any other busy tenant, not one per product, and a small sale
// beside it gets a worker within newSaleEvery (or the batch running) and
// keeps it instead of queueing behind the big sale's turns.
//
// A pace, when its tenant runs more drains than any other tenant running
// one (reservation.Turn.Pace): with workers to spare, that is how a big
// sale's many drains leave the database's cores to a small sale's one.
func (w *ClaimWorker) Turn(ctx context.Context, job reservation.ClaimArgs, ran time.Duration) reservation.Turn {
	handOver, pace, err := riverjobs.Turn(ctx, w.Pool, w.turnQuery(job, ran))
	if err != nil {
		return reservation.Turn{} // keep draining: the next ask may fare better
	}
	return reservation.Turn{HandOver: handOver, Pace: pace}
}

// NewSaleWaiting says whether a claim job whose product has not had a turn
// yet waits for a worker — of another tenant, or, once the drain has run
// for its slice, of its own (Turn gives the worker to either then): when
// one does, the drain asks Turn at once instead of at its next turnEvery.
// (A drain watching the emptied queue of a sale that has ended held its
// worker for up to turnEvery while its tenant's next sale waited.)
func (w *ClaimWorker) NewSaleWaiting(ctx context.Context, job reservation.ClaimArgs, ran time.Duration) bool {
	waiting, err := riverjobs.NewSaleWaiting(ctx, w.Pool, w.turnQuery(job, ran))
	return err == nil && waiting
}

func (w *ClaimWorker) turnQuery(job reservation.ClaimArgs, ran time.Duration) riverjobs.TurnQuery {
	return riverjobs.TurnQuery{Queue: reservation.QueueClaims, Kind: reservation.ClaimArgs{}.Kind(), Tenant: tenantOf(job),
		PastSlice: ran >= drainSlice, HadTurn: priorityHadTurn, HandOverGrace: handOverGrace}
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

// priorityHadTurn is the River priority of a drain's follow-up job; jobs
// inserted by accepts have River's default, 1, and are fetched first.
const priorityHadTurn = 2

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
	var turn reservation.Turn // the last Turn asked, at asked
	var asked time.Time
	res, err := w.Claimer.Drain(ctx, job.Args.ProductID, reservation.DrainOptions{
		BatchSize: w.BatchSize,
		Budget:    drainBudget,
		Linger:    drainLinger,
		Stop:      w.Stopping,
		// Shared fairly between tenants, then between products.
		Yield: func(ctx context.Context, ran time.Duration) reservation.Turn {
			if time.Since(asked) >= turnEvery || w.NewSaleWaiting(ctx, job.Args, ran) {
				turn, asked = w.Turn(ctx, job.Args, ran), time.Now()
			}
			return turn
		},
		YieldEvery: newSaleEvery,
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
				&river.InsertOpts{Priority: priorityHadTurn})
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
