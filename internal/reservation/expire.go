package reservation

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/inventory"
)

// ExpireResult is what one sweep did.
type ExpireResult struct {
	Products     int
	HoldsExpired int
	ClaimsFreed  int
}

// ExpireHolds is the sweeper: for every product with expired holds or expired
// held claims it deletes those claims, clears their bits, fixes the counters
// and marks the holds and their requests EXPIRED, one transaction per product.
// Claims already treat expired holds as free, so the sweeper only makes the
// bitmap and counters catch up; a stopped sweeper strands nothing. At most
// limit claims are freed per product per call, to keep transactions short.
func (c *Claimer) ExpireHolds(ctx context.Context, limit int) (ExpireResult, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT product_id FROM claims WHERE state = 'HELD' AND expires_at <= now()
		UNION
		SELECT product_id FROM holds WHERE state = 'ACTIVE' AND expires_at <= now()`)
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

func (c *Claimer) expireProduct(ctx context.Context, productID uuid.UUID, limit int) (holds, freed int, err error) {
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		numbers, err := deleteClaims(ctx, tx, `
			DELETE FROM claims WHERE (product_id, number) IN (
				SELECT product_id, number FROM claims
				WHERE product_id = $1 AND state = 'HELD' AND expires_at <= now()
				ORDER BY number LIMIT $2 FOR UPDATE)
			RETURNING number`, productID, limit)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT id FROM holds WHERE product_id = $1 AND state = 'ACTIVE' AND expires_at <= now()
			ORDER BY id FOR UPDATE`, productID)
		if err != nil {
			return fmt.Errorf("lock expired holds: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return fmt.Errorf("lock expired holds: %w", err)
		}
		if err := endHolds(ctx, tx, ids, HoldExpired, StatusExpired); err != nil {
			return err
		}
		holds, freed = len(ids), len(numbers)
		return inventory.Apply(ctx, tx, productID, inventory.Change{Clear: numbers, HeldDelta: -len(numbers)})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("expire holds of product %s: %w", productID, err)
	}
	return holds, freed, nil
}
