package checkout

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// AuditSales checks one product's sales against its claims and its money,
// in the auditor's snapshot (a reservation.Check):
//   - every SOLD claim stands for exactly one ticket of the order on its
//     hold: a VALID one, or a ticket refunded under the keep policy (the
//     seat stays off sale); a VALID ticket's seat is a SOLD claim of its
//     order's hold, so a refunded and resold seat has one live owner;
//   - an order's refunded amount is the sum of its done refunds, never more
//     than it was paid, and no refund is done without a captured payment;
//   - a cancelled or fully refunded order has no ticket that admits;
//   - a cancelled date admitted no one after it was cancelled, and once its
//     cancellation is finished no order of it holds a valid ticket.
func AuditSales(ctx context.Context, tx pgx.Tx, productID uuid.UUID) ([]reservation.Violation, error) {
	sold, err := reservation.SoldClaims(ctx, tx, productID)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `
		SELECT t.number, o.hold_id, t.status, o.status, coalesce(r.resell, true)
		FROM tickets t JOIN orders o ON o.id = t.order_id LEFT JOIN refunds r ON r.id = t.refund_id
		WHERE t.product_id = $1`, productID)
	if err != nil {
		return nil, fmt.Errorf("audit tickets of %s: %w", productID, err)
	}
	var out []reservation.Violation
	add := func(rule, format string, args ...any) {
		out = append(out, reservation.Violation{ProductID: productID, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	owners := map[int32]int{} // tickets standing for each SOLD claim
	var n int32
	var hold uuid.UUID
	var ticketStatus, orderStatus string
	var resell bool
	_, err = pgx.ForEachRow(rows, []any{&n, &hold, &ticketStatus, &orderStatus, &resell}, func() error {
		live := ticketStatus == ticketValid
		kept := ticketStatus == ticketVoid && !resell
		if live && !admits(orderStatus) {
			add("ticket_admits_after_order_ended", "number %d: a valid ticket of a %s order", n, orderStatus)
		}
		if !live && !kept {
			return nil
		}
		if sold[n] != hold {
			add("ticket_without_claim", "number %d: ticket (%s) of hold %s, SOLD claim of hold %s", n, ticketStatus, hold, sold[n])
			return nil
		}
		owners[n]++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit tickets of %s: %w", productID, err)
	}
	for number := range sold {
		if owners[number] != 1 {
			add("sold_claim_tickets", "number %d: SOLD claim stands for %d tickets, not 1", number, owners[number])
		}
	}

	rows, err = tx.Query(ctx, `
		SELECT o.id, o.refunded_cents, o.amount_cents,
		       coalesce((SELECT sum(r.amount_cents) FROM refunds r WHERE r.order_id = o.id AND r.status = 'REFUNDED'), 0),
		       EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id AND r.status = 'REFUNDED' AND r.settled_by_hand IS NULL)
		         AND o.capture_status <> 'CAPTURED'
		         AND NOT EXISTS (SELECT 1 FROM payment_attempts a WHERE a.order_id = o.id AND a.status IN ('CAPTURED', 'REFUNDED'))
		FROM orders o WHERE o.product_id = $1 AND (o.refunded_cents > 0 OR EXISTS (SELECT 1 FROM refunds r WHERE r.order_id = o.id))`,
		productID)
	if err != nil {
		return nil, fmt.Errorf("audit refunds of %s: %w", productID, err)
	}
	var orderID uuid.UUID
	var refunded, amount, done int64
	var uncaptured bool
	_, err = pgx.ForEachRow(rows, []any{&orderID, &refunded, &amount, &done, &uncaptured}, func() error {
		if refunded != done {
			add("refunded_amount", "order %s: refunded %d, its done refunds add up to %d", orderID, refunded, done)
		}
		if refunded > amount {
			add("refund_exceeds_payment", "order %s: refunded %d of %d", orderID, refunded, amount)
		}
		if uncaptured {
			add("refund_without_capture", "order %s: refunded at the provider without a captured payment", orderID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit refunds of %s: %w", productID, err)
	}
	c, err := product.CancellationOfDate(ctx, tx, productID)
	if errors.Is(err, db.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var admitted, valid int
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE checked_in_at > $2), count(*) FILTER (WHERE status = 'VALID' AND $3)
		FROM tickets WHERE product_id = $1`, productID, c.CancelledAt, c.FinishedAt != nil).Scan(&admitted, &valid); err != nil {
		return nil, fmt.Errorf("audit cancellation of %s: %w", productID, err)
	}
	if admitted > 0 {
		add("cancelled_date_admitted", "%d tickets checked in after the date was cancelled", admitted)
	}
	if valid > 0 {
		add("cancelled_date_valid_tickets", "%d tickets still valid after the cancellation finished", valid)
	}
	return out, nil
}
