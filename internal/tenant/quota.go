package tenant

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Quota bounds what one tenant may create: a tenant must not be able to
// fill the platform's database or memory with products (a 10,000,000-number
// product's bitmap is 1.25 MB in every cache that holds it).
type Quota struct {
	// Products is how many products the tenant may have.
	Products int `json:"products" minimum:"0" maximum:"1000000"`
	// Capacity is how many numbers all its products may have together.
	Capacity int64 `json:"capacity" minimum:"0" maximum:"10000000000"`
}

// LockQuota locks the tenant's row — so that concurrent creations by one
// tenant are counted one after the other — and returns its quota: its own
// where set, defaults otherwise.
func LockQuota(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, defaults Quota) (Quota, error) {
	q := defaults
	err := tx.QueryRow(ctx, `
		SELECT coalesce(max_products, $2), coalesce(max_capacity, $3) FROM tenants WHERE id = $1 FOR UPDATE`,
		tenantID, defaults.Products, defaults.Capacity).Scan(&q.Products, &q.Capacity)
	if err != nil {
		return Quota{}, fmt.Errorf("tenant %s quota: %w", tenantID, db.NotFound(err))
	}
	return q, nil
}

// SetQuota gives the tenant its own quota.
func (s *Store) SetQuota(ctx context.Context, tenantID uuid.UUID, q Quota) error {
	tag, err := s.pool.Exec(ctx, `UPDATE tenants SET max_products = $2, max_capacity = $3 WHERE id = $1`,
		tenantID, q.Products, q.Capacity)
	if err != nil {
		return fmt.Errorf("set quota of %s: %w", tenantID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("tenant %s: %w", tenantID, db.ErrNotFound)
	}
	return nil
}
