package checkout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/product"
)

// ErrNoDate refuses a calendar entry for a date not announced yet.
var ErrNoDate = errors.New("the event's date is not announced yet")

// Calendar returns an iCalendar (RFC 5545) entry for an order's date: the
// event, when (in UTC; calendars show it in their own zone) and where, and
// the seats, in the store's language. For the order's buyer (buyerID set)
// or its tenant.
func (s *Service) Calendar(ctx context.Context, tenantID, orderID uuid.UUID, buyerID string) ([]byte, error) {
	var productID uuid.UUID
	var seats []string
	err := s.pool.QueryRow(ctx, `
		SELECT product_id, seats FROM orders
		WHERE id = $1 AND tenant_id = $2 AND ($3 = '' OR buyer_id = $3) AND confirmed_at IS NOT NULL`,
		orderID, tenantID, buyerID).Scan(&productID, &seats)
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", orderID, db.NotFound(err))
	}
	ev, dates, err := product.EventOf(ctx, s.pool, productID)
	if err != nil {
		return nil, err
	}
	if dates.StartsAt == nil {
		return nil, ErrNoDate
	}
	brand, err := s.brandOf(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	w := brand.Words
	utc := func(t time.Time) string { return t.UTC().Format("20060102T150405Z") }
	desc := w.T("seats", "seats", strings.Join(seats, ", "))
	if dates.DoorsAt != nil {
		desc += "\n" + w.T("doorsAt", "time", dates.DoorsAt.In(product.Location(ev.TimeZone)).Format("15:04")+" "+ev.TimeZone)
	}
	if ev.EntryNote != "" {
		desc += "\n" + ev.EntryNote
	}
	lines := []string{"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//BoxOffice//Tickets//EN", "CALSCALE:GREGORIAN",
		"METHOD:PUBLISH", "BEGIN:VEVENT", "UID:" + orderID.String() + "@boxoffice", "DTSTAMP:" + utc(time.Now()),
		"DTSTART:" + utc(*dates.StartsAt)}
	if dates.EndsAt != nil {
		lines = append(lines, "DTEND:"+utc(*dates.EndsAt))
	}
	lines = append(lines, "SUMMARY:"+icsText(ev.Name))
	if where := ev.Venue.Where(); where != "" {
		lines = append(lines, "LOCATION:"+icsText(where))
	}
	if ev.Venue.MapURL != "" {
		lines = append(lines, "URL:"+ev.Venue.MapURL)
	}
	lines = append(lines, "DESCRIPTION:"+icsText(desc), "END:VEVENT", "END:VCALENDAR")
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(fold(l))
	}
	return []byte(b.String()), nil
}

// icsText escapes a TEXT value (RFC 5545 3.3.11).
func icsText(s string) string {
	return strings.NewReplacer(`\`, `\\`, ";", `\;`, ",", `\,`, "\r\n", `\n`, "\n", `\n`).Replace(s)
}

// fold ends a content line with CRLF, folded at 75 octets without splitting
// a UTF-8 character (RFC 5545 3.1).
func fold(line string) string {
	var b strings.Builder
	n := 0
	for _, r := range line {
		size := len(string(r))
		if n+size > 75 {
			b.WriteString("\r\n ")
			n = 1
		}
		b.WriteRune(r)
		n += size
	}
	b.WriteString("\r\n")
	return b.String()
}
