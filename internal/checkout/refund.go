package checkout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/letter"
	"boxoffice/internal/outbox"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// Order statuses of undoing a sale.
const (
	StatusRefundPending = "REFUND_PENDING"
	StatusRefundFailed  = "REFUND_FAILED"
	StatusCancelled     = "CANCELLED"
)

// Refund statuses (a refund row's own).
const (
	RefundPending  = "PENDING"  // asked for; the provider has not answered
	RefundUnknown  = "UNKNOWN"  // the provider may have acted: ask with the same key
	RefundDone     = "REFUNDED" // the provider gave the money back
	RefundRefused  = "FAILED"   // the provider refused; retried with the same key or settled by hand
	ticketValid    = "VALID"
	ticketVoid     = "VOID"
	refundKeyPrefx = "ref_"
)

// Errors of a refund, mapped to problems by the API.
var (
	ErrNotRefundable       = errors.New("the order has no valid ticket left to refund")
	ErrRefundInProgress    = errors.New("a refund of this order is already in progress")
	ErrTicketNotRefundable = errors.New("a ticket named is not a valid ticket of this order")
	ErrRefundNotFailed     = errors.New("only a failed refund can be retried or settled by hand")
	ErrNotCaptured         = errors.New("the order's payment is not captured yet")
	ErrCancellationClosed  = errors.New("this order can no longer be cancelled by its buyer")
	ErrNothingToRefund     = errors.New("the cancellation fee leaves nothing to refund")
)

// RefundParams asks to refund an order in full or some of its tickets.
type RefundParams struct {
	TenantID uuid.UUID
	OrderID  uuid.UUID
	// TicketIDs are the tickets to refund; empty: every valid ticket.
	TicketIDs      []uuid.UUID
	Reason         string
	RequestedBy    string
	IdempotencyKey string
	// BuyerID, when set, is the shopper cancelling their own order:
	// every valid ticket, within the product's cancellation window, less
	// its fee; the order ends CANCELLED.
	BuyerID string
	// EventCancelled refunds every valid ticket because the date is
	// cancelled (even a free order, for nothing); the seats stay off sale
	// and the order ends CANCELLED.
	EventCancelled bool
}

// Refund is a refund as the tenant admin sees it.
type Refund struct {
	ID            uuid.UUID   `json:"id"`
	OrderID       uuid.UUID   `json:"orderId"`
	Status        string      `json:"status" enum:"REFUND_PENDING,REFUNDED,REFUND_FAILED" doc:"REFUND_PENDING until the provider's answer is known (an unknown outcome is asked about with the same key); REFUND_FAILED when it refused (retry or settle by hand)"`
	AmountCents   int64       `json:"amountCents"`
	Currency      string      `json:"currency"`
	TicketIDs     []uuid.UUID `json:"ticketIds"`
	Numbers       []int32     `json:"numbers"`
	Reason        string      `json:"reason"`
	RequestedBy   string      `json:"requestedBy"`
	Kind          string      `json:"kind" enum:"REFUND,CANCELLATION,EVENT_CANCELLED" doc:"CANCELLATION: the buyer cancelled their own order; EVENT_CANCELLED: the date was cancelled"`
	FeeCents      int64       `json:"feeCents" doc:"Kept by a cancellation's fee"`
	Resell        bool        `json:"resell" doc:"Whether the seats went back on sale (the product's refund policy when asked)"`
	ProviderKey   string      `json:"providerKey" doc:"The idempotency key every call for this refund uses"`
	LastError     string      `json:"lastError,omitempty"`
	SettledByHand string      `json:"settledByHand,omitempty"`
	CreatedAt     time.Time   `json:"createdAt"`
	RefundedAt    *time.Time  `json:"refundedAt,omitempty"`
}

// refundStatus is how a refund row's status is shown.
func refundStatus(s string) string {
	switch s {
	case RefundDone:
		return StatusRefunded
	case RefundRefused:
		return StatusRefundFailed
	default:
		return StatusRefundPending
	}
}

// RefundArgs calls the provider for a refund (and asks about it when its
// outcome is unknown).
type RefundArgs struct {
	RefundID uuid.UUID `json:"refund_id"`
	// Retry tells an admin's retry from the job that failed, which may
	// still be finishing (jobs are unique by their args while live).
	Retry int64 `json:"retry,omitempty"`
}

func (RefundArgs) Kind() string { return "payment_refund" }

