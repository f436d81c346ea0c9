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

// NewWaiters returns the process's waiters for orders' changes, listening
// on a connection of their own to the pool's database once Run runs.
// Orders change far less often than requests are decided: the listener
// reads nothing, a woken read reads its own order.
func NewWaiters(pool *pgxpool.Pool, logger *slog.Logger) *wake.Waiters[Order] {
	return wake.New[Order](pool, changedChannel, nil, logger)
}

// AwaitOutcome reads order id with read (the caller's own, with its checks
// of who may see it), and while it is PENDING_PAYMENT waits on w for the
// payment's outcome until wait has passed or stop is closed: a waiting
// read costs no query until its order changes, then one. applied is false
// when the process could not wait: the first read is the answer.
func AwaitOutcome(ctx context.Context, w *wake.Waiters[Order], id uuid.UUID, wait time.Duration,
	read func() (*Order, error), stop <-chan struct{},
) (_ *Order, applied bool, _ error) {
	return w.Await(ctx, wake.Read[Order]{ID: id, Wait: wait, Get: read, Stop: stop,
		Pending: func(o *Order) bool { return o.Status == StatusPending }})
}
