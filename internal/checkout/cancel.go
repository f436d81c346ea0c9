package checkout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/letter"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
)

// Cancelling a date: the product is marked CANCELLED (nothing more is sold,
// nothing checks in) and CancelDateArgs's job refunds every order and mails
// every buyer once. The job is a loop over what is left to do, read afresh
// each time, so a worker that dies midway leaves a job the next worker
// resumes: refunds carry the key event-cancel-<order> (asking twice answers
// with the same refund), and each buyer's mail is recorded in mail_sent
// after it goes.

// The kinds of refund besides the organiser's own (REFUND): those of a
// cancelled date, and a buyer's cancellation of their order.
const (
	refundKindEventCancelled = "EVENT_CANCELLED"
	refundKindCancellation   = "CANCELLATION"
)

// cancelBatch is how many orders one pass of the job refunds before it
// looks again (each refund is its own transaction).
const cancelBatch = 100

// ErrCancellationWaiting is the cancellation job's answer while orders are
// still being paid for or a refund of theirs is under way: it runs again.
var ErrCancellationWaiting = errors.New("orders of the cancelled date are still being paid or refunded")

// CancelDateArgs refunds the orders of a cancelled date.
type CancelDateArgs struct {
	ProductID uuid.UUID `json:"product_id"`
}

func (CancelDateArgs) Kind() string { return "cancel_date" }

// InsertOpts makes it unique per date while live, on the payments queue
// with the refunds it asks for.
func (CancelDateArgs) InsertOpts() river.InsertOpts {
	o := uniqueWhileLive()
	o.MaxAttempts = 50
	return o
}

// CancelProgress is how far a date's cancellation has got.
type CancelProgress struct {
	ProductID   uuid.UUID  `json:"productId"`
	State       string     `json:"state" enum:"RUNNING,DONE" doc:"DONE once no order holds a valid ticket and every refund is settled"`
	Reason      string     `json:"reason"`
	CancelledBy string     `json:"cancelledBy"`
	CancelledAt time.Time  `json:"cancelledAt"`
	FinishedAt  *time.Time `json:"finishedAt,omitempty"`
	// Orders still to refund: they hold valid tickets.
	Remaining int `json:"remaining" doc:"Orders still holding valid tickets"`
	// Paying are orders whose payment is still in flight: refunded once
	// they confirm.
	Paying       int `json:"paying" doc:"Orders still being paid for: refunded once confirmed"`
	Refunding    int `json:"refunding" doc:"Refunds asked for, the provider's answer awaited"`
	Refunded     int `json:"refunded" doc:"Refunds done"`
	Failed       int `json:"failed" doc:"Refunds the provider refused: retry or settle each by hand"`
	BuyersMailed int `json:"buyersMailed"`
}

