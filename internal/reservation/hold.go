package reservation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
)

// Hold states.
const (
	HoldActive    = "ACTIVE"
	HoldConverted = "CONVERTED"
	HoldExpired   = "EXPIRED"
	HoldReleased  = "RELEASED"
)

// ErrHoldConverted is returned when releasing a hold that became an order.
var ErrHoldConverted = errors.New("hold already converted into an order")

// Hold is a buyer's temporary ownership of some numbers.
type Hold struct {
	ID        uuid.UUID `json:"id"`
	ProductID uuid.UUID `json:"productId"`
	RequestID uuid.UUID `json:"requestId"`
	State     string    `json:"state"`
	Numbers   []int32   `json:"numbers"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Release lets a buyer give a hold back at once: its claims are deleted, the
// bits cleared and the counters fixed in one transaction. Releasing a hold
// that has already ended returns it unchanged, so a retried DELETE is safe.
func (s *Service) Release(ctx context.Context, tenantID uuid.UUID, buyerID string, holdID uuid.UUID) (*Hold, error) {
	var h Hold
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		var expired bool
		err := tx.QueryRow(ctx, `
			SELECT id, product_id, request_id, state, numbers, expires_at, expires_at <= now()
			FROM holds WHERE id = $1 AND tenant_id = $2 AND buyer_id = $3
			FOR UPDATE`, holdID, tenantID, buyerID).
			Scan(&h.ID, &h.ProductID, &h.RequestID, &h.State, &h.Numbers, &h.ExpiresAt, &expired)
		if err != nil {
			return fmt.Errorf("lock hold %s: %w", holdID, db.NotFound(err))
		}
		switch {
		case h.State == HoldConverted:
			return ErrHoldConverted
		case h.State != HoldActive:
			return nil
		case expired:
			// Leave it to the sweeper, which also frees claims taken over
			// meanwhile; to the buyer it is simply expired.
			h.State = HoldExpired
			return nil
		}
		freed, err := freeClaims(ctx, tx, h.ProductID, []uuid.UUID{holdID})
		if err != nil {
			return err
		}
		if err := endHolds(ctx, tx, []uuid.UUID{holdID}, HoldReleased, StatusReleased); err != nil {
			return err
		}
		h.State = HoldReleased
		return inventory.Apply(ctx, tx, h.ProductID, inventory.Change{Clear: freed, HeldDelta: -len(freed)})
	})
	if err != nil {
		return nil, err
	}
	if h.State == HoldReleased {
		s.metrics.HoldReleased()
	}
	return &h, nil
}

// freeClaims deletes the HELD claims that still belong to the given holds of
// one product and returns their numbers. A number of an expired hold that
// another claim has taken over belongs to that claim now and is left alone.
// Rows are locked in number order, the order claims are inserted in.
func freeClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, holdIDs []uuid.UUID) ([]int32, error) {
	rows, err := tx.Query(ctx, `
		DELETE FROM claims WHERE product_id = $1 AND number IN (
			SELECT c.number
			FROM holds h
			CROSS JOIN LATERAL unnest(h.numbers) AS n(number)
			JOIN claims c ON c.product_id = h.product_id AND c.number = n.number AND c.hold_id = h.id
			WHERE h.id = ANY($2) AND h.product_id = $1 AND c.state = 'HELD'
			ORDER BY c.number
			FOR UPDATE OF c)
		RETURNING number`, productID, holdIDs)
	if err != nil {
		return nil, fmt.Errorf("free claims: %w", err)
	}
	freed, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("free claims: %w", err)
	}
	return freed, nil
}

// endHolds moves ACTIVE holds to holdState, their requests to requestStatus,
// and writes one outbox event per hold.
func endHolds(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, holdState, requestStatus string) error {
	rows, err := tx.Query(ctx, `
		WITH ended AS (
			UPDATE holds SET state = $2, ended_at = now()
			WHERE id = ANY($1) AND state = 'ACTIVE'
			RETURNING id, tenant_id, product_id, request_id, buyer_id, numbers
		), requests AS (
			UPDATE reservation_requests r SET status = $3
			FROM ended WHERE r.id = ended.request_id AND r.status = 'HELD'
		)
		SELECT id, tenant_id, product_id, request_id, buyer_id, numbers FROM ended`, ids, holdState, requestStatus)
	if err != nil {
		return fmt.Errorf("end holds as %s: %w", holdState, err)
	}
	topic := "hold." + strings.ToLower(holdState)
	var events []outbox.New
	var id, tenantID, productID, requestID uuid.UUID
	var buyer string
	var numbers []int32
	_, err = pgx.ForEachRow(rows, []any{&id, &tenantID, &productID, &requestID, &buyer, &numbers}, func() error {
		events = append(events, outbox.New{TenantID: tenantID, Topic: topic, Payload: map[string]any{
			"holdId": id, "requestId": requestID, "productId": productID, "buyerId": buyer, "numbers": slices.Clone(numbers)}})
		return nil
	})
	if err != nil {
		return fmt.Errorf("end holds as %s: %w", holdState, err)
	}
	return outbox.Add(ctx, tx, events...)
}
