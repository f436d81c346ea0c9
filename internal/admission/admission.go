// Package admission gives the waiting room's admission controller the
// figures it reads from tables other packages own, through their owners:
// the stock left (inventory), the claim backlog, who has reserved and how
// much (reservation), who has bought and the payments in doubt (checkout). It
// exists so that the waiting room, which products depend on, need not
// depend on them.
package admission

import (
	"context"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/reservation"
)

// Signals implements waitingroom.Signals.
type Signals struct{}

// Available is the product's stock neither held nor sold.
func (Signals) Available(ctx context.Context, q db.DBTX, productID uuid.UUID) (int64, error) {
	return inventory.Available(ctx, q, productID)
}

// OldestQueuedAge is how long the product's oldest undecided request has waited.
func (Signals) OldestQueuedAge(ctx context.Context, q db.DBTX, productID uuid.UUID) (time.Duration, error) {
	return reservation.OldestQueuedAge(ctx, q, productID)
}

// Reserved returns which buyers have made a request for the product.
func (Signals) Reserved(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error) {
	return reservation.BuyersWithRequests(ctx, q, tenantID, productID, buyers)
}

// Taken returns how many numbers count against each buyer's limit.
func (Signals) Taken(ctx context.Context, q db.DBTX, productID uuid.UUID, buyers []string) (map[string]int64, error) {
	return reservation.Taken(ctx, q, productID, buyers)
}

// Bought returns which buyers have a confirmed order for the product.
func (Signals) Bought(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error) {
	return checkout.BuyersWhoBought(ctx, q, tenantID, productID, buyers)
}

// PaymentsInDoubt counts payment outcomes not yet known.
func (Signals) PaymentsInDoubt(ctx context.Context, q db.DBTX) (int64, error) {
	return checkout.PaymentsInDoubt(ctx, q)
}
