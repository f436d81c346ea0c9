package checkout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// PaymentsInDoubt counts payment attempts whose outcome is unknown (the
// provider timed out or failed): the reconciler is still to learn them.
func PaymentsInDoubt(ctx context.Context, q db.DBTX) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `SELECT count(*) FROM payment_attempts WHERE status = 'UNKNOWN'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("payments in doubt: %w", err)
	}
	return n, nil
}

// BuyersWhoBought returns which of the buyers have a confirmed order for
// the product.
func BuyersWhoBought(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(buyers) == 0 {
		return out, nil
	}
	// One probe of the (tenant, buyer, key) index per buyer.
	rows, err := q.Query(ctx, `
		SELECT u.buyer FROM unnest($3::text[]) AS u(buyer)
		WHERE EXISTS (SELECT 1 FROM orders o
		              WHERE o.tenant_id = $1 AND o.buyer_id = u.buyer AND o.product_id = $2 AND o.status = 'CONFIRMED')`,
		tenantID, productID, buyers)
	if err != nil {
		return nil, fmt.Errorf("buyers who bought: %w", err)
	}
	var buyer string
	if _, err := pgx.ForEachRow(rows, []any{&buyer}, func() error { out[buyer] = true; return nil }); err != nil {
		return nil, fmt.Errorf("buyers who bought: %w", err)
	}
	return out, nil
}

// Unresolved counts payment attempts still pending or unknown and how long
// the oldest has been so (zero when none): what the reconciler is behind on.
func Unresolved(ctx context.Context, q db.DBTX) (n int64, oldest float64, err error) {
	err = q.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(updated_at)), 0)::float8
		FROM payment_attempts WHERE status IN ('PENDING', 'UNKNOWN')`).Scan(&n, &oldest)
	if err != nil {
		return 0, 0, fmt.Errorf("unresolved payments: %w", err)
	}
	return n, oldest, nil
}
