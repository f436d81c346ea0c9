package checkout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	// Resend, when set, sends them again at an admin's request (a new
	// message, whether or not they were sent before).
	Resend int64 `json:"resend,omitempty"`
}

func (SendTicketsArgs) Kind() string { return "send_tickets" }

// InsertOpts makes it unique per order while live.
func (SendTicketsArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SendTickets mails the tickets of a confirmed order once: the order records
// when they were sent, so a retried job does not send them again (a crash
// between sending and recording can still send twice: at least once).
func (s *Service) SendTickets(ctx context.Context, orderID uuid.UUID, resend int64) error {
	if s.mailer == nil {
		return nil
	}
	var email *string
	var sent *time.Time
	var tenantID uuid.UUID
	err := s.pool.QueryRow(ctx, `
		SELECT email, tickets_sent_at, tenant_id
		FROM orders WHERE id = $1 AND status IN ('CONFIRMED', 'REFUND_PENDING', 'REFUND_FAILED')`, orderID).
		Scan(&email, &sent, &tenantID)
	if err != nil {
		return fmt.Errorf("order %s for tickets: %w", orderID, db.NotFound(err))
	}
	if email == nil || (sent != nil && resend == 0) {
		return nil
	}
	l, err := s.ticketsLetter(ctx, tenantID, orderID, *email)
	if err != nil {
		return err
	}
	// One Message-ID per order's tickets, whoever sends them and however
	// often (at least once: a crash before the mark below, or a restore
	// replaying the outbox, sends them again).
	id := "tickets-" + orderID.String()
	if resend != 0 {
		id += "-" + strconv.FormatInt(resend, 36)
	}
	if err := s.mailer.Deliver(id, l); err != nil {
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
	// Void says why a real ticket does not admit: it was refunded
	// (REFUNDED), handed to someone else (TRANSFERRED), its order
	// cancelled (CANCELLED) or its date cancelled (EVENT_CANCELLED).
	Void string `json:"void,omitempty" enum:"REFUNDED,TRANSFERRED,CANCELLED,EVENT_CANCELLED"`
	id   uuid.UUID
}

// VerifyTicket checks a ticket code of the tenant: signed by us, issued, and
// its order still confirmed. It changes nothing; CheckIn admits.
func (s *Service) VerifyTicket(ctx context.Context, tenantID uuid.UUID, code string) (VerifiedTicket, error) {
	return s.ticket(ctx, s.pool, tenantID, code, false)
}

// ticket reads and checks a ticket; forUpdate locks it for a check-in.
func (s *Service) ticket(ctx context.Context, q db.DBTX, tenantID uuid.UUID, code string, forUpdate bool) (VerifiedTicket, error) {
	var v VerifiedTicket
	var status, ticketStatus string
	lock := ""
	if forUpdate {
		lock = "FOR UPDATE OF t"
	}
	id, err := ticket.Parse(code)
	if err != nil {
		return VerifiedTicket{}, nil // a malformed code is simply not valid
	}
	err = q.QueryRow(ctx, `
		SELECT t.order_id, t.product_id, t.number, t.label, t.checked_in_at, o.status, t.status
		FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE t.id = $1 AND o.tenant_id = $2 `+lock, id, tenantID).
		Scan(&v.OrderID, &v.ProductID, &v.Number, &v.Seat, &v.CheckedInAt, &status, &ticketStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return VerifiedTicket{}, nil // an unknown code is simply not valid
	}
	if err != nil {
		return VerifiedTicket{}, fmt.Errorf("verify ticket: %w", err)
	}
	if s.tickets.Verify(code, v.ProductID, v.Number) != nil {
		return VerifiedTicket{}, nil
	}
	dateCancelled, err := product.IsCancelled(ctx, q, v.ProductID)
	if err != nil {
		return VerifiedTicket{}, err
	}
	// A real ticket that no longer admits says why, so the gate can tell
	// the holder.
	switch {
	case dateCancelled:
		return VerifiedTicket{OrderID: v.OrderID, ProductID: v.ProductID, Number: v.Number, Seat: v.Seat, Void: "EVENT_CANCELLED"}, nil
	case status == StatusCancelled:
		return VerifiedTicket{OrderID: v.OrderID, ProductID: v.ProductID, Number: v.Number, Seat: v.Seat, Void: "CANCELLED"}, nil
	case ticketStatus == "TRANSFERRED":
		return VerifiedTicket{OrderID: v.OrderID, ProductID: v.ProductID, Number: v.Number, Seat: v.Seat, Void: "TRANSFERRED"}, nil
	case ticketStatus != ticketValid || !admits(status):
		return VerifiedTicket{OrderID: v.OrderID, ProductID: v.ProductID, Number: v.Number, Seat: v.Seat, Void: "REFUNDED"}, nil
	}
	v.Valid, v.id = true, id
	return v, nil
}

// admits reports whether an order's valid tickets admit: it was confirmed
// and is not refunded in full or cancelled (a refund in flight voids only
// its own tickets).
func admits(orderStatus string) bool {
	return orderStatus == StatusConfirmed || orderStatus == StatusRefundPending || orderStatus == StatusRefundFailed
}

// Check-in outcomes.
const (
	CheckedIn        = "CHECKED_IN"
	AlreadyCheckedIn = "ALREADY_CHECKED_IN"
	InvalidTicket    = "INVALID"
	VoidTicket       = "VOID"
)

// CheckInResult is what the gate shows.
type CheckInResult struct {
	Result string `json:"result" enum:"CHECKED_IN,ALREADY_CHECKED_IN,INVALID,VOID" doc:"VOID: a real ticket that was refunded, transferred or cancelled (see void)"`
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
		case v.Void != "":
			res.Result = VoidTicket
			return nil
		case !v.Valid:
			res = CheckInResult{Result: InvalidTicket}
			return nil
		case v.CheckedInAt != nil:
			res.Result = AlreadyCheckedIn
			return nil
		}
		res.Result = CheckedIn
		err = tx.QueryRow(ctx, `
			UPDATE tickets SET checked_in_at = now(), checked_in_by = $2 WHERE id = $1
			RETURNING checked_in_at`, v.id, by).Scan(&res.CheckedInAt)
		if err != nil {
			return err
		}
		return outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "ticket.checked_in", Payload: map[string]any{
			"ticketId": v.id, "orderId": v.OrderID, "productId": v.ProductID, "number": v.Number, "checkedInAt": res.CheckedInAt}})
	})
	if err != nil {
		return CheckInResult{}, fmt.Errorf("check in ticket: %w", err)
	}
	return res, nil
}

