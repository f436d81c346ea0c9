package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/schedule"
)

// DrainResult sums the batches of one Drain.
type DrainResult struct {
	Batches  int
	Requests int
	Numbers  int
}

// DrainOptions configures Drain.
type DrainOptions struct {
	// BatchSize is the claim batch size. Required.
	BatchSize int
	// Budget bounds how long one Drain runs (0: until the queue is empty), so
	// that a hot product's job ends now and then and a stuck worker is
	// noticed; Continue hands the rest to a new job.
	Budget time.Duration
	// Complete marks the caller's job done inside the final transaction.
	Complete func(ctx context.Context, tx pgx.Tx) error
	// Continue enqueues a follow-up job inside the final transaction when the
	// budget ran out with requests left.
	Continue func(ctx context.Context, tx pgx.Tx) error
	// Yield, when set, is asked between batches, at most every YieldEvery,
	// with how long the drain has run, what the drain owes the others
	// (schedule.Scheduler.Yield).
	Yield      func(ctx context.Context, ran time.Duration) schedule.Turn
	YieldEvery time.Duration
	// Stop, when closed, ends the drain as if its budget had run out: the
	// process is stopping, and Continue hands the queue to a job another
	// process fetches at once, instead of one left running for a rescuer.
	Stop <-chan struct{}
	// Linger is how long an emptied queue is watched before the drain ends
	// (schedule.Linger).
	Linger time.Duration
	// Gather: how long to wait for the next batch after one that emptied
	// the queue (schedule.Gather; the zero value: never).
	Gather schedule.Gathering
}

// gatherAfter is how long to wait before the next batch, after one of n
// requests that emptied the queue.
func (o DrainOptions) gatherAfter(n int, turn schedule.Turn) time.Duration {
	if turn.Pace {
		return schedule.Pace
	}
	return o.Gather.After(n)
}

// Drain claims the product's QUEUED requests in batches until none is left,
// then calls Complete inside a final transaction that commits only if, with
// the accepts in flight waited for, no unlocked QUEUED request of the
// product remains. River's worker passes JobCompleteTx as Complete: see
// ClaimArgs for why that leaves no request behind.
func (c *Claimer) Drain(ctx context.Context, productID uuid.UUID, o DrainOptions) (DrainResult, error) {
	res, err := c.drain(ctx, productID, o)
	if err != nil {
		// This job's retry waits a backoff: let the next accept insert a
		// job of its own. Best effort — the repair job covers the rest.
		clearCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = clearJobPending(clearCtx, c.pool, productID)
	}
	return res, err
}

func (c *Claimer) drain(ctx context.Context, productID uuid.UUID, o DrainOptions) (DrainResult, error) {
	var total DrainResult
	started := time.Now()
	deadline := started.Add(o.Budget)
	var idleSince time.Time
	// look: once the queue has been emptied, look for requests with one
	// plain statement before a claim transaction (three round trips) — a
	// drain that keeps up would otherwise follow every batch with an empty
	// one, and a quiet product's drain run one every schedule.LingerPoll.
	look := false
	// floor: where this drain's scans of the queue start (lockQueued).
	var floor uint64
	nextYieldCheck := started.Add(o.YieldEvery)
	var turn schedule.Turn
	for {
		// Hand over — out of budget, the process stopping, or other
		// products waiting for this worker.
		handOver := (o.Budget > 0 && time.Now().After(deadline)) || closed(o.Stop)
		if !handOver && o.Yield != nil && time.Now().After(nextYieldCheck) {
			turn = o.Yield(ctx, time.Since(started))
			handOver = turn.HandOver
			nextYieldCheck = time.Now().Add(o.YieldEvery)
		}
		if handOver {
			return total, c.finishDrain(ctx, productID, o, true)
		}
		claim := true
		if look {
			queued, err := c.anyQueued(ctx, productID, floor)
			if err != nil {
				return total, err
			}
			claim = queued
		}
		if claim {
			res, err := c.claimFrom(ctx, productID, o.BatchSize, floor)
			if err != nil {
				return total, err
			}
			if res.Requests > 0 {
				total.Batches++
				total.Requests += res.Requests
				total.Numbers += res.Numbers
				floor = max(floor, res.floor)
				idleSince = time.Time{}
				// A batch short of the limit took the whole queue.
				look = res.Requests < o.BatchSize
				if wait := o.gatherAfter(res.Requests, turn); look && wait > 0 {
					select {
					case <-ctx.Done():
						return total, ctx.Err()
					case <-o.Stop:
					case <-time.After(wait):
					}
				}
				continue
			}
		}
		look = true
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) < o.Linger {
			select {
			case <-ctx.Done():
				return total, ctx.Err()
			case <-o.Stop:
			case <-time.After(schedule.LingerPoll):
			}
			continue
		}
		err := c.finishDrain(ctx, productID, o, false)
		if !errors.Is(err, errMoreQueued) {
			return total, err
		}
		// Claim what came in at once, from the front: what the final check
		// found may be a request a claim skipped as locked, behind the floor.
		idleSince, look, floor = time.Time{}, false, 0
	}
}

