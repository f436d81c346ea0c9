package checkout

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"boxoffice/internal/codes"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// CreateParams asks to pay for a hold.
type CreateParams struct {
	TenantID       uuid.UUID
	BuyerID        string
	IdempotencyKey string
	HoldID         uuid.UUID
	PaymentMethod  string
	Email          string
	// DiscountCode, when set, takes its discount off the tickets; a use
	// of it is taken with the order.
	DiscountCode string
}

// Create records an order for the buyer's hold and its first payment
// attempt, and enqueues the authorization — all in one transaction, so the
// attempt is durable before any provider call. The same key returns the same
// order; a new key for a hold whose order FAILED (declined) starts a new
// attempt on that order with a new provider idempotency key.
func (s *Service) Create(ctx context.Context, p CreateParams) (order *Order, replayed bool, err error) {
	if err := s.checkPaused(ctx); err != nil {
		return nil, false, err
	}
	var orderID uuid.UUID
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var existingHold uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id, hold_id FROM orders WHERE tenant_id = $1 AND buyer_id = $2 AND idempotency_key = $3`,
			p.TenantID, p.BuyerID, p.IdempotencyKey).Scan(&orderID, &existingHold)
		switch {
		case err == nil && existingHold == p.HoldID:
			replayed = true
			return nil
		case err == nil:
			return ErrIdempotencyConflict
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up order by key: %w", err)
		}

		hold, err := reservation.LockHold(ctx, tx, p.HoldID)
		if err != nil {
			return err
		}
		if hold.TenantID != p.TenantID || hold.BuyerID != p.BuyerID {
			// Another buyer's hold is, to this one, no hold at all.
			return fmt.Errorf("lock hold %s: %w", p.HoldID, db.ErrNotFound)
		}
		if !hold.Active {
			return ErrHoldNotActive
		}
		if cancelled, err := product.IsCancelled(ctx, tx, hold.ProductID); err != nil || cancelled {
			return cmp.Or(err, product.ErrDateCancelled)
		}

		var status string
		err = tx.QueryRow(ctx, `SELECT id, status FROM orders WHERE hold_id = $1 FOR UPDATE`, p.HoldID).Scan(&orderID, &status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			// Each seat at its price level (or the product's price), named
			// once for the order's life.
			quote, err := product.QuoteFor(ctx, tx, hold.ProductID, hold.Numbers)
			if err != nil {
				return err
			}
			orderID = db.NewID()
			// The one grace extension: while the authorization is in flight
			// the seats stay this buyer's a little longer, never indefinitely.
			if err := reservation.ExtendHold(ctx, tx, hold, s.cfg.Grace); err != nil {
				return err
			}
			var discount codes.Applied
			if p.DiscountCode != "" {
				discount, err = codes.Reserve(ctx, tx, codes.Use{TenantID: p.TenantID, ProductID: hold.ProductID,
					OrderID: orderID, BuyerID: p.BuyerID, Code: p.DiscountCode, Subtotal: quote.Cents - quote.FeeCents,
					Until: hold.ExpiresAt.Add(s.cfg.Grace)})
				if err != nil {
					return err
				}
			}
			_, err = tx.Exec(ctx, `
				INSERT INTO orders (id, tenant_id, product_id, buyer_id, hold_id, idempotency_key, amount_cents, currency,
				                    email, numbers, seats, fee_cents, discount_cents, discount_code)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
				orderID, p.TenantID, hold.ProductID, p.BuyerID, p.HoldID, p.IdempotencyKey,
				quote.Cents-discount.Cents, quote.Currency, nullable(p.Email), hold.Numbers, quote.Seats, quote.FeeCents,
				discount.Cents, nullable(discount.Code))
			if err != nil {
				return fmt.Errorf("insert order: %w", err)
			}
		case err != nil:
			return fmt.Errorf("look up order of hold: %w", err)
		case status == StatusFailed:
			// A declined order may be paid again with another method; its
			// code's use, given back at the decline, is taken again.
			if _, err := tx.Exec(ctx, `UPDATE orders SET status = $2, reason = NULL, idempotency_key = $3, updated_at = now() WHERE id = $1`,
				orderID, StatusPending, p.IdempotencyKey); err != nil {
				return fmt.Errorf("reopen order: %w", err)
			}
			if err := s.reuseCode(ctx, tx, orderID, hold); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: order %s is %s", ErrOrderExists, orderID, status)
		}

		// A rehearsal's orders pay with the test-mode provider, never the
		// real one.
		provider := s.provider
		rehearsal, err := product.IsRehearsal(ctx, tx, hold.ProductID)
		if err != nil {
			return err
		}
		if rehearsal {
			if s.testMode == nil {
				return ErrNoTestMode
			}
			provider = s.testMode
		}
		attemptID := db.NewID()
		if _, err := tx.Exec(ctx, `
			INSERT INTO payment_attempts (id, order_id, provider, provider_key, payment_method)
			VALUES ($1, $2, $3, $4, $5)`, attemptID, orderID, provider.Name(), "att_"+attemptID.String(), p.PaymentMethod); err != nil {
			return fmt.Errorf("insert payment attempt: %w", err)
		}
		if _, err := s.river.InsertTx(ctx, tx, AuthorizeArgs{AttemptID: attemptID}, nil); err != nil {
			return fmt.Errorf("enqueue authorization: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	order, err = s.Get(ctx, p.TenantID, orderID, p.BuyerID)
	return order, replayed, err
}

// reuseCode takes a use of the code a reopened order was made with again.
func (s *Service) reuseCode(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, hold *reservation.BuyerHold) error {
	var code *string
	var amount, fees, discount int64
	if err := tx.QueryRow(ctx, `SELECT discount_code, amount_cents, fee_cents, discount_cents FROM orders WHERE id = $1`,
		orderID).Scan(&code, &amount, &fees, &discount); err != nil {
		return fmt.Errorf("order %s: %w", orderID, err)
	}
	if code == nil {
		return nil
	}
	_, err := codes.Reserve(ctx, tx, codes.Use{TenantID: hold.TenantID, ProductID: hold.ProductID, OrderID: orderID,
		BuyerID: hold.BuyerID, Code: *code, Subtotal: amount - fees + discount, Until: hold.ExpiresAt})
	return err
}

// seatsOf returns an order's seat names: as stored, or — for orders made
// before they were — from the product's seat map.
func seatsOf(ctx context.Context, q db.DBTX, productID uuid.UUID, numbers []int32, stored []string) ([]string, error) {
	if len(stored) == len(numbers) {
		return stored, nil
	}
	quote, err := product.QuoteFor(ctx, q, productID, numbers)
	if err != nil {
		return nil, err
	}
	return quote.Seats, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Get returns an order of the tenant (and of the buyer, when buyerID is set).
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID, buyerID string) (*Order, error) {
	var o Order
	err := s.pool.QueryRow(ctx, `
		SELECT o.id, o.hold_id, o.product_id, o.status, coalesce(o.reason, ''), o.capture_status, o.amount_cents,
		       o.currency, o.numbers, o.seats, o.created_at, o.confirmed_at, o.refunded_cents,
		       coalesce((SELECT status FROM payment_attempts a WHERE a.order_id = o.id ORDER BY a.created_at DESC LIMIT 1), ''),
		       o.fee_cents, o.discount_cents, coalesce(o.discount_code, '')
		FROM orders o
		WHERE o.id = $1 AND o.tenant_id = $2 AND ($3 = '' OR o.buyer_id = $3)`, id, tenantID, buyerID).
		Scan(&o.ID, &o.HoldID, &o.ProductID, &o.Status, &o.Reason, &o.CaptureStatus, &o.AmountCents, &o.Currency,
			&o.Numbers, &o.Seats, &o.CreatedAt, &o.ConfirmedAt, &o.RefundedCents, &o.Payment, &o.FeeCents,
			&o.DiscountCents, &o.DiscountCode)
	if err != nil {
		return nil, fmt.Errorf("get order %s: %w", id, db.NotFound(err))
	}
	o.Ref = db.ShortRef(o.ID)
	if o.Seats, err = seatsOf(ctx, s.pool, o.ProductID, o.Numbers, o.Seats); err != nil {
		return nil, err
	}
	if o.ConfirmedAt != nil {
		rows, err := s.pool.Query(ctx, `
			SELECT id, number, label, status, coalesce(holder_email, '') FROM tickets WHERE order_id = $1
			ORDER BY number, issued_at`, id)
		if err != nil {
			return nil, fmt.Errorf("tickets of %s: %w", id, err)
		}
		o.Tickets, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Ticket, error) {
			var t Ticket
			err := row.Scan(&t.ID, &t.Number, &t.Seat, &t.Status, &t.HeldBy)
			// Only a ticket that admits shows its code, and to the buyer
			// only while it is theirs: a ticket they gave away is the
			// receiver's (whose code the giver never sees).
			if t.Status == ticketValid && admits(o.Status) && (t.HeldBy == "" || buyerID == "") {
				t.Code = s.tickets.Code(t.ID, o.ProductID, t.Number)
			}
			return t, err
		})
		if err != nil {
			return nil, fmt.Errorf("tickets of %s: %w", id, err)
		}
	}
	return &o, nil
}

