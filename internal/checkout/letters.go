package checkout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/letter"
	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/tenant"
)

// brandOf is how the tenant's letters look.
func (s *Service) brandOf(ctx context.Context, tenantID uuid.UUID) (letter.Brand, error) {
	p, err := tenant.ProfileOf(ctx, s.pool, tenantID)
	if err != nil {
		return letter.Brand{}, err
	}
	return letter.BrandOf(p), nil
}

// brandOfProduct is how the letters about a product look: its tenant's.
func (s *Service) brandOfProduct(ctx context.Context, productID uuid.UUID) (letter.Brand, error) {
	tenantID, err := product.TenantOf(ctx, s.pool, productID)
	if err != nil {
		return letter.Brand{}, err
	}
	return s.brandOf(ctx, tenantID)
}

// eventOf is the event of a product as the letters name it: its dates,
// and the event's name, or the product's own when the event has none.
func eventOf(ctx context.Context, q db.DBTX, productID uuid.UUID) (*product.Event, *product.Dates, string, error) {
	ev, dates, err := product.EventOf(ctx, q, productID)
	if err != nil {
		return nil, nil, "", err
	}
	name := ev.Name
	if name == "" {
		if name, err = product.NameOf(ctx, q, productID); err != nil {
			return nil, nil, "", err
		}
	}
	return ev, dates, name, nil
}

// ticketsOf is what the letters say of an order: its event and date, and
// the pages of its tickets that admit (a refunded or given-away ticket has
// no page), each with its seat's price.
type ticketsOf struct {
	event  product.Event
	dates  product.Dates
	name   string // the product's name: the event's, or the product's own
	order  *Order
	each   map[int32]int64 // price by number
	pages  []letter.Ticket
	holder string
}

func (s *Service) ticketsOf(ctx context.Context, b letter.Brand, tenantID, orderID uuid.UUID, buyerID string) (*ticketsOf, error) {
	o, err := s.Get(ctx, tenantID, orderID, buyerID)
	if err != nil {
		return nil, err
	}
	var email *string
	if err := s.pool.QueryRow(ctx, `SELECT email FROM orders WHERE id = $1`, orderID).Scan(&email); err != nil {
		return nil, fmt.Errorf("order %s: %w", orderID, err)
	}
	ev, dates, name, err := eventOf(ctx, s.pool, o.ProductID)
	if err != nil {
		return nil, err
	}
	quote, err := product.QuoteFor(ctx, s.pool, o.ProductID, o.Numbers)
	if err != nil {
		return nil, err
	}
	out := &ticketsOf{event: *ev, dates: *dates, name: name, order: o, each: map[int32]int64{}}
	for i, n := range o.Numbers {
		out.each[n] = quote.Each[i]
	}
	if email != nil {
		out.holder = *email
	}
	w := b.Words
	for _, t := range o.Tickets {
		if t.Code == "" {
			continue
		}
		out.pages = append(out.pages, letter.Ticket{Event: name, When: w.When(*dates, ev.TimeZone), Where: ev.Venue.Where(),
			Entry: ev.EntryNote, Seat: t.Seat, Price: w.Money(out.each[t.Number], o.Currency), Holder: out.holder,
			Order: db.ShortRef(o.ID), Code: t.Code})
	}
	return out, nil
}

// ErrNoTickets is a PDF asked for an order none of whose tickets admit.
var ErrNoTickets = errors.New("no ticket of this order admits")

