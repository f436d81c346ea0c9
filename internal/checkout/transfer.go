package checkout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/letter"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// Transfers: the holder of a ticket hands it to another e-mail address. In
// one transaction the ticket becomes TRANSFERRED (its code stops admitting),
// a new ticket of the same order and seat is issued to the receiver — the
// buyer who signs in with that address — and the transfer is recorded; the
// receiver is mailed the new code by a job.

const ticketTransferred = "TRANSFERRED"

// Errors of a transfer, mapped to problems by the API.
var (
	ErrTransferClosed        = errors.New("tickets of this date cannot be transferred now")
	ErrTransferLimit         = errors.New("this ticket has changed hands as many times as the organiser allows")
	ErrTransferToSelf        = errors.New("the ticket is already yours")
	ErrTicketNotTransferable = errors.New("only a valid ticket not yet used at the gate can be transferred")
)

// TransferParams hands a ticket to someone else.
type TransferParams struct {
	TenantID uuid.UUID
	// BuyerID is the ticket's holder: its order's buyer, or whoever it was
	// transferred to.
	BuyerID        string
	TicketID       uuid.UUID
	Email          string
	IdempotencyKey string
}

// Transfer is a ticket handed on.
type Transfer struct {
	ID           uuid.UUID `json:"id"`
	OrderID      uuid.UUID `json:"orderId"`
	FromTicketID uuid.UUID `json:"fromTicketId" doc:"The ticket given away: TRANSFERRED, its code no longer admits"`
	ToTicketID   uuid.UUID `json:"toTicketId" doc:"The receiver's new ticket (its code is mailed to them)"`
	Number       int32     `json:"number"`
	Seat         string    `json:"seat"`
	ToEmail      string    `json:"toEmail"`
	CreatedAt    time.Time `json:"createdAt"`
}

// TransferTicket hands a ticket to the buyer of an e-mail address, once per
// idempotency key (replayed true when the key was seen): the product must
// allow it (ErrTransferClosed), the seat not have changed hands too often
// (ErrTransferLimit), and the receiver stay within the per-buyer limit
// (reservation.ErrReceiverLimit).
func (s *Service) TransferTicket(ctx context.Context, p TransferParams) (_ *Transfer, replayed bool, err error) {
	id, replayed, err := s.onceByKey(ctx, keyed{
		lookup: `SELECT id, from_ticket FROM ticket_transfers WHERE tenant_id = $1 AND from_buyer = $2 AND idempotency_key = $3`,
		args:   []any{p.TenantID, p.BuyerID, p.IdempotencyKey}, subject: p.TicketID, what: "transfer",
	}, func(tx pgx.Tx) (uuid.UUID, error) { return s.transfer(ctx, tx, p) })
	if err != nil {
		return nil, false, err
	}
	t, err := s.getTransfer(ctx, id)
	return t, replayed, err
}

