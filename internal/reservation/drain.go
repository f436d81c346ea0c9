package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	// Linger is how long an emptied queue is watched before the drain ends:
	// in a burst the next requests come within milliseconds, and ending the
	// job would leave them to wait for a new job to be fetched.
	Linger time.Duration
}

// lingerPoll is how often a lingering drain looks for new requests.
const lingerPoll = 5 * time.Millisecond

// Drain claims the product's QUEUED requests in batches until none is left,
// then calls Complete inside a final transaction that commits only if, after
// Complete has run, no unlocked QUEUED request of the product remains.
// River's worker passes JobCompleteTx as Complete: see ClaimArgs for why that
// ordering leaves no request behind.
func (c *Claimer) Drain(ctx context.Context, productID uuid.UUID, o DrainOptions) (DrainResult, error) {
	var total DrainResult
	deadline := time.Now().Add(o.Budget)
	var idleSince time.Time
	for {
		if o.Budget > 0 && time.Now().After(deadline) {
			return total, c.finishDrain(ctx, productID, o, true)
		}
		res, err := c.ClaimBatch(ctx, productID, o.BatchSize)
		if err != nil {
			return total, err
		}
		if res.Requests > 0 {
			total.Batches++
			total.Requests += res.Requests
			total.Numbers += res.Numbers
			idleSince = time.Time{}
			continue
		}
		if o.Linger > 0 {
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if time.Since(idleSince) < o.Linger {
				select {
				case <-ctx.Done():
					return total, ctx.Err()
				case <-time.After(lingerPoll):
				}
				continue
			}
		}
		err = c.finishDrain(ctx, productID, o, false)
		if !errors.Is(err, errMoreQueued) {
			return total, err
		}
	}
}

var errMoreQueued = errors.New("more requests queued")

// finishDrain completes the caller's job unless requests remain: then it
// either hands them to a follow-up job (outOfTime) or returns errMoreQueued
// so the drain goes on.
func (c *Claimer) finishDrain(ctx context.Context, productID uuid.UUID, o DrainOptions, outOfTime bool) error {
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := o.Complete(ctx, tx); err != nil {
			return fmt.Errorf("complete drain of %s: %w", productID, err)
		}
		var more bool
		// SKIP LOCKED: requests another drainer has locked are its to decide,
		// and waiting for them here would only spin.
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM reservation_requests
				WHERE product_id = $1 AND status = 'QUEUED'
				FOR UPDATE SKIP LOCKED)`, productID).Scan(&more)
		if err != nil {
			return fmt.Errorf("look for queued requests of %s: %w", productID, err)
		}
		switch {
		case !more:
			return nil
		case outOfTime && o.Continue != nil:
			return o.Continue(ctx, tx)
		default:
			return errMoreQueued
		}
	})
}
