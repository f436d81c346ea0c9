package letter_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/letter"
	"boxoffice/internal/letter/lettertest"
	"boxoffice/internal/product"
	"boxoffice/internal/tenant"
)

func TestWordsOfEveryLanguageHaveEveryPhrase(t *testing.T) {
	t.Parallel()
	en := letter.WordsFor("en")
	for _, lang := range letter.Languages {
		w := letter.WordsFor(lang)
		require.Equal(t, lang, w.Lang())
		require.ElementsMatch(t, en.Keys(), w.Keys(), "%s has every phrase English has", lang)
		for _, key := range en.Keys() {
			require.NotEqual(t, key, w.T(key), "%s has %s", lang, key)
		}
		require.Len(t, strings.Fields(w.T("months")), 12)
		require.Len(t, strings.Fields(w.T("weekdays")), 7)
	}
	require.Equal(t, "en", letter.WordsFor("xx").Lang(), "an unknown language writes English")
}

func TestDatesAndMoneyAsEachLanguageWritesThem(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 12, 20, 0, 0, 0, time.UTC)
	doors := start.Add(-time.Hour)
	d := product.Dates{StartsAt: &start, DoorsAt: &doors}
	require.Equal(t, "Saturday 12 December 2026, 20:00 (doors 19:00), Europe/Lisbon", letter.WordsFor("en").When(d, "Europe/Lisbon"))
	require.Equal(t, "sábado, 12 de dezembro de 2026, 21:00 (abertura de portas 20:00), Europe/Madrid", letter.WordsFor("pt").When(d, "Europe/Madrid"))
	require.Equal(t, "€1,234.50", letter.WordsFor("en").Money(123450, "EUR"))
	require.Equal(t, "1.234,50 €", letter.WordsFor("pt").Money(123450, "EUR"))
	require.Equal(t, "12.00 CHF", letter.WordsFor("en").Money(1200, "CHF"))
	require.Equal(t, "Date to be announced", letter.WordsFor("en").When(product.Dates{}, "UTC"))
}

func TestALetterInTheTenantsNameWithItsTextTwin(t *testing.T) {
	t.Parallel()
	b := letter.BrandOf(&tenant.Profile{Name: "Teatro Aurora", Domains: []string{"bilhetes.aurora.example"},
		Theme: map[string]string{"primary": "#7a1f3d", "language": "pt", "replyTo": "bilheteira@aurora.example", "logoUrl": "logo/7c1e9a52-0b7c-4a0e-9d55-1f0a34c2b001.png"}})
	require.Equal(t, "https://bilhetes.aurora.example/logo/7c1e9a52-0b7c-4a0e-9d55-1f0a34c2b001.png", b.LogoURL)
	w := b.Words
	l, err := b.Compose("ana@example.test", letter.Content{
		Subject: w.T("ticketsSubject", "event", "Requiem <Mozart>"),
		Heading: w.T("ticketsHeading", "event", "Requiem <Mozart>"),
		Intro:   []string{w.T("ticketsIntro")},
		Facts:   []letter.Fact{{Label: w.T("when"), Value: "sábado"}},
		Lines:   []letter.Fact{{Label: "Plateia · Fila A · Lugar 7", Value: w.Money(4500, "EUR")}},
		Total:   &letter.Fact{Label: w.T("total"), Value: w.Money(4500, "EUR")},
		Button:  &letter.Link{Text: w.T("viewOrder"), URL: b.StoreURL + "#/o/1"},
	})
	require.NoError(t, err)
	require.Equal(t, "Teatro Aurora", l.FromName)
	require.Equal(t, "bilheteira@aurora.example", l.ReplyTo)
	require.Contains(t, l.HTML, `lang="pt"`)
	require.Contains(t, l.HTML, "#7a1f3d", "the tenant's colour")
	require.Contains(t, l.HTML, "Requiem &lt;Mozart&gt;", "the tenant's words are escaped")
	require.Contains(t, l.HTML, "45,00 €")
	require.Contains(t, l.Text, "Plateia · Fila A · Lugar 7  45,00 €")
	require.Contains(t, l.Text, "Total pago                  45,00 €")
	require.Contains(t, l.Text, "https://bilhetes.aurora.example/#/o/1")
	require.NotContains(t, l.Text, "/v1/", "no API path for a shopper")
}

func TestTicketsAsAPDFWithAReadableQRPerPage(t *testing.T) {
	t.Parallel()
	b := letter.BrandOf(&tenant.Profile{Name: "Estádio Atlântico", Theme: map[string]string{"language": "pt"}})
	tickets := []letter.Ticket{
		{Event: "Final da Taça", When: "sábado, 12 de dezembro de 2026, 20:00", Where: "Estádio Atlântico, Lisboa",
			Seat: "Norte · Fila A · Lugar 7", Holder: "ana@example.test", Order: "0193", Code: "T1.code-one-abcdefghijklmnop"},
		{Event: "Final da Taça", When: "sábado, 12 de dezembro de 2026, 20:00", Where: "Estádio Atlântico, Lisboa",
			Seat: "Norte · Fila A · Lugar 8", Holder: "ana@example.test", Order: "0193", Code: "T1.code-two-qrstuvwxyz012345"},
	}
	data, err := b.TicketsPDF(tickets, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	pages, err := lettertest.Read(data)
	require.NoError(t, err)
	require.Len(t, pages, 2)
	for i, p := range pages {
		require.Contains(t, p.Text, "Final da Taça")
		require.Contains(t, p.Text, tickets[i].Seat)
		require.Contains(t, p.Text, "Bilhete")
		require.Equal(t, []string{tickets[i].Code}, p.QR, "page %d's QR is its ticket's code", i+1)
	}
}
