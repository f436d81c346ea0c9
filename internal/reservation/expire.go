package reservation

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
)

// ExpireResult is what one sweep did.
type ExpireResult struct {
	Products     int
	HoldsExpired int
	ClaimsFreed  int
}

// ExpireHolds is the sweeper: for every product with expired ACTIVE holds it
// deletes their claims, clears the bits, fixes the counters and marks the
// holds and their requests EXPIRED, one transaction per product. Claims
// already treat expired holds as free, so the sweeper only makes the bitmap
// and counters catch up; a stopped sweeper strands nothing. At most limit
// holds are expired per product per transaction, to keep transactions short.
func (c *Claimer) ExpireHolds(ctx context.Context, limit int) (ExpireResult, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT DISTINCT product_id FROM holds WHERE state = 'ACTIVE' AND expires_at <= now()`)
	if err != nil {
		return ExpireResult{}, fmt.Errorf("find expired holds: %w", err)
	}
	products, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return ExpireResult{}, fmt.Errorf("find expired holds: %w", err)
	}
	var res ExpireResult
	for _, productID := range products {
		holds, freed, err := c.expireProduct(ctx, productID, limit)
		if err != nil {
			return res, err
		}
		res.Products++
		res.HoldsExpired += holds
		res.ClaimsFreed += freed
	}
	c.metrics.HoldsExpired(res.HoldsExpired)
	return res, nil
}

// expireProduct sweeps one product, a transaction of at most limit holds at
// a time. Its locks come in the order every transaction that takes a
// product's expired claims keeps — the inventory row, then claims rows — so
// that it cannot deadlock with an SQS claim (which locks the inventory row
// first and may take an expired hold's claim over); a claims row another
// transaction holds (a River claim taking it over, which locks inventory
// last) is skipped rather than waited for, and its hold is left ACTIVE for
// the next sweep, so no claim is left behind an ended hold.
func (c *Claimer) expireProduct(ctx context.Context, productID uuid.UUID, limit int) (holds, freed int, err error) {
	for {
		var n, f int
		var full bool
		err = db.BeginFenced(ctx, c.pool, func(tx pgx.Tx) error {
			if err := boundFree(ctx, tx); err != nil {
				return err
			}
			if err := inventory.Lock(ctx, tx, productID); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `
				SELECT id FROM holds WHERE product_id = $1 AND state = 'ACTIVE' AND expires_at <= now()
				ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, productID, limit)
			if err != nil {
				return fmt.Errorf("lock expired holds: %w", err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil || len(ids) == 0 {
				return err
			}
			full = len(ids) == limit
			numbers, err := freeExpiredClaims(ctx, tx, productID, ids)
			if err != nil {
				return err
			}
			ended, err := holdsWithoutClaims(ctx, tx, productID, ids)
			if err != nil {
				return err
			}
			if err := endHolds(ctx, tx, ended, HoldExpired, StatusExpired); err != nil {
				return err
			}
			n, f = len(ended), len(numbers)
			return inventory.Apply(ctx, tx, productID, inventory.Change{Clear: numbers, HeldDelta: -len(numbers)})
		})
		if err != nil {
			return holds, freed, fmt.Errorf("expire holds of product %s: %w", productID, err)
		}
		holds, freed = holds+n, freed+f
		if !full || n == 0 {
			return holds, freed, nil
		}
	}
}
