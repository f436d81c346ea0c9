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
	"boxoffice/internal/mail"
	"boxoffice/internal/outbox"
)

// SendTicketsArgs mails a confirmed order's tickets.
type SendTicketsArgs struct {
	OrderID uuid.UUID `json:"order_id"`
}

// Kind is River's name for the job.
func (SendTicketsArgs) Kind() string { return "send_tickets" }

// InsertOpts makes it unique per order while live.
func (SendTicketsArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SetMailer sets where ticket e-mails go; without one none are sent.
func (s *Service) SetMailer(m *mail.Sender) { s.mailer = m }

// SendTickets mails the tickets of a confirmed order once: the order records
// when they were sent, so a retried job does not send them again (a crash
// between sending and recording can still send twice: at least once).
func (s *Service) SendTickets(ctx context.Context, orderID uuid.UUID) error {
	if s.mailer == nil {
		return nil
	}
	var email *string
	var sent *time.Time
	var productName string
	var tenantID uuid.UUID
	err := s.pool.QueryRow(ctx, `
		SELECT o.email, o.tickets_sent_at, p.name, o.tenant_id
		FROM orders o JOIN products p ON p.id = o.product_id
		WHERE o.id = $1 AND o.status = 'CONFIRMED'`, orderID).Scan(&email, &sent, &productName, &tenantID)
	if err != nil {
		return fmt.Errorf("order %s for tickets: %w", orderID, db.NotFound(err))
	}
	if email == nil || sent != nil {
		return nil
	}
	o, err := s.Get(ctx, tenantID, orderID, "")
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Your tickets for %s\n\nOrder %s\n\n", productName, orderID)
	for _, t := range o.Tickets {
		fmt.Fprintf(&b, "  Number %d   code %s\n", t.Number, t.Code)
	}
	b.WriteString("\nShow the code at the entrance; it can be checked with GET /v1/tickets/verify?code=...\n")
	if err := s.mailer.Send(*email, "Your tickets: "+productName, b.String()); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE orders SET tickets_sent_at = now() WHERE id = $1`, orderID)
	return err
}

// VerifiedTicket is a ticket whose code checked out.
type VerifiedTicket struct {
	Valid     bool      `json:"valid"`
	OrderID   uuid.UUID `json:"orderId,omitempty"`
	ProductID uuid.UUID `json:"productId,omitempty"`
	Number    int32     `json:"number,omitempty"`
}

// VerifyTicket checks a ticket code of the tenant: signed by us, issued, and
// its order still confirmed.
func (s *Service) VerifyTicket(ctx context.Context, tenantID uuid.UUID, code string) (VerifiedTicket, error) {
	var v VerifiedTicket
	var status string
	err := s.pool.QueryRow(ctx, `
		SELECT t.order_id, t.product_id, t.number, o.status
		FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE t.code = $1 AND o.tenant_id = $2`, code, tenantID).Scan(&v.OrderID, &v.ProductID, &v.Number, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return VerifiedTicket{}, nil // an unknown code is simply not valid
	}
	if err != nil {
		return VerifiedTicket{}, fmt.Errorf("verify ticket: %w", err)
	}
	if s.tickets.Verify(code, v.ProductID, v.Number) != nil || status != StatusConfirmed {
		return VerifiedTicket{}, nil
	}
	v.Valid = true
	return v, nil
}

// HandleEvent consumes an outbox event from the SQS events queue:
// order.confirmed mails the tickets (once, see SendTickets); other topics
// have no consumer here.
func (s *Service) HandleEvent(ctx context.Context, ev outbox.Event) error {
	if ev.Topic != "order.confirmed" {
		return nil
	}
	var p struct {
		OrderID uuid.UUID `json:"orderId"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return fmt.Errorf("order.confirmed event %d: %w", ev.ID, err)
	}
	return s.SendTickets(ctx, p.OrderID)
}