// InsertOpts puts it on the payments queue, unique while live, with room to
// wait for a capture and outlast a provider outage.
func (RefundArgs) InsertOpts() river.InsertOpts {
	o := uniqueWhileLive()
	o.MaxAttempts = 25
	return o
}

// RequestRefund records a refund and enqueues its provider call, in one
// transaction: the tickets are VOID from now on, the order REFUND_PENDING,
// and the seats go back on sale or stay sold by the product's policy
// (through the reservation owner). The same idempotency key answers with
// the same refund (replayed true).
func (s *Service) RequestRefund(ctx context.Context, p RefundParams) (_ *Refund, replayed bool, err error) {
	slices.SortFunc(p.TicketIDs, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	p.TicketIDs = slices.Compact(p.TicketIDs)
	refundID, replayed, err := s.onceByKey(ctx, keyed{
		lookup: `SELECT id, order_id FROM refunds WHERE tenant_id = $1 AND idempotency_key = $2`,
		args:   []any{p.TenantID, p.IdempotencyKey}, subject: p.OrderID, what: "refund",
	}, func(tx pgx.Tx) (uuid.UUID, error) { return s.recordRefund(ctx, tx, p) })
	if err != nil {
		return nil, false, err
	}
	r, err := s.GetRefund(ctx, p.TenantID, refundID)
	return r, replayed, err
}

// recordRefund is RequestRefund's transaction once the key is new.
func (s *Service) recordRefund(ctx context.Context, tx pgx.Tx, p RefundParams) (uuid.UUID, error) {
	var status, currency string
	var productID, holdID uuid.UUID
	var amount, refunded, fees, discount int64
	var confirmed *time.Time
	err := tx.QueryRow(ctx, `
		SELECT status, product_id, hold_id, amount_cents, refunded_cents, currency, confirmed_at, fee_cents, discount_cents
		FROM orders WHERE id = $1 AND tenant_id = $2 AND ($3 = '' OR buyer_id = $3) FOR UPDATE`, p.OrderID, p.TenantID, p.BuyerID).
		Scan(&status, &productID, &holdID, &amount, &refunded, &currency, &confirmed, &fees, &discount)
	if err != nil {
		return uuid.Nil, fmt.Errorf("order %s: %w", p.OrderID, db.NotFound(err))
	}
	switch {
	case status == StatusRefundPending || status == StatusRefundFailed:
		return uuid.Nil, ErrRefundInProgress
	case status != StatusConfirmed || confirmed == nil:
		return uuid.Nil, fmt.Errorf("%w: the order is %s", ErrNotRefundable, status)
	}
	rows, err := tx.Query(ctx, `
		SELECT id, number, holder_buyer_id FROM tickets WHERE order_id = $1 AND status = 'VALID' ORDER BY number FOR UPDATE`,
		p.OrderID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("tickets of %s: %w", p.OrderID, err)
	}
	var ids []uuid.UUID
	var numbers []int32
	var receivedBy []string // the holders of the tickets refunded that were transferred to them
	var id uuid.UUID
	var n int32
	var holder *string
	if _, err := pgx.ForEachRow(rows, []any{&id, &n, &holder}, func() error {
		if p.BuyerID != "" && holder != nil && *holder != p.BuyerID {
			// A buyer cannot take back by cancelling a ticket they gave away.
			return fmt.Errorf("%w: a ticket of the order was transferred to someone else", ErrCancellationClosed)
		}
		if p.BuyerID != "" || p.EventCancelled || len(p.TicketIDs) == 0 || slices.Contains(p.TicketIDs, id) {
			ids, numbers = append(ids, id), append(numbers, n)
			if holder != nil {
				receivedBy = append(receivedBy, *holder)
			}
		}
		return nil
	}); err != nil {
		return uuid.Nil, fmt.Errorf("tickets of %s: %w", p.OrderID, err)
	}
	switch {
	case len(ids) != len(p.TicketIDs) && len(p.TicketIDs) > 0:
		return uuid.Nil, ErrTicketNotRefundable
	case len(ids) == 0:
		return uuid.Nil, ErrNotRefundable
	}
	// Each seat at the price it was sold at (prices cannot change once a
	// number is sold); never more than what is left of the order.
	quote, err := product.QuoteFor(ctx, tx, productID, numbers)
	if err != nil {
		return uuid.Nil, err
	}
	cents := min(quote.Cents-discountShare(discount, quote.Cents-quote.FeeCents, amount-fees+discount), amount-refunded)
	if cents <= 0 && !p.EventCancelled {
		return uuid.Nil, fmt.Errorf("%w: nothing left to refund", ErrNotRefundable)
	}
	kind, fee := "REFUND", int64(0)
	policy, err := product.RefundPolicyOf(ctx, tx, productID)
	if err != nil {
		return uuid.Nil, err
	}
	switch {
	case p.EventCancelled:
		kind, policy = refundKindEventCancelled, product.Keep
	case p.BuyerID != "":
		terms, err := product.CancellationOf(ctx, tx, productID)
		if err != nil {
			return uuid.Nil, err
		}
		if !terms.Open {
			return uuid.Nil, ErrCancellationClosed
		}
		kind, fee = refundKindCancellation, terms.FeeCents*int64(len(ids))
		if cents -= fee; cents <= 0 {
			return uuid.Nil, ErrNothingToRefund
		}
	}
	refundID := db.NewID()
	if _, err := tx.Exec(ctx, `
		INSERT INTO refunds (id, tenant_id, order_id, idempotency_key, amount_cents, currency, ticket_ids, numbers,
		                     reason, requested_by, provider_key, resell, kind, fee_cents)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		refundID, p.TenantID, p.OrderID, p.IdempotencyKey, cents, currency, ids, numbers, p.Reason, p.RequestedBy,
		refundKeyPrefx+refundID.String(), policy == product.Resell, kind, fee); err != nil {
		return uuid.Nil, fmt.Errorf("insert refund: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE tickets SET status = 'VOID', voided_at = now(), refund_id = $2 WHERE id = ANY($1)`,
		ids, refundID); err != nil {
		return uuid.Nil, fmt.Errorf("void tickets: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE id = $1`,
		p.OrderID, StatusRefundPending); err != nil {
		return uuid.Nil, fmt.Errorf("order refund pending: %w", err)
	}
	if _, err := reservation.Refunded(ctx, tx, holdID, numbers, receivedBy, policy == product.Resell); err != nil {
		return uuid.Nil, err
	}
	if err := outbox.Add(ctx, tx, outbox.New{TenantID: p.TenantID, Topic: "order.refund_requested", Payload: map[string]any{
		"orderId": p.OrderID, "refundId": refundID, "amountCents": cents, "numbers": numbers, "reason": p.Reason}}); err != nil {
		return uuid.Nil, err
	}
	if _, err := s.river.InsertTx(ctx, tx, RefundArgs{RefundID: refundID}, nil); err != nil {
		return uuid.Nil, fmt.Errorf("enqueue refund: %w", err)
	}
	return refundID, nil
}

// discountShare is the part of an order's discount that its tickets worth
// part (of the order's tickets worth whole) carry: a refund gives back what
// they were paid, not their full price.
func discountShare(discount, part, whole int64) int64 {
	if discount == 0 || whole <= 0 {
		return 0
	}
	return discount * part / whole
}

// refundCall is what the provider call of a refund needs.
type refundCall struct {
	status, key, provider string
	paymentID             *string
	captured              bool
	amount                int64
}

func (s *Service) loadRefundCall(ctx context.Context, refundID uuid.UUID) (*refundCall, error) {
	var c refundCall
	err := s.pool.QueryRow(ctx, `
		SELECT r.status, r.provider_key, r.amount_cents, a.provider, a.provider_payment_id,
		       a.status IN ('CAPTURED', 'REFUNDED') OR o.capture_status = 'CAPTURED'
		FROM refunds r JOIN orders o ON o.id = r.order_id
		JOIN LATERAL (SELECT * FROM payment_attempts a WHERE a.order_id = o.id
		              AND a.status IN ('AUTHORIZED', 'CAPTURED', 'REFUNDED') ORDER BY a.created_at DESC LIMIT 1) a ON true
		WHERE r.id = $1`, refundID).Scan(&c.status, &c.key, &c.amount, &c.provider, &c.paymentID, &c.captured)
	if err != nil {
		return nil, fmt.Errorf("refund %s: %w", refundID, db.NotFound(err))
	}
	return &c, nil
}

// ProcessRefund is the refund job: one provider call with the refund's own
// key, no lock held. An outcome already unknown is asked about first (found:
// applied; not found: it never happened, so the same call is made again), so
// a refund is never made twice. A payment not captured yet waits
// (ErrNotCaptured: the worker snoozes).
func (s *Service) ProcessRefund(ctx context.Context, refundID uuid.UUID) error {
	c, err := s.loadRefundCall(ctx, refundID)
	if err != nil {
		return err
	}
	provider := s.providerOf(c.provider)
	switch c.status {
	case RefundDone, RefundRefused:
		return nil
	case RefundUnknown:
		r, err := provider.GetRefund(ctx, c.key)
		switch {
		case err == nil:
			return s.applyRefund(ctx, refundID, r, nil)
		case !errors.Is(err, payment.ErrNotFound):
			return fmt.Errorf("ask about refund %s: %w", refundID, err)
		}
		// Not found: the refund never happened; make it now, same key.
	}
	if c.amount == 0 {
		// A free order of a cancelled date: nothing to give back.
		return s.applyRefund(ctx, refundID, payment.Refund{Status: payment.RefundSucceeded}, nil)
	}
	if !c.captured || c.paymentID == nil {
		return ErrNotCaptured
	}
	r, err := provider.Refund(ctx, payment.RefundRequest{PaymentID: *c.paymentID, Key: c.key, AmountCents: c.amount})
	switch {
	case err == nil:
		return s.applyRefund(ctx, refundID, r, nil)
	case errors.Is(err, payment.ErrRateLimited):
		return err // nothing happened: River retries the same call later
	case payment.IsDefinitive(err):
		return s.applyRefund(ctx, refundID, payment.Refund{Status: payment.RefundFailed}, err)
	default:
		s.metrics.PaymentEvent("refund_unknown")
		s.logger.WarnContext(ctx, "refund outcome unknown", "refund", refundID, "error", err)
		if _, dbErr := s.pool.Exec(ctx, `
			UPDATE refunds SET status = 'UNKNOWN', last_error = $2, updated_at = now()
			WHERE id = $1 AND status IN ('PENDING', 'UNKNOWN')`, refundID, err.Error()); dbErr != nil {
			return dbErr
		}
		return fmt.Errorf("refund %s: %w", refundID, err) // retried: the next run asks first
	}
}

// applyRefund records the provider's definitive word on a refund, once:
// REFUNDED adds to the order's refunded amount (the order is REFUNDED when
// no valid ticket is left, else CONFIRMED again); FAILED makes the order
// REFUND_FAILED for the admin to retry or settle.
func (s *Service) applyRefund(ctx context.Context, refundID uuid.UUID, r payment.Refund, cause error) error {
	return db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		var status, reason string
		var orderID, tenantID uuid.UUID
		var amount int64
		err := tx.QueryRow(ctx, `SELECT status, order_id, tenant_id, amount_cents, reason FROM refunds WHERE id = $1 FOR UPDATE`,
			refundID).Scan(&status, &orderID, &tenantID, &amount, &reason)
		if err != nil {
			return fmt.Errorf("refund %s: %w", refundID, db.NotFound(err))
		}
		if status == RefundDone || status == RefundRefused {
			return nil
		}
		if r.Status != payment.RefundSucceeded {
			detail := r.FailureReason
			if cause != nil {
				detail = cause.Error()
			}
			s.metrics.PaymentEvent("refund_failed")
			if _, err := tx.Exec(ctx, `UPDATE refunds SET status = 'FAILED', last_error = $2, updated_at = now() WHERE id = $1`,
				refundID, detail); err != nil {
				return fmt.Errorf("refund failed: %w", err)
			}
			_, err := tx.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE id = $1`, orderID, StatusRefundFailed)
			return err
		}
		s.metrics.PaymentEvent("refunded")
		if _, err := tx.Exec(ctx, `
			UPDATE refunds SET status = 'REFUNDED', provider_refund_id = $2, refunded_at = now(), updated_at = now()
			WHERE id = $1`, refundID, nullable(r.ID)); err != nil {
			return fmt.Errorf("refund done: %w", err)
		}
		return s.refundDone(ctx, tx, orderID, tenantID, refundID, amount, reason)
	})
}

// refundDone moves the order on once a refund has given money back.
func (s *Service) refundDone(ctx context.Context, tx pgx.Tx, orderID, tenantID, refundID uuid.UUID, amount int64, reason string) error {
	var status string
	err := tx.QueryRow(ctx, `
		UPDATE orders SET refunded_cents = refunded_cents + $2, updated_at = now(),
		       status = CASE WHEN (SELECT kind FROM refunds WHERE id = $3) IN ('CANCELLATION', 'EVENT_CANCELLED') THEN 'CANCELLED'
		                     WHEN EXISTS (SELECT 1 FROM tickets WHERE order_id = $1 AND status = 'VALID') THEN 'CONFIRMED'
		                     ELSE 'REFUNDED' END
		WHERE id = $1 RETURNING status`, orderID, amount, refundID).Scan(&status)
	if err != nil {
		return fmt.Errorf("order refunded: %w", err)
	}
	return outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "order.refunded", Payload: map[string]any{
		"orderId": orderID, "refundId": refundID, "amountCents": amount, "orderStatus": status, "reason": reason}})
}

// RetryRefund sends a failed refund to the provider again, with the same
// key (so a refund the provider did make after all is never made twice).
func (s *Service) RetryRefund(ctx context.Context, tenantID, refundID uuid.UUID) (*Refund, error) {
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		orderID, err := lockFailedRefund(ctx, tx, tenantID, refundID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE refunds SET status = 'PENDING', updated_at = now() WHERE id = $1`, refundID); err != nil {
			return fmt.Errorf("retry refund: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE id = $1`, orderID, StatusRefundPending); err != nil {
			return fmt.Errorf("retry refund: %w", err)
		}
		_, err = s.river.InsertTx(ctx, tx, RefundArgs{RefundID: refundID, Retry: time.Now().UnixNano()}, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.GetRefund(ctx, tenantID, refundID)
}

// SettleRefund records that a failed refund was paid back outside the
// provider (by hand), with a note saying how.
func (s *Service) SettleRefund(ctx context.Context, tenantID, refundID uuid.UUID, note string) (*Refund, error) {
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		orderID, err := lockFailedRefund(ctx, tx, tenantID, refundID)
		if err != nil {
			return err
		}
		var amount int64
		var reason string
		if err := tx.QueryRow(ctx, `
			UPDATE refunds SET status = 'REFUNDED', settled_by_hand = $2, refunded_at = now(), updated_at = now()
			WHERE id = $1 RETURNING amount_cents, reason`, refundID, note).Scan(&amount, &reason); err != nil {
			return fmt.Errorf("settle refund: %w", err)
		}
		return s.refundDone(ctx, tx, orderID, tenantID, refundID, amount, reason)
	})
	if err != nil {
		return nil, err
	}
	return s.GetRefund(ctx, tenantID, refundID)
}

// lockFailedRefund locks a tenant's refund (and its order) and checks that
// it failed.
func lockFailedRefund(ctx context.Context, tx pgx.Tx, tenantID, refundID uuid.UUID) (uuid.UUID, error) {
	var orderID uuid.UUID
	var status string
	err := tx.QueryRow(ctx, `
		SELECT r.order_id, r.status FROM refunds r JOIN orders o ON o.id = r.order_id
		WHERE r.id = $1 AND r.tenant_id = $2 FOR UPDATE OF r, o`, refundID, tenantID).Scan(&orderID, &status)
	if err != nil {
		return uuid.Nil, fmt.Errorf("refund %s: %w", refundID, db.NotFound(err))
	}
	if status != RefundRefused {
		return uuid.Nil, ErrRefundNotFailed
	}
	return orderID, nil
}

const selectRefund = `
	SELECT id, order_id, status, amount_cents, currency, ticket_ids, numbers, reason, requested_by, resell,
	       provider_key, coalesce(last_error, ''), coalesce(settled_by_hand, ''), created_at, refunded_at, kind, fee_cents
	FROM refunds`

func scanRefund(row pgx.CollectableRow) (Refund, error) {
	var r Refund
	err := row.Scan(&r.ID, &r.OrderID, &r.Status, &r.AmountCents, &r.Currency, &r.TicketIDs, &r.Numbers, &r.Reason,
		&r.RequestedBy, &r.Resell, &r.ProviderKey, &r.LastError, &r.SettledByHand, &r.CreatedAt, &r.RefundedAt, &r.Kind,
		&r.FeeCents)
	r.Status = refundStatus(r.Status)
	return r, err
}

// GetRefund returns a tenant's refund.
func (s *Service) GetRefund(ctx context.Context, tenantID, refundID uuid.UUID) (*Refund, error) {
	rows, err := s.pool.Query(ctx, selectRefund+` WHERE id = $1 AND tenant_id = $2`, refundID, tenantID)
	if err != nil {
		return nil, fmt.Errorf("refund %s: %w", refundID, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRefund)
	if err != nil {
		return nil, fmt.Errorf("refund %s: %w", refundID, db.NotFound(err))
	}
	return &r, nil
}

// refundsOf returns an order's refunds, oldest first.
func (s *Service) refundsOf(ctx context.Context, orderID uuid.UUID) ([]Refund, error) {
	rows, err := s.pool.Query(ctx, selectRefund+` WHERE order_id = $1 ORDER BY created_at, id`, orderID)
	if err != nil {
		return nil, fmt.Errorf("refunds of %s: %w", orderID, err)
	}
	out, err := pgx.CollectRows(rows, scanRefund)
	if err != nil {
		return nil, fmt.Errorf("refunds of %s: %w", orderID, err)
	}
	if out == nil {
		out = []Refund{}
	}
	return out, nil
}

// ReconcileRefunds enqueues the refund job of refunds left PENDING or
// UNKNOWN for longer than ResolveAfter (a job River gave up on, or lost
// with its process): the job asks before it acts, so this is always safe.
func (s *Service) ReconcileRefunds(ctx context.Context) (int, error) {
	ids, err := s.ids(ctx, `
		SELECT id FROM refunds WHERE status IN ('PENDING', 'UNKNOWN') AND updated_at < now() - make_interval(secs => $1)
		ORDER BY updated_at LIMIT 500`, s.cfg.ResolveAfter.Seconds())
	if err != nil {
		return 0, err
	}
	return s.enqueueEach(ctx, ids, func(id uuid.UUID) river.JobArgs { return RefundArgs{RefundID: id} }, "refunds")
}

// SendRefundNoticeArgs tells a buyer about a refund that was made.
type SendRefundNoticeArgs struct {
	RefundID uuid.UUID `json:"refund_id"`
}

func (SendRefundNoticeArgs) Kind() string { return "send_refund_notice" }

// InsertOpts makes it unique per refund while live.
func (SendRefundNoticeArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SendRefundNotice mails the buyer that a refund was made, once: the refund
// records when (a crash between sending and recording sends it again, with
// the same Message-ID).
func (s *Service) SendRefundNotice(ctx context.Context, refundID uuid.UUID) error {
	if s.mailer == nil {
		return nil
	}
	var email *string
	var notified *time.Time
	var orderID, productID, tenantID uuid.UUID
	var amount, refunded, total, fee int64
	var currency, reason, orderStatus, kind string
	var numbers []int32
	err := s.pool.QueryRow(ctx, `
		SELECT o.email, r.notified_at, o.id, o.product_id, o.tenant_id, r.amount_cents, o.refunded_cents, o.amount_cents,
		       r.fee_cents, r.currency, r.reason, o.status, r.numbers, r.kind
		FROM refunds r JOIN orders o ON o.id = r.order_id
		WHERE r.id = $1 AND r.status = 'REFUNDED'`, refundID).
		Scan(&email, &notified, &orderID, &productID, &tenantID, &amount, &refunded, &total, &fee, &currency, &reason,
			&orderStatus, &numbers, &kind)
	if err != nil {
		return fmt.Errorf("refund %s to notify: %w", refundID, db.NotFound(err))
	}
	// A cancelled date's buyers get one mail from the cancellation instead.
	if email == nil || notified != nil || kind == refundKindEventCancelled {
		return nil
	}
	name, err := product.NameOf(ctx, s.pool, productID)
	if err != nil {
		return err
	}
	quote, err := product.QuoteFor(ctx, s.pool, productID, numbers)
	if err != nil {
		return err
	}
	brand, err := s.brandOf(ctx, tenantID)
	if err != nil {
		return err
	}
	w := brand.Words
	c := letter.Content{Subject: w.T("refundSubject", "event", name), Heading: w.T("refundHeading"),
		Intro: []string{w.T("refundIntro", "amount", w.Money(amount, currency), "event", name)}}
	for _, seat := range quote.Seats {
		c.Lines = append(c.Lines, letter.Fact{Label: seat, Value: w.T("refundedSeat")})
	}
	c.Facts = append(c.Facts, letter.Fact{Label: w.T("order"), Value: db.ShortRef(orderID)})
	// The buyer's own cancellation is said in the store's language, not
	// with the reason recorded for the organiser.
	if kind == refundKindCancellation {
		reason = w.T("youCancelled")
	}
	if reason != "" {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("reason"), Value: reason})
	}
	if fee > 0 {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("cancelFee"), Value: w.Money(fee, currency)})
	}
	if orderStatus == StatusConfirmed {
		c.Intro = append(c.Intro, w.T("refundSoFar", "refunded", w.Money(refunded, currency), "total", w.Money(total, currency)))
	}
	c.Button = orderButton(brand, orderID)
	l, err := brand.Compose(*email, c)
	if err != nil {
		return err
	}
	if err := s.mailer.Deliver("refund-"+refundID.String(), l); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE refunds SET notified_at = now() WHERE id = $1`, refundID)
	return err
}
