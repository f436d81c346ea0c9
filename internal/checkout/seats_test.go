package checkout_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// Seats are priced by their level and named by their label from the hold
// to the order, its tickets, the e-mail, "my orders" and each ticket's QR.
func TestSeatLabelsAndLevelPrices(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	layout := &product.Layout{
		PriceLevels: []product.PriceLevel{{Name: "Front", PriceCents: 9000}},
		Sections: []product.Section{
			{Name: "North", PriceLevel: "Front", Rows: []product.Row{{Name: "A", Seats: 2,
				SeatList: []product.Seat{{Label: "7", X: 0, Y: 0}, {Label: "8", X: 1, Y: 0}}}}},
			{Name: "South", Rows: []product.Row{{Name: "B", Seats: 3}}},
		},
	}
	p := b.env.Product(t, testfix.ProductOpts{Layout: layout, Capacity: 5})
	r := b.env.Reserve(t, p, "dora", reservation.Params{Numbers: []int32{1, 3}})
	b.env.Drain(t, p, 10)
	held := b.env.Get(t, p, r.ID)
	require.Equal(t, reservation.StatusHeld, held.Status)

	o, _, err := b.env.Checkout.Create(context.Background(), checkout.CreateParams{TenantID: p.TenantID, BuyerID: "dora",
		IdempotencyKey: uuid.NewString(), HoldID: *held.HoldID, PaymentMethod: pspsim.MethodOK, Email: "dora@example.test"})
	require.NoError(t, err)
	require.Equal(t, int64(9000+5000), o.AmountCents, "North at the Front level, South at the product's price")
	require.Equal(t, []string{"North · Row A · Seat 7", "South · Row B · Seat 1"}, o.Seats)
	o = b.wait(t, o.ID, settled)
	require.Equal(t, checkout.StatusConfirmed, o.Status)
	require.Len(t, o.Tickets, 2)
	require.Equal(t, "North · Row A · Seat 7", o.Tickets[0].Seat)
	require.Eventually(t, func() bool {
		for _, m := range b.sink.Messages() {
			if m.To == "dora@example.test" && strings.Contains(m.Data, "North =C2=B7 Row A =C2=B7 Seat 7") ||
				m.To == "dora@example.test" && strings.Contains(m.Data, "North · Row A · Seat 7") {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the e-mail names the seats")

	// My orders and the QR codes, over HTTP, for the buyer only.
	tok, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "dora", time.Hour)
	require.NoError(t, err)
	code, res := b.call(t, http.MethodGet, "/v1/orders", tok, nil)
	require.Equal(t, http.StatusOK, code, res)
	orders := res["orders"].([]any)
	require.Len(t, orders, 1)
	require.Equal(t, o.ID.String(), orders[0].(map[string]any)["id"])

	qr := func(token string, id uuid.UUID) (int, string, string) {
		req, err := http.NewRequest(http.MethodGet, b.apiURL+"/v1/tickets/"+id.String()+"/qr.svg", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	status, ctype, body := qr(tok, o.Tickets[0].ID)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "image/svg+xml", ctype)
	require.True(t, strings.HasPrefix(body, "<svg"), body)
	other, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "eve", time.Hour)
	require.NoError(t, err)
	status, _, _ = qr(other, o.Tickets[0].ID)
	require.Equal(t, http.StatusNotFound, status, "another buyer's ticket")
	code, res = b.call(t, http.MethodGet, "/v1/orders", other, nil)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, res["orders"])

	// The gate sees the seat too.
	v, err := b.env.Checkout.VerifyTicket(context.Background(), p.TenantID, o.Tickets[1].Code)
	require.NoError(t, err)
	require.Equal(t, "South · Row B · Seat 1", v.Seat)
}
