package checkout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// PurgeProduct deletes a product's orders with their payment attempts and
// tickets, in tx: what a rehearsal's shadow leaves once it has ended. Never
// for a real product: its orders are the record of what was sold.
func PurgeProduct(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if err := db.ExecEach(ctx, tx, []string{
		`DELETE FROM tickets WHERE product_id = $1`,
		`DELETE FROM payment_attempts WHERE order_id IN (SELECT id FROM orders WHERE product_id = $1)`,
		`DELETE FROM orders WHERE product_id = $1`,
	}, productID); err != nil {
		return fmt.Errorf("purge orders of %s: %w", productID, err)
	}
	return nil
}