// checkPaused refuses new orders while checkout is paused, and pauses it
// when too many payment outcomes are unresolved. The shopper is told the
// pause's shopper message (or DefaultPauseMessage), never its reason.
func (s *Service) checkPaused(ctx context.Context) error {
	var paused bool
	var message *string
	var unknown int
	err := s.pool.QueryRow(ctx, `
		SELECT paused, shopper_message, (SELECT count(*) FROM payment_attempts WHERE status = 'UNKNOWN')
		FROM checkout_control`).Scan(&paused, &message, &unknown)
	if err != nil {
		return fmt.Errorf("checkout state: %w", err)
	}
	if !paused && unknown >= s.cfg.PauseAfterUnknown {
		r := fmt.Sprintf("paused automatically: %d payment outcomes unresolved", unknown)
		if err := s.SetPaused(ctx, true, r, ""); err != nil {
			return err
		}
		s.logger.WarnContext(ctx, "checkout paused", "unknown_payments", unknown)
		paused = true
	}
	if paused {
		msg := DefaultPauseMessage
		if message != nil && *message != "" {
			msg = *message
		}
		return &PausedError{Message: msg}
	}
	return nil
}

// DefaultPauseMessage is what shoppers are told while checkout is paused
// when the operator gave them no message of their own.
const DefaultPauseMessage = "Payments are paused for a moment. Your seats stay held: please try again in a few minutes."

