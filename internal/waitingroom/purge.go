package waitingroom

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// PurgeProduct deletes a product's waiting room with its entries and
// admission steps, in tx: what a rehearsal's shadow leaves once it has
// ended. Never for a real product: its room's draw is published proof.
func PurgeProduct(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	for _, q := range []string{
		`DELETE FROM admission_steps WHERE product_id = $1`,
		`DELETE FROM queue_entries WHERE product_id = $1`,
		`DELETE FROM waiting_rooms WHERE product_id = $1`,
	} {
		if _, err := tx.Exec(ctx, q, productID); err != nil {
			return fmt.Errorf("purge waiting room of %s: %w", productID, err)
		}
	}
	return nil
}