// CancelDate cancels a date of a tenant's event and starts refunding its
// orders, in one transaction: the product is CANCELLED, an event.cancelled
// outbox row and the refund job are written with it. Cancelling a date
// already cancelled changes nothing and answers with its progress.
func (s *Service) CancelDate(ctx context.Context, tenantID, productID uuid.UUID, reason, by string) (*CancelProgress, error) {
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		changed, err := product.MarkCancelled(ctx, tx, tenantID, productID, reason, by)
		if err != nil || !changed {
			return err
		}
		if err := outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "event.cancelled", Payload: map[string]any{
			"productId": productID, "reason": reason}}); err != nil {
			return err
		}
		if _, err := s.river.InsertTx(ctx, tx, CancelDateArgs{ProductID: productID}, nil); err != nil {
			return fmt.Errorf("enqueue cancellation of %s: %w", productID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.CancelProgressOf(ctx, tenantID, productID)
}

// CancelProgressOf reads a cancelled date's progress (db.ErrNotFound when
// the date is not cancelled, or is another tenant's).
func (s *Service) CancelProgressOf(ctx context.Context, tenantID, productID uuid.UUID) (*CancelProgress, error) {
	c, err := product.CancellationOfDate(ctx, s.pool, productID)
	if err != nil {
		return nil, err
	}
	if c.TenantID != tenantID {
		return nil, fmt.Errorf("cancellation of %s: %w", productID, db.ErrNotFound)
	}
	p := &CancelProgress{ProductID: productID, State: "RUNNING", Reason: c.Reason, CancelledBy: c.By,
		CancelledAt: c.CancelledAt, FinishedAt: c.FinishedAt}
	err = s.pool.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM orders o WHERE o.product_id = $1
		     AND EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = o.id AND t.status = 'VALID')),
		  (SELECT count(*) FROM orders WHERE product_id = $1 AND status IN ('PENDING_PAYMENT', 'AUTHORIZED')),
		  count(*) FILTER (WHERE r.status IN ('PENDING', 'UNKNOWN')),
		  count(*) FILTER (WHERE r.status = 'REFUNDED'),
		  count(*) FILTER (WHERE r.status = 'FAILED'),
		  (SELECT count(*) FROM mail_sent WHERE key LIKE $2 || '%')
		FROM refunds r JOIN orders o ON o.id = r.order_id
		WHERE o.product_id = $1 AND r.kind = $3`, productID, cancelMailPrefix(productID), refundKindEventCancelled).
		Scan(&p.Remaining, &p.Paying, &p.Refunding, &p.Refunded, &p.Failed, &p.BuyersMailed)
	if err != nil {
		return nil, fmt.Errorf("cancellation progress of %s: %w", productID, err)
	}
	if p.FinishedAt != nil && p.Refunding == 0 && p.Failed == 0 {
		p.State = "DONE"
	}
	return p, nil
}

// cancelMailPrefix starts the mail_sent key of each buyer's cancellation
// notice of a date.
func cancelMailPrefix(productID uuid.UUID) string {
	return "event-cancelled-" + productID.String() + "-"
}

// ProcessCancellation is the cancellation job: it refunds every order of
// the cancelled date that still holds valid tickets, mails every buyer
// whose orders were refunded, and finishes once nothing is left to refund
// and no payment is in flight (ErrCancellationWaiting until then). An
// order whose own refund is under way is left to it and looked at again
// the next time round.
func (s *Service) ProcessCancellation(ctx context.Context, productID uuid.UUID) error {
	c, err := product.CancellationOfDate(ctx, s.pool, productID)
	if err != nil {
		return err
	}
	if c.FinishedAt != nil {
		return nil
	}
	skipped := map[uuid.UUID]bool{}
	for {
		orders, err := s.ids(ctx, `
			SELECT o.id FROM orders o
			WHERE o.product_id = $1 AND o.status = 'CONFIRMED' AND o.id <> ALL($2)
			  AND EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = o.id AND t.status = 'VALID')
			ORDER BY o.id LIMIT $3`, productID, mapKeys(skipped), cancelBatch)
		if err != nil {
			return err
		}
		if len(orders) == 0 {
			break
		}
		for _, orderID := range orders {
			_, _, err := s.RequestRefund(ctx, RefundParams{TenantID: c.TenantID, OrderID: orderID, Reason: c.Reason,
				RequestedBy: c.By, IdempotencyKey: "event-cancel-" + orderID.String(), EventCancelled: true})
			switch {
			case errors.Is(err, ErrRefundInProgress), errors.Is(err, ErrNotRefundable):
				skipped[orderID] = true // its own refund first; the next pass comes back
			case err != nil:
				return fmt.Errorf("refund order %s of cancelled %s: %w", orderID, productID, err)
			}
		}
	}
	if err := s.mailCancellation(ctx, productID, c); err != nil {
		return err
	}
	var left int
	if err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM orders o WHERE o.product_id = $1
		  AND (o.status IN ('PENDING_PAYMENT', 'AUTHORIZED')
		       OR EXISTS (SELECT 1 FROM tickets t WHERE t.order_id = o.id AND t.status = 'VALID'))`, productID).
		Scan(&left); err != nil {
		return fmt.Errorf("orders left of cancelled %s: %w", productID, err)
	}
	if left > 0 {
		return ErrCancellationWaiting
	}
	return product.FinishCancellation(ctx, s.pool, productID)
}

