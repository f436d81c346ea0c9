package checkout

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// OrderSummary is an order in a tenant admin's search results.
type OrderSummary struct {
	ID            uuid.UUID  `json:"id"`
	Ref           string     `json:"ref" db:"-" doc:"The order's short reference, as its e-mails print it"`
	ProductID     uuid.UUID  `json:"productId"`
	Product       string     `json:"product" db:"-" doc:"The product's name (an event's dates share it)"`
	StartsAt      *time.Time `json:"startsAt,omitempty" db:"-" doc:"When the product's date begins; absent while it is to be announced"`
	BuyerID       string     `json:"buyerId"`
	Email         string     `json:"email,omitempty"`
	Status        string     `json:"status"`
	CaptureStatus string     `json:"captureStatus"`
	AmountCents   int64      `json:"amountCents"`
	Currency      string     `json:"currency"`
	Numbers       []int32    `json:"numbers"`
	Seats         []string   `json:"seats"`
	CreatedAt     time.Time  `json:"createdAt"`
	ConfirmedAt   *time.Time `json:"confirmedAt,omitempty"`
	RefundedCents int64      `json:"refundedCents"`
}

// Search finds a tenant's orders by one free-text query: an order id, an
// order's short reference (as its e-mails print it), an e-mail address, a
// buyer id, a number, or a seat as printed ("Row A · Seat 7" or part of
// it); newest first, at most limit.
func (s *Service) Search(ctx context.Context, tenantID uuid.UUID, query string, limit int) ([]OrderSummary, error) {
	query = strings.TrimSpace(query)
	var orderID *uuid.UUID
	if id, err := uuid.Parse(query); err == nil {
		orderID = &id
	}
	var ref *string
	if isShortRef(query) {
		r := strings.ToLower(query)
		ref = &r
	}
	var number *int32
	if n, err := strconv.ParseInt(query, 10, 32); err == nil {
		v := int32(n)
		number = &v
	}
	// An empty query lists the newest orders.
	rows, err := s.pool.Query(ctx, `
		SELECT id, product_id, buyer_id, coalesce(email, ''), status, capture_status, amount_cents, currency,
		       numbers, seats, created_at, confirmed_at, refunded_cents
		FROM orders
		WHERE tenant_id = $1 AND ($2 = '' OR id = $3 OR right(id::text, 8) = $6 OR lower(email) = lower($2) OR buyer_id = $2
		      OR $4 = ANY(numbers) OR EXISTS (SELECT 1 FROM unnest(seats) s WHERE s ILIKE '%' || $2 || '%'))
		ORDER BY created_at DESC, id LIMIT $5`, tenantID, query, orderID, number, limit, ref)
	if err != nil {
		return nil, fmt.Errorf("search orders: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[OrderSummary])
	if err != nil {
		return nil, fmt.Errorf("search orders: %w", err)
	}
	if out == nil {
		out = []OrderSummary{}
	}
	for i := range out {
		out[i].Ref = db.ShortRef(out[i].ID)
	}
	return out, nil
}

// isShortRef says whether a query has the form of an order's short
// reference: eight hex digits.
func isShortRef(q string) bool {
	_, err := hex.DecodeString(q)
	return len(q) == 8 && err == nil
}

// Timeline is everything that happened to an order's payment, oldest
// first, with its tickets and their check-ins.
type Timeline struct {
	Order   OrderSummary    `json:"order"`
	Reason  string          `json:"reason,omitempty"`
	Events  []TimelineEvent `json:"events"`
	Tickets []AdminTicket   `json:"tickets"`
	Refunds []Refund        `json:"refunds"`
	// Transfers are the order's tickets handed on, oldest first.
	Transfers []Transfer `json:"transfers"`
}

// TimelineEvent is one step: the order's, a payment attempt's or a
// provider webhook's.
type TimelineEvent struct {
	At     time.Time `json:"at"`
	Source string    `json:"source" enum:"order,attempt,webhook,tickets,refund,transfer"`
	What   string    `json:"what"`
	Detail string    `json:"detail,omitempty"`
}

// AdminTicket is a ticket as the tenant admin sees it: with its code (to
// check it in at the gate) and its check-in.
type AdminTicket struct {
	ID          uuid.UUID  `json:"id"`
	Number      int32      `json:"number"`
	Seat        string     `json:"seat"`
	Status      string     `json:"status" enum:"VALID,VOID,TRANSFERRED"`
	Code        string     `json:"code"`
	CheckedInAt *time.Time `json:"checkedInAt,omitempty"`
	CheckedInBy string     `json:"checkedInBy,omitempty"`
	HeldBy      string     `json:"heldBy,omitempty" doc:"The address it was transferred to, when not the order's buyer's"`
}

// Money writes an amount in minor units for people: 17800 EUR is
// "178.00 EUR" (currencies without minor units are not sold here).
func Money(cents int64, currency string) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d %s", sign, cents/100, cents%100, currency)
}

// OrderTimeline reads a tenant's order with its payment history.
func (s *Service) OrderTimeline(ctx context.Context, tenantID, orderID uuid.UUID) (*Timeline, error) {
	var t Timeline
	o := &t.Order
	var updated time.Time
	var sent *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT id, product_id, buyer_id, coalesce(email, ''), status, capture_status, amount_cents, currency,
		       numbers, seats, created_at, confirmed_at, refunded_cents, coalesce(reason, ''), updated_at, tickets_sent_at
		FROM orders WHERE id = $1 AND tenant_id = $2`, orderID, tenantID).
		Scan(&o.ID, &o.ProductID, &o.BuyerID, &o.Email, &o.Status, &o.CaptureStatus, &o.AmountCents, &o.Currency,
			&o.Numbers, &o.Seats, &o.CreatedAt, &o.ConfirmedAt, &o.RefundedCents, &t.Reason, &updated, &sent)
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", orderID, db.NotFound(err))
	}
	o.Ref = db.ShortRef(o.ID)
	t.Events = append(t.Events, TimelineEvent{At: o.CreatedAt, Source: "order", What: "created",
		Detail: fmt.Sprintf("%s for %s", Money(o.AmountCents, o.Currency), strings.Join(o.Seats, ", "))})
	if o.ConfirmedAt != nil {
		t.Events = append(t.Events, TimelineEvent{At: *o.ConfirmedAt, Source: "order", What: "CONFIRMED"})
	}
	if sent != nil {
		t.Events = append(t.Events, TimelineEvent{At: *sent, Source: "tickets", What: "sent", Detail: o.Email})
	}
	if o.Status != StatusConfirmed && o.Status != StatusPending && o.Status != "AUTHORIZED" {
		t.Events = append(t.Events, TimelineEvent{At: updated, Source: "order", What: o.Status, Detail: t.Reason})
	}
	if o.CaptureStatus != "NONE" {
		t.Events = append(t.Events, TimelineEvent{At: updated, Source: "order", What: "capture " + o.CaptureStatus})
	}

	rows, err := s.pool.Query(ctx, `
		SELECT provider, provider_key, coalesce(provider_payment_id, ''), payment_method, status,
		       coalesce(last_error, ''), created_at, updated_at
		FROM payment_attempts WHERE order_id = $1 ORDER BY created_at`, orderID)
	if err != nil {
		return nil, fmt.Errorf("payment attempts of %s: %w", orderID, err)
	}
	var provider, key, paymentID, method, status, lastErr string
	var created, changed time.Time
	var keys, paymentIDs []string
	_, err = pgx.ForEachRow(rows, []any{&provider, &key, &paymentID, &method, &status, &lastErr, &created, &changed}, func() error {
		t.Events = append(t.Events, TimelineEvent{At: created, Source: "attempt", What: "authorize at " + provider,
			Detail: method + " · key " + key})
		detail := lastErr
		if paymentID != "" {
			detail = strings.TrimSpace("payment " + paymentID + " " + lastErr)
		}
		t.Events = append(t.Events, TimelineEvent{At: changed, Source: "attempt", What: status, Detail: detail})
		keys = append(keys, key)
		if paymentID != "" {
			paymentIDs = append(paymentIDs, paymentID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("payment attempts of %s: %w", orderID, err)
	}

	rows, err = s.pool.Query(ctx, `
		SELECT provider, event_id, type, received_at, processed_at FROM webhook_events
		WHERE payment_key = ANY($1) OR payment_id = ANY($2) ORDER BY received_at`, keys, paymentIDs)
	if err != nil {
		return nil, fmt.Errorf("webhooks of %s: %w", orderID, err)
	}
	var eventID, typ string
	var received time.Time
	var processed *time.Time
	_, err = pgx.ForEachRow(rows, []any{&provider, &eventID, &typ, &received, &processed}, func() error {
		detail := provider + " event " + eventID
		if processed == nil {
			detail += " (not processed yet)"
		}
		t.Events = append(t.Events, TimelineEvent{At: received, Source: "webhook", What: typ, Detail: detail})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhooks of %s: %w", orderID, err)
	}
	if t.Refunds, err = s.refundsOf(ctx, orderID); err != nil {
		return nil, err
	}
	for _, r := range t.Refunds {
		t.Events = append(t.Events, TimelineEvent{At: r.CreatedAt, Source: "refund", What: "REFUND_PENDING",
			Detail: fmt.Sprintf("%s for %s · %s · by %s · key %s", Money(r.AmountCents, r.Currency), joinNumbers(r.Numbers),
				r.Reason, r.RequestedBy, r.ProviderKey)})
		switch {
		case r.RefundedAt != nil:
			detail := "at the provider"
			if r.SettledByHand != "" {
				detail = "settled by hand: " + r.SettledByHand
			}
			t.Events = append(t.Events, TimelineEvent{At: *r.RefundedAt, Source: "refund", What: StatusRefunded, Detail: detail})
		case r.Status == StatusRefundFailed:
			t.Events = append(t.Events, TimelineEvent{At: updated, Source: "refund", What: StatusRefundFailed, Detail: r.LastError})
		}
	}
	if t.Transfers, err = s.transfersOf(ctx, orderID); err != nil {
		return nil, err
	}
	for _, x := range t.Transfers {
		t.Events = append(t.Events, TimelineEvent{At: x.CreatedAt, Source: "transfer", What: ticketTransferred,
			Detail: fmt.Sprintf("%s to %s · new ticket %s", x.Seat, x.ToEmail, x.ToTicketID)})
	}
	sortEvents(t.Events)

	rows, err = s.pool.Query(ctx, `
		SELECT id, product_id, number, coalesce(label, ''), status, checked_in_at, coalesce(checked_in_by, ''),
		       coalesce(holder_email, '')
		FROM tickets WHERE order_id = $1 ORDER BY number, issued_at`, orderID)
	if err != nil {
		return nil, fmt.Errorf("tickets of %s: %w", orderID, err)
	}
	t.Tickets, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (AdminTicket, error) {
		var a AdminTicket
		var productID uuid.UUID
		err := row.Scan(&a.ID, &productID, &a.Number, &a.Seat, &a.Status, &a.CheckedInAt, &a.CheckedInBy, &a.HeldBy)
		a.Code = s.tickets.Code(a.ID, productID, a.Number) // derived: no code is stored
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("tickets of %s: %w", orderID, err)
	}
	if t.Tickets == nil {
		t.Tickets = []AdminTicket{}
	}
	return &t, nil
}

// joinNumbers writes numbers for people: "number 7", "numbers 7, 8".
func joinNumbers(ns []int32) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(int(n))
	}
	if len(ns) == 1 {
		return "number " + parts[0]
	}
	return "numbers " + strings.Join(parts, ", ")
}

// sortEvents orders by time; stable, so an attempt's creation stays before
// its outcome at equal times.
func sortEvents(ev []TimelineEvent) {
	slices.SortStableFunc(ev, func(a, b TimelineEvent) int { return a.At.Compare(b.At) })
}
