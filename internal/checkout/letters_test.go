package checkout_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/letter/lettertest"
	"boxoffice/internal/mail"
)

// ticketsMailed checks the tickets mail of a confirmed order as its reader
// meets it: an HTML body in the tenant's name with the total, its text
// twin, and the PDF tickets — one page per ticket, its QR code the
// ticket's code — and the calendar entry attached.
func ticketsMailed(t *testing.T, b *testBundle, m mail.Message, o *checkout.Order) {
	t.Helper()
	full, err := b.env.Checkout.Get(context.Background(), b.env.Tenant.ID, o.ID, "")
	require.NoError(t, err)
	require.Equal(t, `"Tenant" <tickets@boxoffice.test>`, m.Header("From"), "the tenant's name on the platform's address")
	p, err := m.Parts()
	require.NoError(t, err)
	require.Contains(t, p.HTML, "Tenant")
	require.Contains(t, p.HTML, "€50.00")
	require.Contains(t, p.Text, "Total paid  €50.00")
	require.NotContains(t, p.Text+p.HTML, "/v1/", "no API path for a shopper")
	require.Len(t, p.Attachments, 2)
	require.Equal(t, "tickets.pdf", p.Attachments[0].Name)
	require.Equal(t, "application/pdf", p.Attachments[0].ContentType)
	require.Equal(t, "event.ics", p.Attachments[1].Name)
	pages, err := lettertest.Read(p.Attachments[0].Data)
	require.NoError(t, err)
	require.Len(t, pages, len(full.Tickets))
	for i, tk := range full.Tickets {
		require.Contains(t, pages[i].Text, tk.Seat)
		require.Contains(t, pages[i].Text, "Coliseu")
		require.Equal(t, []string{tk.Code}, pages[i].QR, "the QR of page %d reads as its ticket's code", i+1)
	}
}
