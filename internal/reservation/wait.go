package reservation

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/wake"
)

// decidedChannel is the PostgreSQL notification channel on which every
// claim transaction names the requests it decided, delivered at its
// commit: a status read waiting for a decision (Waiters) is woken by it
// instead of asking the database again and again.
const decidedChannel = "boxoffice_decided"

// Waiters wakes status reads waiting for their requests' decisions: the
// requests one notification names that reads wait for are read in one
// query and handed to those reads, so a waiting read costs no query of
// its own.
type Waiters struct {
	w *wake.Waiters[Owned]
}

// NewWaiters returns the process's waiters, listening on a connection of
// its own to the pool's database once Run runs.
func NewWaiters(pool *pgxpool.Pool, logger *slog.Logger) *Waiters {
	read := func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*Owned, error) {
		return readRequests(ctx, pool, ids)
	}
	return &Waiters{w: wake.New(pool, decidedChannel, read, logger)}
}

// Run listens until ctx ends, connecting again after a failure.
func (w *Waiters) Run(ctx context.Context) { w.w.Run(ctx) }

// Await is a status read that waits for the decision.
type Await struct {
	ID   uuid.UUID
	Wait time.Duration // at most this long
	// Read reads the request's status (the caller's own read, with its
	// checks of who may see it).
	Read func() (*Request, error)
	// Mine says whether the caller may see a request the listener read.
	Mine func(*Owned) bool
	// Stop, when closed, ends the wait early (a server shutting down).
	Stop <-chan struct{}
}

// Await reads the request, and while it is QUEUED waits for its decision
// until a.Wait has passed: the request comes read with the others the same
// notification decided. A young request the process knows undecided is
// not read before. applied is false when the process could not wait (its
// listener down, or wake.MaxWaiters waiting): the first read is the
// answer.
func (w *Waiters) Await(ctx context.Context, a Await) (_ *Request, applied bool, _ error) {
	get := func() (*Owned, error) {
		r, err := a.Read()
		if r == nil {
			return nil, err
		}
		return &Owned{Request: *r}, err
	}
	o, applied, err := w.w.Await(ctx, wake.Read[Owned]{ID: a.ID, Wait: a.Wait, Get: get, Mine: a.Mine, Stop: a.Stop,
		Pending: func(o *Owned) bool { return o.Status == StatusQueued }})
	if o == nil {
		return nil, applied, err
	}
	return &o.Request, applied, err
}
