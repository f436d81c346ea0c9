package checkout_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/letter/lettertest"
	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
)

// download GETs one of the buyer's files, which must be of contentType.
func (b *testBundle) download(t *testing.T, path, token, contentType string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.apiURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, contentType, resp.Header.Get("Content-Type"))
	return body
}

// mailsTo returns the messages to addr whose subject starts with prefix.
func (b *testBundle) mailsTo(addr, prefix string) []mail.Message {
	var out []mail.Message
	for _, m := range b.sink.Messages() {
		if m.To == addr && strings.HasPrefix(m.Subject(), prefix) {
			out = append(out, m)
		}
	}
	return out
}

// A series of three dates of one event, over the API: the dates listed
// with the event, the ticket mail and the calendar entry saying when and
// where in the venue's time zone, a date change and a venue change mailed
// once to each holder, and the end of a sale.
func TestEventSeries(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	key := b.env.Tenant.APIKey

	code, ev := b.call(t, "POST", "/v1/events", key, map[string]any{"slug": "tour", "name": "The Tour",
		"description": "Three nights.", "entryNote": "18+", "timeZone": "Europe/Lisbon",
		"venue": map[string]any{"name": "Coliseu", "address": "Rua das Portas de Santo Antão 96, Lisboa"}})
	require.Equal(t, 201, code, "%v", ev)
	eventID := uuid.MustParse(ev["id"].(string))
	code, p := b.call(t, "POST", "/v1/events", key, map[string]any{"slug": "x", "name": "X", "timeZone": "Mars/Olympus"})
	require.Equal(t, 422, code)
	require.Equal(t, "INVALID_TIME_ZONE", p["code"])

	night := func(day int) time.Time { return time.Date(2027, 3, day, 20, 0, 0, 0, time.UTC) }
	var dates []*product.Product
	for i, day := range []int{14, 12, 13} {
		start := night(day)
		doors, end := start.Add(-time.Hour), start.Add(3*time.Hour)
		d, err := b.env.Products.Create(ctx, product.CreateParams{TenantID: b.env.Tenant.ID, Slug: "tour-" + string(rune('a'+i)),
			Name: "The Tour", Kind: product.KindNumbered, Capacity: 10, PriceCents: 2500, Currency: "EUR", EventID: &eventID,
			Dates: product.Dates{StartsAt: &start, DoorsAt: &doors, EndsAt: &end}})
		require.NoError(t, err)
		require.Equal(t, "Three nights.", d.Description, "the date shares the event's description")
		dates = append(dates, d)
	}
	code, got := b.call(t, "GET", "/v1/events/"+eventID.String(), key, nil)
	require.Equal(t, 200, code)
	list := got["dates"].([]any)
	require.Len(t, list, 3)
	require.Equal(t, dates[1].ID.String(), list[0].(map[string]any)["id"], "soonest first")
	require.Equal(t, "Coliseu", got["venue"].(map[string]any)["name"])

	// Dates out of order are refused.
	code, p = b.call(t, "PATCH", "/v1/products/"+dates[0].ID.String(), key, map[string]any{"doorsAt": night(15)})
	require.Equal(t, 422, code)
	require.Equal(t, "INVALID_DATES", p["code"], "%v", p)

	// Tickets for the 14th: the mail says when (Lisbon's time, winter:
	// UTC) and where.
	o := b.env.Confirmed(t, dates[0], "kate", 2, pspsim.MethodOK)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := b.mailsTo("kate@example.test", "Your tickets")
		if assert.Len(c, msgs, 1) {
			body := decoded(msgs[0])
			assert.Contains(c, body, "Sunday 14 March 2027, 20:00–23:00 (doors 19:00), Europe/Lisbon")
			assert.Contains(c, body, "Where       Coliseu, Rua das Portas de Santo Antão 96, Lisboa")
			assert.Contains(c, body, "Entry       18+")
		}
	}, 10*time.Second, 20*time.Millisecond)
	ticketsMailed(t, b, b.mailsTo("kate@example.test", "Your tickets")[0], o)

	// Add to calendar, for the buyer.
	buyer, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "kate", time.Hour)
	require.NoError(t, err)
	ics := b.download(t, "/v1/orders/"+o.ID.String()+"/calendar.ics", buyer, "text/calendar; charset=utf-8")
	for _, line := range []string{"BEGIN:VEVENT", "DTSTART:20270314T200000Z", "DTEND:20270314T230000Z", "SUMMARY:The Tour",
		`LOCATION:Coliseu\, Rua das Portas de Santo Antão 96\, Lisboa`, "UID:" + o.ID.String() + "@boxoffice"} {
		require.Contains(t, string(ics), line+"\r\n")
	}
	require.Contains(t, strings.ReplaceAll(string(ics), "\r\n ", ""), "DESCRIPTION:Seats: ", "the store's words, unfolded")

	// The tickets as a PDF, for the buyer: the same pages as the mail's.
	pdf := b.download(t, "/v1/orders/"+o.ID.String()+"/tickets.pdf", buyer, "application/pdf")
	parts, err := b.mailsTo("kate@example.test", "Your tickets")[0].Parts()
	require.NoError(t, err)
	downloaded, err := lettertest.Read(pdf)
	require.NoError(t, err)
	mailed, err := lettertest.Read(parts.Attachments[0].Data)
	require.NoError(t, err)
	require.Equal(t, mailed, downloaded, "the download is the mailed tickets")

	// The date moves: every holder is told once, with the new date; the
	// dates without tickets tell no one.
	moved := night(21)
	_, err = b.env.Products.Update(ctx, b.env.Tenant.ID, dates[0].ID, product.Update{StartsAt: &moved,
		DoorsAt: ptr(moved.Add(-time.Hour)), EndsAt: ptr(moved.Add(3 * time.Hour))})
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE topic = 'event.changed'`))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := b.mailsTo("kate@example.test", "Changed: The Tour")
		if assert.Len(c, msgs, 1) {
			assert.Contains(c, decoded(msgs[0]), "Sunday 21 March 2027, 20:00")
		}
	}, 10*time.Second, 20*time.Millisecond)
	code, p = b.call(t, "PATCH", "/v1/events/"+eventID.String(), key, map[string]any{
		"venue": map[string]any{"name": "Campo Pequeno", "address": "Lisboa"}})
	require.Equal(t, 200, code, "%v", p)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := b.mailsTo("kate@example.test", "Changed: The Tour")
		if assert.Len(c, msgs, 2) {
			assert.Contains(c, decoded(msgs[1]), "Campo Pequeno, Lisboa")
		}
	}, 10*time.Second, 20*time.Millisecond)
	// Each notice is recorded just after it is sent.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 2, b.count(c, `SELECT count(*) FROM mail_sent`), "one notice per order and change")
	}, 10*time.Second, 20*time.Millisecond)

	// The sale of the 12th ends: reservations are refused, the store says
	// closed.
	_, err = b.env.Products.Update(ctx, b.env.Tenant.ID, dates[1].ID, product.Update{OffSaleAt: ptr(time.Now().Add(time.Second))})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, p := b.call(c, "POST", "/v1/products/"+dates[1].ID.String()+"/reservations", buyer,
			map[string]any{"quantity": 1}, "Idempotency-Key", uuid.NewString())
		assert.Equal(c, 409, code)
		assert.Equal(c, "SALE_CLOSED", p["code"])
	}, 10*time.Second, 100*time.Millisecond)
}

func ptr[T any](v T) *T { return &v }
