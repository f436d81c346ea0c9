package reservation

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// PurgeProduct deletes a product's requests, holds, claims, buyer limits
// and claim queue, in tx: what a rehearsal's shadow leaves once it has
// ended. Never for a real product.
func PurgeProduct(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if err := db.ExecEach(ctx, tx, []string{
		`DELETE FROM claims WHERE product_id = $1`,
		`DELETE FROM holds WHERE product_id = $1`,
		`DELETE FROM buyer_limits WHERE product_id = $1`,
		`DELETE FROM reservation_requests WHERE product_id = $1`,
		`DELETE FROM claim_queues WHERE product_id = $1`,
	}, productID); err != nil {
		return fmt.Errorf("purge reservations of %s: %w", productID, err)
	}
	return nil
}
