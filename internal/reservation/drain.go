package reservation

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DrainResult sums the batches of one Drain.
type DrainResult struct {
	Batches  int
	Requests int
	Numbers  int
}

// Drain claims the product's QUEUED requests in batches of batchSize until
// none is left, then calls complete inside a final transaction that commits
// only if, after complete has run, no unlocked QUEUED request of the product
// remains. River's worker passes JobCompleteTx as complete: see ClaimArgs for
// why that ordering leaves no request behind.
func (c *Claimer) Drain(ctx context.Context, productID uuid.UUID, batchSize int, complete func(ctx context.Context, tx pgx.Tx) error) (DrainResult, error) {
	var total DrainResult
	for {
		res, err := c.ClaimBatch(ctx, productID, batchSize)
		if err != nil {
			return total, err
		}
		if res.Requests > 0 {
			total.Batches++
			total.Requests += res.Requests
			total.Numbers += res.Numbers
			continue
		}
		done := false
		err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			if err := complete(ctx, tx); err != nil {
				return fmt.Errorf("complete drain of %s: %w", productID, err)
			}
			var more bool
			// SKIP LOCKED: requests another drainer has locked are its to
			// decide, and waiting for them here would only spin.
			err := tx.QueryRow(ctx, `
				SELECT EXISTS (
					SELECT 1 FROM reservation_requests
					WHERE product_id = $1 AND status = 'QUEUED'
					FOR UPDATE SKIP LOCKED)`, productID).Scan(&more)
			if err != nil {
				return fmt.Errorf("look for queued requests of %s: %w", productID, err)
			}
			if more {
				return errMoreQueued
			}
			done = true
			return nil
		})
		if done {
			return total, nil
		}
		if err != nil && err != errMoreQueued {
			return total, err
		}
	}
}

var errMoreQueued = fmt.Errorf("more requests queued")