// transfer is TransferTicket's transaction once the key is new. Locks
// follow the refund's order: the order, then its ticket.
func (s *Service) transfer(ctx context.Context, tx pgx.Tx, p TransferParams) (uuid.UUID, error) {
	var orderID uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT o.id FROM tickets t JOIN orders o ON o.id = t.order_id WHERE t.id = $1 AND o.tenant_id = $2
		FOR UPDATE OF o`, p.TicketID, p.TenantID).Scan(&orderID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("ticket %s: %w", p.TicketID, db.NotFound(err))
	}
	var productID, holdID uuid.UUID
	var number int32
	var transfers int
	var label, status, orderStatus, buyer string
	var holder *string
	var checkedIn *time.Time
	err = tx.QueryRow(ctx, `
		SELECT t.product_id, o.hold_id, t.number, t.label, t.transfers, t.status, o.status, o.buyer_id, t.holder_buyer_id,
		       t.checked_in_at
		FROM tickets t JOIN orders o ON o.id = t.order_id WHERE t.id = $1 FOR UPDATE OF t`, p.TicketID).
		Scan(&productID, &holdID, &number, &label, &transfers, &status, &orderStatus, &buyer, &holder, &checkedIn)
	if err != nil {
		return uuid.Nil, fmt.Errorf("ticket %s: %w", p.TicketID, db.NotFound(err))
	}
	fromHold := holder == nil
	if fromHold {
		holder = &buyer
	}
	if *holder != p.BuyerID {
		// Another holder's ticket is, to this buyer, no ticket at all.
		return uuid.Nil, fmt.Errorf("ticket %s: %w", p.TicketID, db.ErrNotFound)
	}
	if status != ticketValid || !admits(orderStatus) || checkedIn != nil {
		return uuid.Nil, ErrTicketNotTransferable
	}
	terms, err := product.TransferTermsOf(ctx, tx, productID)
	if err != nil {
		return uuid.Nil, err
	}
	switch {
	case !terms.Open:
		return uuid.Nil, ErrTransferClosed
	case transfers >= terms.MaxTimes:
		return uuid.Nil, ErrTransferLimit
	}
	email := strings.ToLower(strings.TrimSpace(p.Email))
	to, err := login.BuyerForEmail(ctx, tx, p.TenantID, email)
	if err != nil {
		return uuid.Nil, err
	}
	if to == p.BuyerID {
		return uuid.Nil, ErrTransferToSelf
	}
	if err := reservation.Transferred(ctx, tx, productID, holdID, p.BuyerID, fromHold, to, terms.PerBuyer); err != nil {
		return uuid.Nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE tickets SET status = 'TRANSFERRED', voided_at = now() WHERE id = $1`, p.TicketID); err != nil {
		return uuid.Nil, fmt.Errorf("transfer ticket: %w", err)
	}
	newTicket, transferID := db.NewID(), db.NewID()
	if _, err := tx.Exec(ctx, `
		INSERT INTO tickets (id, order_id, product_id, number, label, holder_buyer_id, holder_email, transferred_from, transfers)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		newTicket, orderID, productID, number, label, to, email, p.TicketID, transfers+1); err != nil {
		return uuid.Nil, fmt.Errorf("issue transferred ticket: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO ticket_transfers (id, tenant_id, order_id, from_ticket, to_ticket, from_buyer, to_buyer, to_email, idempotency_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		transferID, p.TenantID, orderID, p.TicketID, newTicket, p.BuyerID, to, email, p.IdempotencyKey); err != nil {
		return uuid.Nil, fmt.Errorf("record transfer: %w", err)
	}
	if err := outbox.Add(ctx, tx, outbox.New{TenantID: p.TenantID, Topic: "ticket.transferred", Payload: map[string]any{
		"transferId": transferID, "orderId": orderID, "productId": productID, "number": number}}); err != nil {
		return uuid.Nil, err
	}
	return transferID, nil
}

const selectTransfer = `
	SELECT x.id, x.order_id, x.from_ticket, x.to_ticket, t.number, t.label, x.to_email, x.created_at
	FROM ticket_transfers x JOIN tickets t ON t.id = x.to_ticket`

func scanTransfer(row pgx.CollectableRow) (Transfer, error) {
	var t Transfer
	err := row.Scan(&t.ID, &t.OrderID, &t.FromTicketID, &t.ToTicketID, &t.Number, &t.Seat, &t.ToEmail, &t.CreatedAt)
	return t, err
}

func (s *Service) getTransfer(ctx context.Context, id uuid.UUID) (*Transfer, error) {
	rows, err := s.pool.Query(ctx, selectTransfer+` WHERE x.id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: %w", id, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTransfer)
	if err != nil {
		return nil, fmt.Errorf("transfer %s: %w", id, db.NotFound(err))
	}
	return &t, nil
}

// transfersOf returns an order's transfers, oldest first.
func (s *Service) transfersOf(ctx context.Context, orderID uuid.UUID) ([]Transfer, error) {
	rows, err := s.pool.Query(ctx, selectTransfer+` WHERE x.order_id = $1 ORDER BY x.created_at, x.id`, orderID)
	if err != nil {
		return nil, fmt.Errorf("transfers of %s: %w", orderID, err)
	}
	out, err := pgx.CollectRows(rows, scanTransfer)
	if err != nil {
		return nil, fmt.Errorf("transfers of %s: %w", orderID, err)
	}
	if out == nil {
		out = []Transfer{}
	}
	return out, nil
}

// HeldTicket is a ticket as its holder sees it, wherever it came from.
type HeldTicket struct {
	ID        uuid.UUID      `json:"id"`
	OrderID   uuid.UUID      `json:"orderId"`
	ProductID uuid.UUID      `json:"productId"`
	Product   string         `json:"product" doc:"The date's name"`
	Event     *product.Event `json:"event"`
	product.Dates
	Number   int32  `json:"number"`
	Seat     string `json:"seat"`
	Code     string `json:"code"`
	Received bool   `json:"received" doc:"Transferred to this buyer by someone else"`
}

