package product

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// DateCancellation is a cancelled date: when, why and by whom, and when its
// last order was refunded (nil while the refunds run).
type DateCancellation struct {
	TenantID    uuid.UUID
	CancelledAt time.Time
	Reason      string
	By          string
	FinishedAt  *time.Time
}

// MarkCancelled cancels a date in the caller's transaction (which refunds
// its orders): its publication becomes CANCELLED for good, so the claim
// refuses what is queued and no ticket of it checks in. It reports false
// when the date already was cancelled (nothing changes).
func MarkCancelled(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID, reason, by string) (bool, error) {
	var publication string
	err := tx.QueryRow(ctx, `SELECT publication FROM products WHERE id = $1 AND tenant_id = $2 AND rehearsal_of IS NULL FOR UPDATE`,
		id, tenantID).Scan(&publication)
	if err != nil {
		return false, fmt.Errorf("product %s: %w", id, db.NotFound(err))
	}
	if publication == Cancelled {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `
		UPDATE products SET publication = 'CANCELLED', cancelled_at = now(), cancel_reason = $2, cancelled_by = $3
		WHERE id = $1`, id, reason, by); err != nil {
		return false, fmt.Errorf("cancel product %s: %w", id, err)
	}
	return true, nil
}

// CancellationOfDate reads a cancelled date's cancellation (db.ErrNotFound
// when the date is not cancelled).
func CancellationOfDate(ctx context.Context, q db.DBTX, id uuid.UUID) (*DateCancellation, error) {
	var c DateCancellation
	err := q.QueryRow(ctx, `
		SELECT tenant_id, cancelled_at, cancel_reason, cancelled_by, cancel_finished_at
		FROM products WHERE id = $1 AND publication = 'CANCELLED'`, id).
		Scan(&c.TenantID, &c.CancelledAt, &c.Reason, &c.By, &c.FinishedAt)
	if err != nil {
		return nil, fmt.Errorf("cancellation of %s: %w", id, db.NotFound(err))
	}
	return &c, nil
}

// FinishCancellation records that a cancelled date has no order left to
// refund.
func FinishCancellation(ctx context.Context, q db.DBTX, id uuid.UUID) error {
	if _, err := q.Exec(ctx, `
		UPDATE products SET cancel_finished_at = now() WHERE id = $1 AND publication = 'CANCELLED' AND cancel_finished_at IS NULL`,
		id); err != nil {
		return fmt.Errorf("finish cancellation of %s: %w", id, err)
	}
	return nil
}

// IsCancelled reports whether a date is cancelled.
func IsCancelled(ctx context.Context, q db.DBTX, id uuid.UUID) (bool, error) {
	var cancelled bool
	if err := q.QueryRow(ctx, `SELECT publication = 'CANCELLED' FROM products WHERE id = $1`, id).Scan(&cancelled); err != nil {
		return false, fmt.Errorf("product %s: %w", id, db.NotFound(err))
	}
	return cancelled, nil
}

// UnfinishedCancellations returns the dates cancelled longer than olderThan
// ago whose refunds are not finished (at most 100).
func UnfinishedCancellations(ctx context.Context, q db.DBTX, olderThan time.Duration) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT id FROM products WHERE publication = 'CANCELLED' AND cancel_finished_at IS NULL
		  AND cancelled_at < now() - make_interval(secs => $1) LIMIT 100`, olderThan.Seconds())
	if err != nil {
		return nil, fmt.Errorf("unfinished cancellations: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("unfinished cancellations: %w", err)
	}
	return ids, nil
}
