package checkout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/letter"
	"boxoffice/internal/mail"
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
	brand, err := s.brandOfProduct(ctx, a.ProductID)
	if err != nil {
		return err
	}
	w := brand.Words
	heading := w.T("changeHeadingDate", "event", ev.Name)
	if a.What == "venue" {
		heading = w.T("changeHeadingVenue", "event", ev.Name)
	}
	c := letter.Content{Subject: w.T("changeSubject", "event", ev.Name), Heading: heading, Intro: []string{w.T("changeIntro")},
		Facts: []letter.Fact{{Label: w.T("when"), Value: w.When(*dates, ev.TimeZone)}}}
	if where := ev.Venue.Where(); where != "" {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("where"), Value: where})
	}
	for _, h := range holders {
		l, err := brand.Compose(h.Email, c)
		if err != nil {
			return err
		}
		if err := s.mailOnce(ctx, "change-"+a.ChangeID.String()+"-"+h.Order.String(), l); err != nil {
			return err
		}
	}
	return nil
}

// mailOnce sends a message whose Message-ID is key and records key in
// mail_sent after it went: the callers skip what is recorded, so a message
// goes at least once, and twice only when a worker dies in between.
func (s *Service) mailOnce(ctx context.Context, key string, l mail.Letter) error {
	if err := s.mailer.Deliver(key, l); err != nil {
		return fmt.Errorf("mail %s: %w", key, err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO mail_sent (key) VALUES ($1) ON CONFLICT DO NOTHING`, key); err != nil {
		return fmt.Errorf("record mail %s: %w", key, err)
	}
	return nil
}
