package checkout

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// AttendeeColumns head the attendees export: one line per ticket, with its
// order, so a box office can both check a list at the door and reconcile
// money.
var AttendeeColumns = []string{"order_id", "order_status", "buyer_id", "email", "ticket_id", "number", "seat",
	"ticket_status", "checked_in_at", "order_amount_cents", "order_refunded_cents", "currency", "ordered_at", "confirmed_at"}

// ExportAttendees writes a product's tickets with their orders as CSV
// (AttendeeColumns), in order of purchase: every ticket ever issued,
// refunded ones included with their state.
func (s *Service) ExportAttendees(ctx context.Context, tenantID, productID uuid.UUID, w io.Writer) error {
	rows, err := s.pool.Query(ctx, `
		SELECT o.id, o.status, o.buyer_id, coalesce(o.email, ''), t.id, t.number, t.label, t.status, t.checked_in_at,
		       o.amount_cents, o.refunded_cents, o.currency, o.created_at, o.confirmed_at
		FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE o.tenant_id = $1 AND o.product_id = $2
		ORDER BY o.confirmed_at, o.id, t.number, t.issued_at`, tenantID, productID)
	if err != nil {
		return fmt.Errorf("export attendees: %w", err)
	}
	out := csv.NewWriter(w)
	if err := out.Write(AttendeeColumns); err != nil {
		rows.Close()
		return err
	}
	var orderID, ticketID uuid.UUID
	var status, buyer, email, seat, ticketStatus, currency string
	var number int32
	var checkedIn, confirmed *time.Time
	var amount, refunded int64
	var created time.Time
	stamp := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	_, err = pgx.ForEachRow(rows, []any{&orderID, &status, &buyer, &email, &ticketID, &number, &seat, &ticketStatus,
		&checkedIn, &amount, &refunded, &currency, &created, &confirmed}, func() error {
		return out.Write([]string{orderID.String(), status, buyer, email, ticketID.String(), strconv.Itoa(int(number)),
			seat, ticketStatus, stamp(checkedIn), strconv.FormatInt(amount, 10), strconv.FormatInt(refunded, 10), currency,
			stamp(&created), stamp(confirmed)})
	})
	if err != nil {
		return fmt.Errorf("export attendees: %w", err)
	}
	out.Flush()
	return out.Error()
}

// ResendTickets mails an order's tickets again, at a tenant admin's
// request (a buyer who lost the mail): the tickets that still admit, to the
// order's address, as a new message.
func (s *Service) ResendTickets(ctx context.Context, tenantID, orderID uuid.UUID) error {
	var status string
	err := s.pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1 AND tenant_id = $2`, orderID, tenantID).Scan(&status)
	if err != nil {
		return fmt.Errorf("order %s: %w", orderID, db.NotFound(err))
	}
	if !admits(status) {
		return fmt.Errorf("%w: the order is %s", ErrNoTicketsToSend, status)
	}
	_, err = s.river.Insert(ctx, SendTicketsArgs{OrderID: orderID, Resend: time.Now().UnixNano()}, nil)
	if err != nil {
		return fmt.Errorf("enqueue resend: %w", err)
	}
	return nil
}

// ErrNoTicketsToSend refuses to resend the tickets of an order that has
// none that admit.
var ErrNoTicketsToSend = errors.New("the order has no tickets to send")