// PausedError is a new order refused while checkout is paused; its message
// is for the shopper. It is ErrCheckoutPaused.
type PausedError struct{ Message string }

func (e *PausedError) Error() string { return e.Message }

// Is makes a PausedError ErrCheckoutPaused.
func (e *PausedError) Is(target error) bool { return target == ErrCheckoutPaused }

// SetPaused pauses or resumes checkout: reason is for operators,
// shopperMessage (optional) for shoppers; resuming clears both.
func (s *Service) SetPaused(ctx context.Context, paused bool, reason, shopperMessage string) error {
	if !paused {
		reason, shopperMessage = "", ""
	}
	_, err := s.pool.Exec(ctx, `UPDATE checkout_control SET paused = $1, reason = $2, shopper_message = $3, updated_at = now()`,
		paused, nullable(reason), nullable(shopperMessage))
	if err != nil {
		return fmt.Errorf("set checkout paused: %w", err)
	}
	return nil
}

// Paused reports whether checkout is paused and why.
func (s *Service) Paused(ctx context.Context) (bool, string, error) { return Paused(ctx, s.pool) }

// Paused reports whether checkout is paused and why (for readers without a
// Service: the operators' gauges and live view).
func Paused(ctx context.Context, q db.DBTX) (bool, string, error) {
	var paused bool
	var reason *string
	if err := q.QueryRow(ctx, `SELECT paused, reason FROM checkout_control`).Scan(&paused, &reason); err != nil {
		return false, "", fmt.Errorf("checkout state: %w", err)
	}
	if reason == nil {
		return paused, "", nil
	}
	return paused, *reason, nil
}

// ListForBuyer returns a buyer's orders, newest first, at most limit.
func (s *Service) ListForBuyer(ctx context.Context, tenantID uuid.UUID, buyerID string, limit int) ([]*Order, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM orders WHERE tenant_id = $1 AND buyer_id = $2 ORDER BY created_at DESC, id LIMIT $3`,
		tenantID, buyerID, limit)
	if err != nil {
		return nil, fmt.Errorf("orders of buyer: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("orders of buyer: %w", err)
	}
	out := make([]*Order, 0, len(ids))
	for _, id := range ids {
		o, err := s.Get(ctx, tenantID, id, buyerID)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// TicketCode returns the code of a ticket the buyer holds, while its order
// is confirmed (db.ErrNotFound otherwise: another buyer's ticket is no
// ticket to this one).
func (s *Service) TicketCode(ctx context.Context, tenantID uuid.UUID, buyerID string, ticketID uuid.UUID) (string, error) {
	var productID uuid.UUID
	var number int32
	err := s.pool.QueryRow(ctx, `
		SELECT t.product_id, t.number FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE t.id = $1 AND o.tenant_id = $2 AND coalesce(t.holder_buyer_id, o.buyer_id) = $3 AND t.status = 'VALID'
		  AND o.status IN ('CONFIRMED', 'REFUND_PENDING', 'REFUND_FAILED')`,
		ticketID, tenantID, buyerID).Scan(&productID, &number)
	if err != nil {
		return "", fmt.Errorf("ticket %s: %w", ticketID, db.NotFound(err))
	}
	return s.tickets.Code(ticketID, productID, number), nil
}