// HeldTickets returns the valid tickets a buyer holds, newest first: those
// of their own orders they kept and those transferred to them.
func (s *Service) HeldTickets(ctx context.Context, tenantID uuid.UUID, buyerID string) ([]HeldTicket, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT t.id, t.order_id, t.product_id, t.number, t.label, t.holder_buyer_id IS NOT NULL
		FROM tickets t JOIN orders o ON o.id = t.order_id
		WHERE o.tenant_id = $1 AND t.status = 'VALID' AND coalesce(t.holder_buyer_id, o.buyer_id) = $2
		  AND o.status IN ('CONFIRMED', 'REFUND_PENDING', 'REFUND_FAILED')
		ORDER BY t.issued_at DESC, t.number LIMIT 200`, tenantID, buyerID)
	if err != nil {
		return nil, fmt.Errorf("tickets of buyer: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HeldTicket, error) {
		var t HeldTicket
		err := row.Scan(&t.ID, &t.OrderID, &t.ProductID, &t.Number, &t.Seat, &t.Received)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("tickets of buyer: %w", err)
	}
	type date struct {
		name  string
		event *product.Event
		dates *product.Dates
	}
	dates := map[uuid.UUID]date{}
	for i := range out {
		t := &out[i]
		d, ok := dates[t.ProductID]
		if !ok {
			if d.event, d.dates, err = product.EventOf(ctx, s.pool, t.ProductID); err != nil {
				return nil, err
			}
			if d.name, err = product.NameOf(ctx, s.pool, t.ProductID); err != nil {
				return nil, err
			}
			dates[t.ProductID] = d
		}
		t.Product, t.Event, t.Dates = d.name, d.event, *d.dates
		t.Code = s.tickets.Code(t.ID, t.ProductID, t.Number)
	}
	if out == nil {
		out = []HeldTicket{}
	}
	return out, nil
}

// SendTransferArgs mails a transferred ticket to its receiver.
type SendTransferArgs struct {
	TransferID uuid.UUID `json:"transfer_id"`
}

func (SendTransferArgs) Kind() string { return "send_transfer" }

// InsertOpts makes it unique per transfer while live.
func (SendTransferArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SendTransfer mails the receiver their new ticket, once (recorded in
// mail_sent after it goes), while it is still theirs and valid.
func (s *Service) SendTransfer(ctx context.Context, transferID uuid.UUID) error {
	if s.mailer == nil {
		return nil
	}
	key := "transfer-" + transferID.String()
	var productID, ticketID uuid.UUID
	var number int32
	var seat, email string
	var sent bool
	err := s.pool.QueryRow(ctx, `
		SELECT t.id, t.product_id, t.number, t.label, x.to_email,
		       t.status <> 'VALID' OR EXISTS (SELECT 1 FROM mail_sent WHERE key = $2)
		FROM ticket_transfers x JOIN tickets t ON t.id = x.to_ticket WHERE x.id = $1`, transferID, key).
		Scan(&ticketID, &productID, &number, &seat, &email, &sent)
	if err != nil {
		return fmt.Errorf("transfer %s to mail: %w", transferID, db.NotFound(err))
	}
	if sent {
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
	code := s.tickets.Code(ticketID, productID, number)
	quote, err := product.QuoteFor(ctx, s.pool, productID, []int32{number})
	if err != nil {
		return err
	}
	when := w.When(*dates, ev.TimeZone)
	pdf, err := brand.TicketsPDF([]letter.Ticket{{Event: ev.Name, When: when, Where: ev.Venue.Where(), Entry: ev.EntryNote,
		Seat: seat, Holder: email, Code: code}}, time.Now())
	if err != nil {
		return err
	}
	c := letter.Content{Subject: w.T("transferSubject", "event", ev.Name), Heading: w.T("transferHeading"),
		Intro: []string{w.T("transferIntro", "event", ev.Name)}, Facts: []letter.Fact{{Label: w.T("when"), Value: when}},
		Lines:      []letter.Fact{{Label: seat, Value: w.Money(quote.Cents, quote.Currency)}},
		CodesIntro: w.T("ticketsCodes"), Codes: []string{seat + ": " + code},
		Attachments: []mail.Attachment{{Name: "ticket.pdf", ContentType: "application/pdf", Data: pdf}}}
	if where := ev.Venue.Where(); where != "" {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("where"), Value: where})
	}
	if ev.EntryNote != "" {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("entry"), Value: ev.EntryNote})
	}
	l, err := brand.Compose(email, c)
	if err != nil {
		return err
	}
	return s.mailOnce(ctx, key, l)
}
