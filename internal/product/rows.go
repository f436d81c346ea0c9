package product

// What other packages may read of a product row inside their own
// transactions (the Store serves whole products to the API).

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Price is a product's unit price.
type Price struct {
	Cents    int64
	Currency string
}

// PriceOf returns a product's unit price.
func PriceOf(ctx context.Context, q db.DBTX, id uuid.UUID) (Price, error) {
	var p Price
	if err := q.QueryRow(ctx, `SELECT price_cents, currency FROM products WHERE id = $1`, id).Scan(&p.Cents, &p.Currency); err != nil {
		return p, fmt.Errorf("price of product %s: %w", id, db.NotFound(err))
	}
	return p, nil
}

// NameOf returns a product's name.
func NameOf(ctx context.Context, q db.DBTX, id uuid.UUID) (string, error) {
	var name string
	if err := q.QueryRow(ctx, `SELECT name FROM products WHERE id = $1`, id).Scan(&name); err != nil {
		return "", fmt.Errorf("name of product %s: %w", id, db.NotFound(err))
	}
	return name, nil
}

// Terms are what a claim transaction decides by, read in it with the
// database's clock.
type Terms struct {
	Capacity    int
	PerBuyer    int
	HoldSeconds int
	// OnSale is true once on_sale_at has passed and the product is ACTIVE.
	OnSale bool
	// Now is the transaction's now(), so hold expiry follows the database
	// clock that the sweeper compares with.
	Now time.Time
}

// TermsOf reads a product's terms.
func TermsOf(ctx context.Context, q db.DBTX, id uuid.UUID) (Terms, error) {
	var t Terms
	err := q.QueryRow(ctx, `
		SELECT capacity, per_buyer_limit, hold_seconds, on_sale_at <= now() AND status = 'ACTIVE', now()
		FROM products WHERE id = $1`, id).Scan(&t.Capacity, &t.PerBuyer, &t.HoldSeconds, &t.OnSale, &t.Now)
	if err != nil {
		return t, fmt.Errorf("read product %s: %w", id, db.NotFound(err))
	}
	return t, nil
}

// IDsOf returns the ids of a tenant's products.
func IDsOf(ctx context.Context, q db.DBTX, tenantID uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT id FROM products WHERE tenant_id = $1`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("products of tenant %s: %w", tenantID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("products of tenant %s: %w", tenantID, err)
	}
	return ids, nil
}
