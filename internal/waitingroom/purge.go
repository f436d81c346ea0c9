package waitingroom

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// PurgeProduct deletes a product's waiting room with its entries and
// admission steps, in tx: what a rehearsal's shadow leaves once it has
// ended. Never for a real product: its room's draw is published proof.
func PurgeProduct(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if err := db.ExecEach(ctx, tx, []string{
		`DELETE FROM admission_steps WHERE product_id = $1`,
		`DELETE FROM queue_entries WHERE product_id = $1`,
		`DELETE FROM presale_rounds WHERE product_id = $1`,
		`DELETE FROM waiting_rooms WHERE product_id = $1`,
	}, productID); err != nil {
		return fmt.Errorf("purge waiting room of %s: %w", productID, err)
	}
	return nil
}