// anyQueued says whether the product has QUEUED requests, locked or not,
// from the floor on.
func (c *Claimer) anyQueued(ctx context.Context, productID uuid.UUID, floor uint64) (bool, error) {
	var queued bool
	err := c.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED' AND queued_xid >= $2)`,
		productID, floor).Scan(&queued)
	if err != nil {
		return false, fmt.Errorf("look for queued requests of %s: %w", productID, err)
	}
	return queued, nil
}

var errMoreQueued = errors.New("more requests queued")

// closed says whether c is closed (never, for nil).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finishDrain completes the caller's job unless requests remain: then it
// either hands them to a follow-up job (outOfTime) or returns errMoreQueued
// so the drain goes on.
func (c *Claimer) finishDrain(ctx context.Context, productID uuid.UUID, o DrainOptions, outOfTime bool) error {
	handOn := outOfTime && o.Continue != nil
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// Handing requests on to a follow-up job needs no wait for the
		// accepts in flight: job_pending stays true and the follow-up
		// decides their requests too. A hand-over to another tenant's sale
		// so does not wait for an accept transaction of this product.
		if handOn {
			more, err := anyQueuedUnlocked(ctx, tx, productID)
			if err != nil {
				return err
			}
			if more {
				return c.handOn(ctx, tx, productID, o)
			}
		}
		// Ending the drain clears job_pending, so first wait for the
		// accepts in flight (they hold the row FOR KEY SHARE): after this,
		// every request that counted on this job is visible, and later
		// accepts wait for this transaction's end.
		if _, err := tx.Exec(ctx, `SELECT FROM claim_queues WHERE product_id = $1 FOR UPDATE`, productID); err != nil {
			return fmt.Errorf("lock the queue of %s: %w", productID, err)
		}
		more, err := anyQueuedUnlocked(ctx, tx, productID)
		if err != nil {
			return err
		}
		switch {
		case more && handOn:
			return c.handOn(ctx, tx, productID, o)
		case more:
			return errMoreQueued
		}
		if err := o.Complete(ctx, tx); err != nil {
			return fmt.Errorf("complete drain of %s: %w", productID, err)
		}
		// Nothing left: the next accept inserts a new job.
		return clearJobPending(ctx, tx, productID)
	})
}

// handOn completes the drain's job and enqueues its follow-up in tx; the
// follow-up keeps job_pending true.
func (c *Claimer) handOn(ctx context.Context, tx pgx.Tx, productID uuid.UUID, o DrainOptions) error {
	// Completed first: a job still running would make the follow-up's
	// unique insert a no-op.
	if err := o.Complete(ctx, tx); err != nil {
		return fmt.Errorf("complete drain of %s: %w", productID, err)
	}
	if err := o.Continue(ctx, tx); err != nil {
		return fmt.Errorf("continue drain of %s: %w", productID, err)
	}
	return nil
}

// anyQueuedUnlocked says whether the product has QUEUED requests no other
// claim has locked. SKIP LOCKED: requests another drainer has locked are
// its to decide, and waiting for them here would only spin.
func anyQueuedUnlocked(ctx context.Context, tx pgx.Tx, productID uuid.UUID) (bool, error) {
	var more bool
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM reservation_requests
			WHERE product_id = $1 AND status = 'QUEUED'
			FOR UPDATE SKIP LOCKED)`, productID).Scan(&more)
	if err != nil {
		return false, fmt.Errorf("look for queued requests of %s: %w", productID, err)
	}
	return more, nil
}

// markJobPending runs in an accept transaction after its requests are
// inserted. It locks the product's claim_queues row FOR KEY SHARE — accepts
// do not wait for each other, a finishing drain waits for them — and says
// whether the caller must insert a claim job: only when none is pending,
// turning job_pending true (a no-key update: it waits only for another
// accept doing the same, which then finds it true).
func markJobPending(ctx context.Context, tx pgx.Tx, productID uuid.UUID) (bool, error) {
	const lock = `SELECT job_pending FROM claim_queues WHERE product_id = $1 FOR KEY SHARE`
	var pending bool
	err := tx.QueryRow(ctx, lock, productID).Scan(&pending)
	if errors.Is(err, pgx.ErrNoRows) {
		// The product's first request.
		if _, err := tx.Exec(ctx, `INSERT INTO claim_queues (product_id) VALUES ($1) ON CONFLICT DO NOTHING`, productID); err != nil {
			return false, fmt.Errorf("add the queue of %s: %w", productID, err)
		}
		err = tx.QueryRow(ctx, lock, productID).Scan(&pending)
	}
	if err != nil {
		return false, fmt.Errorf("lock the queue of %s: %w", productID, err)
	}
	if pending {
		return false, nil
	}
	tag, err := tx.Exec(ctx, `UPDATE claim_queues SET job_pending = true WHERE product_id = $1 AND NOT job_pending`, productID)
	if err != nil {
		return false, fmt.Errorf("mark the queue of %s: %w", productID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// clearJobPending says no job will look at the product's queue any more:
// in the drain's final transaction, or after a drain failed (its retry
// waits a backoff; new requests should get a job of their own now).
func clearJobPending(ctx context.Context, q db.DBTX, productID uuid.UUID) error {
	if _, err := q.Exec(ctx, `UPDATE claim_queues SET job_pending = false WHERE product_id = $1`, productID); err != nil {
		return fmt.Errorf("clear the queue of %s: %w", productID, err)
	}
	return nil
}