// TicketsPDF is the order's tickets that admit, one page each, in the
// tenant's brand: for its buyer (buyerID set) or the tenant.
func (s *Service) TicketsPDF(ctx context.Context, tenantID, orderID uuid.UUID, buyerID string) ([]byte, error) {
	b, err := s.brandOf(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	t, err := s.ticketsOf(ctx, b, tenantID, orderID, buyerID)
	if err != nil {
		return nil, err
	}
	if len(t.pages) == 0 {
		return nil, ErrNoTickets
	}
	return b.TicketsPDF(t.pages, t.createdAt())
}

// createdAt dates a PDF by its order's confirmation.
func (t *ticketsOf) createdAt() time.Time {
	if t.order.ConfirmedAt != nil {
		return *t.order.ConfirmedAt
	}
	return t.order.CreatedAt
}

// ticketsLetter is the mail of a confirmed order: what, when and where,
// the seats with their prices and the total paid, the codes, and as
// attachments the PDF tickets and the calendar entry.
func (s *Service) ticketsLetter(ctx context.Context, tenantID, orderID uuid.UUID, to string) (mail.Letter, error) {
	b, err := s.brandOf(ctx, tenantID)
	if err != nil {
		return mail.Letter{}, err
	}
	t, err := s.ticketsOf(ctx, b, tenantID, orderID, "")
	if err != nil {
		return mail.Letter{}, err
	}
	w, o := b.Words, t.order
	c := letter.Content{
		Subject: w.T("ticketsSubject", "event", t.name),
		Heading: w.T("ticketsHeading", "event", t.name),
		Intro:   []string{w.T("ticketsIntro")},
		Facts:   t.facts(w),
		Total:   &letter.Fact{Label: w.T("total"), Value: w.Money(o.AmountCents, o.Currency)},
	}
	for i, seat := range o.Seats {
		c.Lines = append(c.Lines, letter.Fact{Label: seat, Value: w.Money(t.each[o.Numbers[i]], o.Currency)})
	}
	if o.DiscountCents > 0 {
		c.Lines = append(c.Lines, letter.Fact{Label: w.T("discount", "code", o.DiscountCode), Value: "−" + w.Money(o.DiscountCents, o.Currency)})
	}
	if o.FeeCents > 0 {
		c.Lines = append(c.Lines, letter.Fact{Label: w.T("fees"), Value: w.Money(o.FeeCents, o.Currency)})
	}
	if len(t.pages) > 0 {
		c.CodesIntro = w.T("ticketsCodes")
		for _, p := range t.pages {
			c.Codes = append(c.Codes, p.Seat+": "+p.Code)
		}
		pdf, err := b.TicketsPDF(t.pages, t.createdAt())
		if err != nil {
			return mail.Letter{}, err
		}
		c.Attachments = append(c.Attachments, mail.Attachment{Name: "tickets.pdf", ContentType: "application/pdf", Data: pdf})
	}
	if t.dates.StartsAt != nil {
		ics, err := s.Calendar(ctx, tenantID, orderID, "")
		if err != nil {
			return mail.Letter{}, err
		}
		c.Attachments = append(c.Attachments, mail.Attachment{Name: "event.ics", ContentType: "text/calendar", Data: ics})
	}
	c.Button = orderButton(b, o.ID)
	return b.Compose(to, c)
}

// orderButton is a letter's way to the order's page in the tenant's store
// (nil when the store's address is not known).
func orderButton(b letter.Brand, orderID uuid.UUID) *letter.Link {
	if b.StoreURL == "" {
		return nil
	}
	return &letter.Link{Text: b.Words.T("viewOrder"), URL: b.StoreURL + "#/o/" + orderID.String()}
}

// facts are the when, where and entry of the letters about an order.
func (t *ticketsOf) facts(w letter.Words) []letter.Fact {
	f := []letter.Fact{{Label: w.T("when"), Value: w.When(t.dates, t.event.TimeZone)}}
	if where := t.event.Venue.Where(); where != "" {
		f = append(f, letter.Fact{Label: w.T("where"), Value: where})
	}
	if t.event.EntryNote != "" {
		f = append(f, letter.Fact{Label: w.T("entry"), Value: t.event.EntryNote})
	}
	return append(f, letter.Fact{Label: w.T("order"), Value: db.ShortRef(t.order.ID)})
}
