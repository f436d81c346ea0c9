package checkout

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/product"
)

// NotifyChangeArgs tells every ticket holder of a date that its date or
// venue changed.
type NotifyChangeArgs struct {
	ProductID uuid.UUID `json:"product_id"`
	ChangeID  uuid.UUID `json:"change_id"`
	What      string    `json:"what"`
}

func (NotifyChangeArgs) Kind() string { return "notify_event_change" }

// InsertOpts makes it unique per change while live.
func (NotifyChangeArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// NotifyChange mails each order with tickets that admit for the date the
// event's when and where as they are now, once per order and change: a
// mail is recorded as sent after it went, so a retried job skips it (a
// worker that dies between the two sends that one again).
func (s *Service) NotifyChange(ctx context.Context, a NotifyChangeArgs) error {
	if s.mailer == nil {
		return nil
	}
	ev, dates, err := product.EventOf(ctx, s.pool, a.ProductID)
	if err != nil {
		return err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT o.id, o.email FROM orders o
		WHERE o.product_id = $1 AND o.email IS NOT NULL AND o.status IN ('CONFIRMED', 'REFUND_PENDING', 'REFUND_FAILED')
		  AND EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = o.id AND t.status = 'VALID')
		  AND NOT EXISTS (SELECT 1 FROM mail_sent m WHERE m.key = 'change-' || $2 || '-' || o.id)
		ORDER BY o.id`, a.ProductID, a.ChangeID.String())
	if err != nil {
		return fmt.Errorf("holders of %s: %w", a.ProductID, err)
	}
	type holder struct {
		Order uuid.UUID
		Email string
	}
	holders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[holder])
	if err != nil {
		return fmt.Errorf("holders of %s: %w", a.ProductID, err)
	}
	subject := "Changed: " + ev.Name
	var b strings.Builder
	if a.What == "venue" {
		fmt.Fprintf(&b, "%s has moved to a new venue.\n\n", ev.Name)
	} else {
		fmt.Fprintf(&b, "%s has a new date.\n\n", ev.Name)
	}
	fmt.Fprintf(&b, "When:  %s\n", dates.When(ev.TimeZone))
	if where := ev.Venue.Where(); where != "" {
		fmt.Fprintf(&b, "Where: %s\n", where)
	}
	b.WriteString("\nYour tickets stay valid for it; you need do nothing. If you cannot come, contact the organiser.\n")
	for _, h := range holders {
		key := "change-" + a.ChangeID.String() + "-" + h.Order.String()
		if err := s.mailOnce(ctx, key, h.Email, subject, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// mailOnce sends a message whose Message-ID is key and records key in
// mail_sent after it went: the callers skip what is recorded, so a message
// goes at least once, and twice only when a worker dies in between.
func (s *Service) mailOnce(ctx context.Context, key, to, subject, body string) error {
	if err := s.mailer.SendID(key, to, subject, body); err != nil {
		return fmt.Errorf("mail %s: %w", key, err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO mail_sent (key) VALUES ($1) ON CONFLICT DO NOTHING`, key); err != nil {
		return fmt.Errorf("record mail %s: %w", key, err)
	}
	return nil
}
