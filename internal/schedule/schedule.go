// Package schedule shares the claim workers between sales. Each product's
// requests are drained by one claim job at a time (reservation.Drain); these
// rules decide how long a drain keeps its worker, when it gives the worker
// to another product, when it waits so that other tenants' claims get the
// database's cores, and how long it watches an emptied queue. What they read
// of River's table is in internal/riverjobs.
//
// Workers are shared first between tenants, then between a tenant's
// products: one tenant's big on-sale of many products keeps as many workers
// as any other busy tenant, not one per product, and a small sale opening
// beside it gets a worker within LookEvery (or the batch running) and keeps
// it instead of queueing behind the big sale's turns.
package schedule

import (
	"context"
	"time"

	"boxoffice/internal/db"
	"boxoffice/internal/riverjobs"
)

// The rules' timings, by what each does to a sale.
const (
	// Slice is how long a drain keeps its worker against its own tenant's
	// other products and tenants one drain short: long enough for batches
	// to fill, short enough that a tenant's products take turns within a
	// fraction of a second.
	Slice = 250 * time.Millisecond
	// AskEvery is how often a drain asks whether it owes its worker or a
	// pace (Turn): a sale's request waits for a hand-over at most this,
	// plus a batch.
	AskEvery = 25 * time.Millisecond
	// LookEvery is how often, between asks, a drain looks whether a product
	// that has not had a turn waits for a worker (one read of River's
	// fetch index), and asks at once if so: a small sale's first requests
	// are its slowest when they wait for a hand-over, and they set its p99.
	LookEvery = 5 * time.Millisecond
	// HandOverGrace is how long a tenant still counts a drain that handed
	// over to its next product: until River has started the next job (80 ms
	// and more on a busy machine) the tenant would seem to run one drain
	// fewer, and another tenant's drain would yield to it for nothing.
	HandOverGrace = 500 * time.Millisecond
	// Pace is how long a drain over its tenant's share waits after a batch
	// that emptied its queue: its next batch gathers this much of its
	// requests, which wait this much longer for a decision, and the many
	// small transactions that would have kept the database's cores from
	// another tenant's claims become one.
	Pace = 100 * time.Millisecond
	// Linger is how long a drain watches an emptied queue before its job
	// ends: in a burst the next requests come within milliseconds, and
	// ending the job would leave them to wait for a new one to be fetched.
	Linger = 250 * time.Millisecond
	// LingerPoll is how often a lingering drain looks for new requests.
	LingerPoll = 5 * time.Millisecond
	// Budget is how long one claim job drains before handing on to a fresh
	// job, so that River's job timeout and stuck-job rescue stay meaningful.
	Budget = 30 * time.Second
	// PriorityHadTurn is the River priority of a drain's follow-up job;
	// jobs inserted by accepts have River's default, 1, and are fetched
	// first, so a sale that starts while every worker is busy gets the
	// first worker handed over.
	PriorityHadTurn = 2
)

// Gathering is when a drain that emptied its queue waits before its next
// batch. Under load a drain that keeps up would claim a few dozen requests
// a transaction, each paying its transaction's statements, locks and
// commit; the wait gathers the next batch into one commit for a hundred
// or more, each request decided Wait later at most. A batch of fewer
// than From requests is a quiet sale, whose next request is claimed at
// once; one of Below or more is followed at once too, its requests having
// waited long enough.
type Gathering struct {
	Wait        time.Duration
	From, Below int
}

// After is how long to wait after a batch of n requests that emptied the
// queue.
func (g Gathering) After(n int) time.Duration {
	if n >= g.From && n < g.Below {
		return g.Wait
	}
	return 0
}

// Gather is the claim workers' gathering.
func Gather() Gathering {
	return Gathering{Wait: 25 * time.Millisecond, From: 10, Below: 200}
}

// Turn is what a drain owes other products' drains.
type Turn struct {
	// HandOver: the worker is owed to another product's job waiting for
	// one. The drain hands over as if its budget had run out, and its
	// follow-up job waits behind the others.
	HandOver bool
	// Pace: the drain's tenant runs more drains than any other tenant
	// running one. After each batch that empties its queue the drain waits
	// Pace before the next: with workers to spare nothing waits for a
	// worker, and what a tenant's many drains then take from another's few
	// is the database's cores, spent on transactions of a few requests each.
	Pace bool
}

// Scheduler applies the rules to the claim jobs of one River queue and kind.
type Scheduler struct {
	Pool        db.DBTX
	Queue, Kind string
}

func (s Scheduler) query(tenant string, ran time.Duration) riverjobs.TurnQuery {
	return riverjobs.TurnQuery{Queue: s.Queue, Kind: s.Kind, Tenant: tenant, PastSlice: ran >= Slice,
		HadTurn: PriorityHadTurn, HandOverGrace: HandOverGrace}
}

// Turn says what the drain of a tenant's product, which has run for ran,
// owes other products' drains. Its worker, to a claim job waiting for one:
// at once to a tenant running at least two drains fewer than this drain's
// tenant (after the swap it still runs no more); after the drain's Slice, to
// a tenant running one fewer (tenants with equal shares take turns) and to
// another product of its own tenant. A pace, when its tenant runs more
// drains than any other tenant running one. A failed read owes nothing: the
// next ask may fare better.
func (s Scheduler) Turn(ctx context.Context, tenant string, ran time.Duration) Turn {
	handOver, pace, err := riverjobs.Turn(ctx, s.Pool, s.query(tenant, ran))
	if err != nil {
		return Turn{}
	}
	return Turn{HandOver: handOver, Pace: pace}
}

// NewSaleWaiting says whether a claim job whose product has not had a turn
// yet waits for a worker — of another tenant, or, once the drain has run its
// Slice, of its own (Turn gives the worker to either then).
func (s Scheduler) NewSaleWaiting(ctx context.Context, tenant string, ran time.Duration) bool {
	waiting, err := riverjobs.NewSaleWaiting(ctx, s.Pool, s.query(tenant, ran))
	return err == nil && waiting
}

// Yield is what one drain of the tenant's product asks between batches
// (every LookEvery; reservation.DrainOptions.Yield): Turn every AskEvery,
// and at once when a new sale waits.
func (s Scheduler) Yield(tenant string) func(ctx context.Context, ran time.Duration) Turn {
	var turn Turn // the last Turn asked, at asked
	var asked time.Time
	return func(ctx context.Context, ran time.Duration) Turn {
		if time.Since(asked) >= AskEvery || s.NewSaleWaiting(ctx, tenant, ran) {
			turn, asked = s.Turn(ctx, tenant, ran), time.Now()
		}
		return turn
	}
}
