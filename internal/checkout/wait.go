package checkout

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/wake"
)

// changedChannel is where every change of an order's status is announced,
// by a trigger on orders (migration 38), at the commit that made it.
const changedChannel = "boxoffice_order_changed"

// Waiters wakes reads of orders waiting for their payment's outcome: a
// waiting read costs no query until its order changes, then one.
type Waiters struct {
	w *wake.Waiters[Order]
}

// NewWaiters returns the process's waiters, listening on a connection of
// its own to the pool's database once Run runs.
func NewWaiters(pool *pgxpool.Pool, logger *slog.Logger) *Waiters {
	return &Waiters{w: wake.New[Order](pool, changedChannel, nil, logger)}
}

// Run listens until ctx ends, connecting again after a failure.
func (w *Waiters) Run(ctx context.Context) { w.w.Run(ctx) }

// Await reads order id with read (the caller's own, with its checks of who
// may see it), and while it is PENDING_PAYMENT waits for its outcome until
// wait has passed or stop is closed. applied is false when the process
// could not wait: the first read is the answer.
func (w *Waiters) Await(ctx context.Context, id uuid.UUID, wait time.Duration, read func() (*Order, error),
	stop <-chan struct{},
) (_ *Order, applied bool, _ error) {
	return w.w.Await(ctx, wake.Read[Order]{ID: id, Wait: wait, Get: read, Stop: stop,
		Pending: func(o *Order) bool { return o.Status == StatusPending }})
}
