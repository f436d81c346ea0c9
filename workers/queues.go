package workers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// QueueCount is one River queue's jobs by state.
type QueueCount struct {
	Name                      string
	Available                 int
	Running                   int
	Retryable                 int
	Scheduled                 int
	Discarded                 int
	OldestAvailableAgeSeconds float64
}

// QueueCounts counts River's jobs by queue and state, read from River's own
// table (River's client lists jobs but does not count them). With
// onlyClaims it counts only the claim jobs of the given products: what a
// tenant may see.
func QueueCounts(ctx context.Context, q db.DBTX, onlyClaims bool, products []uuid.UUID) ([]QueueCount, error) {
	rows, err := q.Query(ctx, `
		SELECT queue,
		       count(*) FILTER (WHERE state = 'available'),
		       count(*) FILTER (WHERE state = 'running'),
		       count(*) FILTER (WHERE state = 'retryable'),
		       count(*) FILTER (WHERE state = 'scheduled'),
		       count(*) FILTER (WHERE state = 'discarded'),
		       coalesce(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
		FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'discarded')
		  AND (NOT $1 OR (kind = 'claim_product' AND (args->>'product_id')::uuid = ANY($2)))
		GROUP BY queue ORDER BY queue`, onlyClaims, products)
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueueCount])
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	return out, nil
}