// HandleEvent consumes an outbox event from the SQS events queue, as the
// relay's jobs would (see JobFor); other topics have no consumer here.
func (s *Service) HandleEvent(ctx context.Context, ev outbox.Event) error {
	switch args := JobFor(ev).(type) {
	case SendTicketsArgs:
		return s.SendTickets(ctx, args.OrderID, 0)
	case SendRefundNoticeArgs:
		return s.SendRefundNotice(ctx, args.RefundID)
	case NotifyChangeArgs:
		return s.NotifyChange(ctx, args)
	case SendTransferArgs:
		return s.SendTransfer(ctx, args.TransferID)
	case SendOfferArgs:
		return s.SendOffer(ctx, args.EntryID)
	}
	return nil
}

// JobFor is the job that consumes an outbox event: order.confirmed mails
// the tickets, order.refunded tells the buyer, event.changed tells every
// ticket holder, ticket.transferred mails the receiver, waitlist.offered
// mails the offer; nil for other topics (or a
// payload that names nothing).
func JobFor(ev outbox.Event) river.JobArgs {
	var p struct {
		OrderID    uuid.UUID `json:"orderId"`
		RefundID   uuid.UUID `json:"refundId"`
		ProductID  uuid.UUID `json:"productId"`
		ChangeID   uuid.UUID `json:"changeId"`
		What       string    `json:"what"`
		TransferID uuid.UUID `json:"transferId"`
		EntryID    uuid.UUID `json:"entryId"`
	}
	if json.Unmarshal(ev.Payload, &p) != nil {
		return nil
	}
	switch {
	case ev.Topic == "order.confirmed" && p.OrderID != uuid.Nil:
		return SendTicketsArgs{OrderID: p.OrderID}
	case ev.Topic == "order.refunded" && p.RefundID != uuid.Nil:
		return SendRefundNoticeArgs{RefundID: p.RefundID}
	case ev.Topic == "event.changed" && p.ChangeID != uuid.Nil:
		return NotifyChangeArgs{ProductID: p.ProductID, ChangeID: p.ChangeID, What: p.What}
	case ev.Topic == "ticket.transferred" && p.TransferID != uuid.Nil:
		return SendTransferArgs{TransferID: p.TransferID}
	case ev.Topic == "waitlist.offered" && p.EntryID != uuid.Nil:
		return SendOfferArgs{EntryID: p.EntryID}
	}
	return nil
}
