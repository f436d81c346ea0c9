package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/outbox"
	"boxoffice/internal/waitingroom"
)

// ErrNoWaitingRoom is returned for admission control of a product sold
// without a waiting room.
var ErrNoWaitingRoom = errors.New("this product has no waiting room")

// AdmissionChange changes a waiting room's admission while its sale runs;
// nil fields stay.
type AdmissionChange struct {
	ActiveShoppers, ShoppingSeconds *int
	Paused                          *bool
}

// TuneAdmission changes the pace of a product's waiting room (L and W, so
// λ = L ÷ W) or pauses and resumes it, at any time — before or during the
// sale. The product's copy of the settings and the room's, which every
// admission step reads, change in one transaction.
func (s *Store) TuneAdmission(ctx context.Context, tenantID, id uuid.UUID, c AdmissionChange) (*Product, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanProduct(tx.QueryRow(ctx, selectProduct+` WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID))
		if err != nil {
			return fmt.Errorf("product %s: %w", id, db.NotFound(err))
		}
		if cur.WaitingRoom == nil || !cur.WaitingRoom.Enabled {
			return ErrNoWaitingRoom
		}
		settings := *cur.WaitingRoom
		if c.ActiveShoppers != nil {
			settings.ActiveShoppers = *c.ActiveShoppers
		}
		if c.ShoppingSeconds != nil {
			settings.ShoppingSeconds = *c.ShoppingSeconds
		}
		if c.Paused != nil {
			settings.Paused = *c.Paused
		}
		b, err := json.Marshal(settings)
		if err != nil {
			return fmt.Errorf("encode waiting room: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE products SET waiting_room = $2 WHERE id = $1`, id, b); err != nil {
			return fmt.Errorf("tune admission of %s: %w", id, err)
		}
		if settings.Paused != cur.WaitingRoom.Paused {
			topic := map[bool]string{true: "sale.paused", false: "sale.resumed"}[settings.Paused]
			if err := outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: topic, Payload: map[string]any{"productId": id}}); err != nil {
				return err
			}
		}
		return waitingroom.Tune(ctx, tx, id, settings)
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, tenantID, id)
}