// mapKeys lists m's keys in a slice that is never nil, even when m is
// empty: pgx sends a nil slice as NULL, and "id <> ALL(NULL)" matches no
// row, so a run with nothing to skip would find nothing left to cancel.
func mapKeys(m map[uuid.UUID]bool) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// mailCancellation tells each buyer of the date, once, that it is
// cancelled and what is being refunded to them (all their orders in one
// mail; their refunds send no notice of their own). The mail is recorded
// after it goes: a worker that dies in between sends it again.
func (s *Service) mailCancellation(ctx context.Context, productID uuid.UUID, c *product.DateCancellation) error {
	if s.mailer == nil {
		return nil
	}
	prefix := cancelMailPrefix(productID)
	// The buyers who paid, and those holding tickets given to them (told
	// too; the money goes back to whoever paid).
	rows, err := s.pool.Query(ctx, `
		WITH payers AS (
			SELECT lower(o.email) AS email, sum(r.amount_cents) AS cents, min(r.currency) AS currency,
			       sum(cardinality(r.numbers)) AS tickets, true AS paid
			FROM refunds r JOIN orders o ON o.id = r.order_id
			WHERE o.product_id = $1 AND r.kind = $2 AND o.email IS NOT NULL
			GROUP BY 1),
		holders AS (
			SELECT lower(t.holder_email) AS email, 0::bigint AS cents, '' AS currency, count(*) AS tickets, false AS paid
			FROM tickets t JOIN refunds r ON r.id = t.refund_id
			WHERE t.product_id = $1 AND r.kind = $2 AND t.holder_email IS NOT NULL
			  AND lower(t.holder_email) NOT IN (SELECT email FROM payers)
			GROUP BY 1)
		SELECT email, cents, currency, tickets, paid FROM (SELECT * FROM payers UNION ALL SELECT * FROM holders) b
		WHERE NOT EXISTS (SELECT 1 FROM mail_sent m
		                  WHERE m.key = $3 || encode(substr(sha256(convert_to(b.email, 'UTF8')), 1, 12), 'hex'))
		ORDER BY 1`, productID, refundKindEventCancelled, prefix)
	if err != nil {
		return fmt.Errorf("buyers of cancelled %s: %w", productID, err)
	}
	type buyer struct {
		Email    string
		Cents    int64
		Currency string
		Tickets  int64
		Paid     bool
	}
	buyers, err := pgx.CollectRows(rows, pgx.RowToStructByPos[buyer])
	if err != nil {
		return fmt.Errorf("buyers of cancelled %s: %w", productID, err)
	}
	if len(buyers) == 0 {
		return nil
	}
	ev, dates, err := product.EventOf(ctx, s.pool, productID)
	if err != nil {
		return err
	}
	brand, err := s.brandOfProduct(ctx, productID)
	if err != nil {
		return err
	}
	w := brand.Words
	intro := w.T("cancelIntroNoDate", "event", ev.Name)
	if dates.StartsAt != nil {
		intro = w.T("cancelIntro", "event", ev.Name, "when", w.When(*dates, ev.TimeZone))
	}
	for _, b := range buyers {
		msg := letter.Content{Subject: w.T("cancelSubject", "event", ev.Name), Heading: w.T("cancelHeading", "event", ev.Name),
			Intro: []string{intro}}
		if c.Reason != "" {
			msg.Facts = append(msg.Facts, letter.Fact{Label: w.T("reason"), Value: c.Reason})
		}
		what := w.T("voidOne")
		if b.Tickets != 1 {
			what = w.T("voidMany", "n", strconv.FormatInt(b.Tickets, 10))
		}
		switch {
		case !b.Paid:
			what += " " + w.T("refundToPayer")
		case b.Cents > 0:
			what += " " + w.T("refundToCard", "amount", w.Money(b.Cents, b.Currency))
		}
		msg.Intro = append(msg.Intro, what+" "+w.T("nothingToDo"))
		l, err := brand.Compose(b.Email, msg)
		if err != nil {
			return err
		}
		// The address, hashed, keeps the key (and the Message-ID made of
		// it) one opaque word.
		sum := sha256.Sum256([]byte(b.Email))
		if err := s.mailOnce(ctx, prefix+hex.EncodeToString(sum[:12]), l); err != nil {
			return err
		}
	}
	return nil
}

// ReconcileCancellations enqueues the job of every cancelled date not
// finished yet (a job River gave up on): the job resumes where it stopped.
func (s *Service) ReconcileCancellations(ctx context.Context) (int, error) {
	ids, err := product.UnfinishedCancellations(ctx, s.pool, s.cfg.ResolveAfter)
	if err != nil {
		return 0, err
	}
	return s.enqueueEach(ctx, ids, func(id uuid.UUID) river.JobArgs { return CancelDateArgs{ProductID: id} }, "cancellations")
}
