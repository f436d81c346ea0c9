package checkout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/ticket"
)

// SendTicketsArgs mails a confirmed order's tickets.
type SendTicketsArgs struct {
	OrderID uuid.UUID `json:"order_id"`
}

func (SendTicketsArgs) Kind() string { return "send_tickets" }

// InsertOpts makes it unique per order while live.
func (SendTicketsArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SendTickets mails the tickets of a confirmed order once: the order records
// when they were sent, so a retried job does not send them again (a crash
// between sending and recording can still send twice: at least once).
func (s *Service) SendTickets(ctx context.Context, orderID uuid.UUID) error {
	if s.mailer == nil {
		return nil
	}
	var email *string
	var sent *time.Time
	var tenantID, productID uuid.UUID
	err := s.pool.QueryRow(ctx, `
		SELECT email, tickets_sent_at, tenant_id, product_id
		FROM orders WHERE id = $1 AND status = 'CONFIRMED'`, orderID).Scan(&email, &sent, &tenantID, &productID)
	if err != nil {
		return fmt.Errorf("order %s for tickets: %w", orderID, db.NotFound(err))
	}
	if email == nil || sent != nil {
		return nil
	}
	productName, err := product.NameOf(ctx, s.pool, productID)
	if err != nil {
		return err
	}
	o, err := s.Get(ctx, tenantID, orderID, "")
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Your tickets for %s\n\nOrder %s\n\n", productName, orderID)
	for _, t := range o.Tickets {
		fmt.Fprintf(&b, "  %s   code %s\n", t.Seat, t.Code)
	}
	b.WriteString("\nShow the code at the entrance; it can be checked with GET /v1/tickets/verify?code=...\n")
	// One Message-ID per order's tickets, whoever sends them and however
	// often (at least once: a crash before the mark below, or a restore
	// replaying the outbox, sends them again).
	if err := s.mailer.SendID("tickets-"+orderID.String(), *email, "Your tickets: "+productName, b.String()); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE orders SET tickets_sent_at = now() WHERE id = $1`, orderID)
	return err
}

// VerifiedTicket is a ticket whose code checked out.
type VerifiedTicket struct {
	Valid     bool      `json:"valid"`
	OrderID   uuid.UUID `json:"orderId,omitzero"`
	ProductID uuid.UUID `json:"productId,omitzero"`
	Number    int32     `json:"number,omitzero"`
	Seat      string    `json:"seat,omitempty" doc:"North · Row A · Seat 7"`
	// CheckedInAt is when the ticket was first scanned at the gate.
	CheckedInAt *time.Time `json:"checkedInAt,omitempty"`
	id          uuid.UUID
}

// VerifyTicket checks a ticket code of the tenant: signed by us, issued, and
// its order still confirmed. It changes nothing; CheckIn admits.
func (s *Service) VerifyTicket(ctx context.Context, tenantID uuid.UUID, code string) (VerifiedTicket, error) {
	return s.ticket(ctx, s.pool, tenantID, code, false)
}

// ticket reads and checks a ticket; forUpdate locks it for a check-in.
func (s *Service) ticket(ctx context.Context, q db.DBTX, tenantID uuid.UUID, code string, forUpdate bool) (VerifiedTicket, error) {
	var v VerifiedTicket
	var status string
	lock := ""
	if forUpdate {
		lock = "FOR UPDATE OF t"
	}
	id, err := ticket.Parse(code)
	if err != nil {
		return VerifiedTicket{}, nil // a malformed code is simply not valid
	}
	err = q.QueryRow(ctx, `
		SELECT t.order_id, t.product_id, t.number, t.label, t.checked_in_at, o.status
		FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE t.id = $1 AND o.tenant_id = $2 `+lock, id, tenantID).
		Scan(&v.OrderID, &v.ProductID, &v.Number, &v.Seat, &v.CheckedInAt, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return VerifiedTicket{}, nil // an unknown code is simply not valid
	}
	if err != nil {
		return VerifiedTicket{}, fmt.Errorf("verify ticket: %w", err)
	}
	if s.tickets.Verify(code, v.ProductID, v.Number) != nil || status != StatusConfirmed {
		return VerifiedTicket{}, nil
	}
	v.Valid, v.id = true, id
	return v, nil
}

// Check-in outcomes.
const (
	CheckedIn        = "CHECKED_IN"
	AlreadyCheckedIn = "ALREADY_CHECKED_IN"
	InvalidTicket    = "INVALID"
)

// CheckInResult is what the gate shows.
type CheckInResult struct {
	Result string `json:"result" enum:"CHECKED_IN,ALREADY_CHECKED_IN,INVALID"`
	VerifiedTicket
}

// CheckIn admits a ticket once: the first scan checks it in, later scans
// answer ALREADY_CHECKED_IN with the time of the first; two gates scanning
// the same code at once admit one (the row is locked).
func (s *Service) CheckIn(ctx context.Context, tenantID uuid.UUID, code, by string) (CheckInResult, error) {
	var res CheckInResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		v, err := s.ticket(ctx, tx, tenantID, code, true)
		if err != nil {
			return err
		}
		res.VerifiedTicket = v
		switch {
		case !v.Valid:
			res = CheckInResult{Result: InvalidTicket}
			return nil
		case v.CheckedInAt != nil:
			res.Result = AlreadyCheckedIn
			return nil
		}
		res.Result = CheckedIn
		return tx.QueryRow(ctx, `
			UPDATE tickets SET checked_in_at = now(), checked_in_by = $2 WHERE id = $1
			RETURNING checked_in_at`, v.id, by).Scan(&res.CheckedInAt)
	})
	if err != nil {
		return CheckInResult{}, fmt.Errorf("check in ticket: %w", err)
	}
	return res, nil
}

// HandleEvent consumes an outbox event from the SQS events queue:
// order.confirmed mails the tickets (once, see SendTickets); other topics
// have no consumer here.
func (s *Service) HandleEvent(ctx context.Context, ev outbox.Event) error {
	if ev.Topic != "order.confirmed" {
		return nil
	}
	args, ok := SendTicketsFor(ev)
	if !ok {
		return fmt.Errorf("order.confirmed event %d: no order id", ev.ID)
	}
	return s.SendTickets(ctx, args.OrderID)
}

// SendTicketsFor is the job that mails the tickets of an order.confirmed
// event; ok is false when the payload names no order.
func SendTicketsFor(ev outbox.Event) (args SendTicketsArgs, ok bool) {
	var p struct {
		OrderID uuid.UUID `json:"orderId"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.OrderID == uuid.Nil {
		return SendTicketsArgs{}, false
	}
	return SendTicketsArgs{OrderID: p.OrderID}, true
}
