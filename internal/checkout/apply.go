package checkout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/codes"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
	"boxoffice/internal/payment"
	"boxoffice/internal/reservation"
)

// Apply brings an attempt and its order in line with the provider's word on
// the payment, in one transaction. Every path that learns a payment's state
// — the authorize job, the resolver, webhooks, the reconciler — goes through
// here, and it is idempotent: applying the same state twice changes nothing,
// and a state older than what is recorded is ignored, so duplicate and
// out-of-order news is harmless.
func (s *Service) Apply(ctx context.Context, attemptID uuid.UUID, p payment.Payment) error {
	select {
	case s.applying <- struct{}{}:
		defer func() { <-s.applying }()
	case <-ctx.Done():
		return fmt.Errorf("apply payment %s: %w", attemptID, ctx.Err())
	}
	confirmed := false
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := s.loadAttempt(ctx, tx, attemptID, true)
		if err != nil {
			return err
		}
		var orderStatus string
		if err := tx.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, a.OrderID).Scan(&orderStatus); err != nil {
			return fmt.Errorf("order of attempt: %w", err)
		}
		setAttempt := func(status string) error {
			_, err := tx.Exec(ctx, `
				UPDATE payment_attempts SET status = $2, provider_payment_id = coalesce(provider_payment_id, $3), updated_at = now()
				WHERE id = $1`, attemptID, status, p.ID)
			return err
		}
		switch p.Status {
		case payment.StatusDeclined:
			if a.Status != "PENDING" && a.Status != "UNKNOWN" {
				return nil
			}
			s.metrics.PaymentEvent("declined")
			if err := setAttempt("DECLINED"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'FAILED', reason = 'DECLINED', updated_at = now()
				WHERE id = $1 AND status = 'PENDING_PAYMENT'`, a.OrderID); err != nil {
				return err
			}
			return codes.Release(ctx, tx, a.OrderID)

		case payment.StatusAuthorized:
			if a.Status != "PENDING" && a.Status != "UNKNOWN" {
				return nil // already applied, or older news than what we know
			}
			if err := setAttempt("AUTHORIZED"); err != nil {
				return err
			}
			if orderStatus != StatusPending {
				// An authorization nobody can use any more: release it.
				_, err := s.river.InsertTx(ctx, tx, VoidArgs{AttemptID: attemptID}, nil)
				return err
			}
			ok, err := s.confirm(ctx, tx, a.OrderID)
			if err != nil {
				return err
			}
			if !ok {
				// Too late: the hold ended. The late authorization is voided.
				s.metrics.PaymentEvent("late_authorization")
				if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'EXPIRED', reason = 'HOLD_EXPIRED', updated_at = now() WHERE id = $1`,
					a.OrderID); err != nil {
					return err
				}
				if err := codes.Release(ctx, tx, a.OrderID); err != nil {
					return err
				}
				_, err := s.river.InsertTx(ctx, tx, VoidArgs{AttemptID: attemptID}, nil)
				return err
			}
			confirmed = true
			_, err = s.river.InsertTx(ctx, tx, CaptureArgs{OrderID: a.OrderID}, nil)
			return err

		case payment.StatusCaptured:
			if a.Status == "CAPTURED" || a.Status == "REFUNDED" {
				return nil
			}
			if err := setAttempt("CAPTURED"); err != nil {
				return err
			}
			s.metrics.PaymentEvent("captured")
			_, err := tx.Exec(ctx, `UPDATE orders SET capture_status = 'CAPTURED', updated_at = now() WHERE id = $1`, a.OrderID)
			return err

		case payment.StatusVoided:
			if a.Status == "VOIDED" {
				return nil
			}
			return setAttempt("VOIDED")

		case payment.StatusRefunded:
			// The payment is refunded in full at the provider. The order
			// follows its refunds (refund.go), each applied by its own key.
			if a.Status == "REFUNDED" {
				return nil
			}
			return setAttempt("REFUNDED")
		}
		return fmt.Errorf("payment %s: unknown status %q", p.ID, p.Status)
	})
	if err == nil && confirmed {
		s.metrics.OrderConfirmed()
	}
	return err
}

// confirm makes the order's numbers SOLD if its hold is still the buyer's:
// claims SOLD, counters held→sold, hold and request CONVERTED, order
// CONFIRMED, tickets issued and an outbox row, in the caller's transaction.
// Locks follow the common order: hold, claims, inventory last. It reports
// false, changing nothing, when the hold has ended.
func (s *Service) confirm(ctx context.Context, tx pgx.Tx, orderID uuid.UUID) (bool, error) {
	var holdID uuid.UUID
	var buyer string
	var email *string
	var seats []string
	err := tx.QueryRow(ctx, `SELECT hold_id, buyer_id, email, seats FROM orders WHERE id = $1`, orderID).
		Scan(&holdID, &buyer, &email, &seats)
	if err != nil {
		return false, fmt.Errorf("order %s: %w", orderID, db.NotFound(err))
	}
	hold, err := reservation.LockHold(ctx, tx, holdID)
	if err != nil {
		return false, err
	}
	if !hold.Active {
		return false, nil
	}
	// A number no longer the hold's fails the conversion: never sell what is
	// not ours.
	if err := reservation.ConvertHold(ctx, tx, hold); err != nil {
		return false, fmt.Errorf("order %s: %w", orderID, err)
	}
	productID, tenantID, numbers := hold.ProductID, hold.TenantID, hold.Numbers
	if _, err := tx.Exec(ctx, `
		UPDATE orders SET status = 'CONFIRMED', capture_status = 'PENDING', confirmed_at = now(), updated_at = now()
		WHERE id = $1`, orderID); err != nil {
		return false, fmt.Errorf("confirm order: %w", err)
	}
	// The order's seats are the hold's numbers, named in their order.
	labels, err := seatsOf(ctx, tx, productID, numbers, seats)
	if err != nil {
		return false, err
	}
	// The event names the tickets without their codes: outbox rows are
	// kept, and no code is kept at rest (it is derived when shown).
	type issued struct {
		ID     uuid.UUID `json:"id"`
		Number int32     `json:"number"`
		Seat   string    `json:"seat"`
	}
	tickets := make([]issued, len(numbers))
	rows := make([][]any, len(numbers))
	for i, n := range numbers {
		tickets[i] = issued{ID: db.NewID(), Number: n, Seat: labels[i]}
		rows[i] = []any{tickets[i].ID, orderID, productID, n, labels[i]}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"tickets"}, []string{"id", "order_id", "product_id", "number", "label"},
		pgx.CopyFromRows(rows)); err != nil {
		return false, fmt.Errorf("issue tickets: %w", err)
	}
	if err := outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "order.confirmed", Payload: map[string]any{
		"orderId": orderID, "orderRef": db.ShortRef(orderID), "productId": productID, "buyerId": buyer, "email": email,
		"tickets": tickets}}); err != nil {
		return false, err
	}
	if err := codes.Finalize(ctx, tx, orderID); err != nil {
		return false, err
	}
	if err := inventory.Apply(ctx, tx, productID, inventory.Change{HeldDelta: -len(numbers), SoldDelta: len(numbers)}); err != nil {
		return false, err
	}
	return true, nil
}
