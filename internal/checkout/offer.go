package checkout

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"boxoffice/internal/letter"
	"boxoffice/internal/waitlist"
)

// SendOfferArgs mails a waiting-list offer to the shopper it was made to.
type SendOfferArgs struct {
	EntryID uuid.UUID `json:"entry_id"`
}

func (SendOfferArgs) Kind() string { return "send_waitlist_offer" }

// InsertOpts makes it unique per offer while live.
func (SendOfferArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// SendOffer mails the next in line that numbers are theirs to reserve
// until the offer runs out, once (recorded in mail_sent after it goes),
// while the offer stands.
func (s *Service) SendOffer(ctx context.Context, entryID uuid.UUID) error {
	if s.mailer == nil {
		return nil
	}
	key := "offer-" + entryID.String()
	var sent bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mail_sent WHERE key = $1)`, key).Scan(&sent); err != nil {
		return fmt.Errorf("offer %s mailed: %w", entryID, err)
	}
	e, err := waitlist.ByID(ctx, s.pool, entryID)
	if err != nil {
		return err
	}
	if sent || e.State != waitlist.Offered || e.Offer == nil || !time.Now().Before(e.Offer.ExpiresAt) {
		return nil
	}
	ev, dates, name, err := eventOf(ctx, s.pool, e.ProductID)
	if err != nil {
		return err
	}
	brand, err := s.brandOfProduct(ctx, e.ProductID)
	if err != nil {
		return err
	}
	w := brand.Words
	loc, err := time.LoadLocation(ev.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	until := w.Date(e.Offer.ExpiresAt, loc)
	c := letter.Content{Subject: w.T("offerSubject", "event", name), Heading: w.T("offerHeading", "event", name),
		Intro: []string{w.T("offerIntro", "event", name, "n", strconv.Itoa(e.Offer.Quantity), "time", until)},
		Facts: []letter.Fact{{Label: w.T("when"), Value: w.When(*dates, ev.TimeZone)}, {Label: w.T("offerEnds"), Value: until}}}
	if where := ev.Venue.Where(); where != "" {
		c.Facts = append(c.Facts, letter.Fact{Label: w.T("where"), Value: where})
	}
	if brand.StoreURL != "" {
		c.Button = &letter.Link{Text: w.T("offerButton"), URL: brand.StoreURL + "#/p/" + e.ProductID.String()}
	}
	l, err := brand.Compose(e.Email, c)
	if err != nil {
		return err
	}
	return s.mailOnce(ctx, key, l)
}
