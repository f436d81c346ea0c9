package storefront_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/letter/lettertest"
	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// The Portuguese store end to end: signed in by an e-mail code, two seats
// held and paid for, every step in Portuguese with amounts as Portugal
// writes them; the login code, the ticket mail and the PDF in Portuguese,
// in the tenant's name, answers going to its box office.
func TestPortugueseStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	_, err := w.env.Tenants.SetStore(ctx, w.env.Tenant.ID, tenant.StoreSettings{Name: "Teatro Aurora",
		Theme: map[string]string{"language": "pt", "primary": "#7a1f3d", "replyTo": "bilheteira@aurora.example"}})
	require.NoError(t, err)
	p := w.env.Product(t, testfix.ProductOpts{Layout: venue(), Capacity: 40})
	fee := int64(150)
	_, err = w.env.Products.Update(ctx, w.env.Tenant.ID, p.ID, product.Update{FeeCents: &fee})
	require.NoError(t, err)
	store := w.publish(t, w.env.Tenant.Slug)

	b := browsertest.Browser(t)
	w.logInByEmail(t, b, store, "rita@example.test")
	code := w.sink.Messages()[0]
	require.Equal(t, "Código de acesso a Teatro Aurora", code.Subject(), "the login code in the store's name and language")
	require.Contains(t, code.Header("From"), "Teatro Aurora")

	browsertest.Do(t, b,
		chromedp.Navigate(store+"#/"), chromedp.WaitVisible(chromedp.CSS(`ul.cards`)))
	require.Contains(t, browsertest.Text(t, b, "ul.cards"), "desde 51,50\u00a0€", "the lowest price with its fee, as Portugal writes it")
	browsertest.Step(t, b, "1-inicio")
	browsertest.Do(t, b, openProduct(p.ID.String()), clickSeat(2), clickSeat(3),
		browsertest.WaitJS(`window.__seatMap.picked.size === 2`))
	// The seats are named in Portuguese wherever the shopper meets them:
	// the map's labels, the hold, the mail and the PDF.
	label, err := chromedp.Run(b, chromedp.Evaluate[string](`window.__seatMap.seats[2].full`))
	require.NoError(t, err)
	require.Equal(t, "North · Fila A · Lugar 3", label)
	browsertest.Do(t, b,
		chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`.summary`)))
	held := browsertest.Text(t, b, "main")
	require.Contains(t, held, "Estes lugares são seus durante")
	require.Contains(t, held, "North · Fila A · Lugar 3")
	require.Contains(t, held, "Taxa de serviço (2 × 1,50\u00a0€)\t3,00\u00a0€")
	require.Contains(t, held, "Total\t183,00\u00a0€")
	browsertest.Step(t, b, "2-reserva")
	browsertest.Do(t, b, chromedp.Click(chromedp.CSS(`.bar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`form.checkout`)))
	require.Equal(t, "Pagar 183,00\u00a0€", browsertest.Text(t, b, "form.checkout button.primary"))
	require.Contains(t, browsertest.Text(t, b, "main"), "Modo de teste")
	browsertest.Step(t, b, "3-pagamento")
	browsertest.Do(t, b, pay("rita@example.test", pspsim.MethodOK), tickets(2))
	require.Contains(t, browsertest.Text(t, b, "main"), "Descarregar bilhetes (PDF)")
	browsertest.Step(t, b, "4-bilhetes")

	var letter mail.Parts
	var m mail.Message
	require.Eventually(t, func() bool {
		for _, msg := range w.sink.Messages() {
			if msg.To == "rita@example.test" && strings.HasPrefix(msg.Subject(), "Os seus bilhetes") {
				m = msg
				letter, err = msg.Parts()
				return err == nil
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the tickets are mailed")
	require.Equal(t, "<bilheteira@aurora.example>", m.Header("Reply-To"))
	require.Contains(t, letter.HTML, `lang="pt"`)
	require.Contains(t, letter.HTML, "#7a1f3d", "the tenant's colour")
	require.Contains(t, letter.Text, "Total pago")
	require.Contains(t, letter.Text, "183,00 €")
	require.Contains(t, letter.Text, "North · Fila A · Lugar 3")
	pages, err := lettertest.Read(letter.Attachments[0].Data)
	require.NoError(t, err)
	require.Len(t, pages, 2)
	require.Contains(t, pages[0].Text, "Bilhete")
	require.Contains(t, pages[0].Text, "Teatro Aurora")
	require.Contains(t, pages[0].Text, "North · Fila A · Lugar 3")
	require.Len(t, pages[0].QR, 1)
}
