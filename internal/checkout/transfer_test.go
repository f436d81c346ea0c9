package checkout_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/login"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
)

// buyerToken signs a buyer token of the bundle's tenant.
func (b *testBundle) buyerToken(t *testing.T, buyer string) string {
	t.Helper()
	tok, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, buyer, time.Hour)
	require.NoError(t, err)
	return tok
}

// A ticket handed to another address over the API: the old code stops
// admitting, the receiver is mailed a new one that checks in and sees the
// ticket under the identity they sign in with; the giver's order keeps the
// history without the new code; the policy's window and count, the
// receiver's limit and a refund of the received ticket all hold.
func TestTransferTicket(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	alice, _ := b.confirmed(t, "alice")
	oldCode := alice.Tickets[0].Code
	aliceTok := b.buyerToken(t, "alice")
	path := "/v1/tickets/" + alice.Tickets[0].ID.String() + "/transfer"
	to := map[string]any{"email": "Bob@Example.test"}

	code, body := b.call(t, http.MethodPost, path, aliceTok, to, "Idempotency-Key", "t1")
	require.Equal(t, http.StatusConflict, code, "off by default: %v", body)
	require.Equal(t, "TRANSFER_CLOSED", body["code"])
	_, err := b.env.Products.Update(ctx, b.product.TenantID, b.product.ID, product.Update{Transfers: &product.Transfers{HoursBefore: 2}})
	require.NoError(t, err)

	code, body = b.call(t, http.MethodPost, path, aliceTok, to, "Idempotency-Key", "t1")
	require.Equal(t, http.StatusCreated, code, "%v", body)
	require.Equal(t, "bob@example.test", body["toEmail"])
	code, again := b.call(t, http.MethodPost, path, aliceTok, to, "Idempotency-Key", "t1")
	require.Equal(t, http.StatusOK, code, "the same key answers the same transfer")
	require.Equal(t, body["id"], again["id"])
	code, _ = b.call(t, http.MethodPost, path, aliceTok, to, "Idempotency-Key", "t2")
	require.Equal(t, http.StatusConflict, code, "the ticket is no longer alice's to give")

	res := b.checkIn(t, oldCode)
	require.Equal(t, checkout.VoidTicket, res.Result)
	require.Equal(t, "TRANSFERRED", res.Void)

	// The receiver's mail carries the new code, which admits.
	var mailed string
	require.Eventually(t, func() bool {
		m := b.mailsTo("bob@example.test", "A ticket for you")
		if len(m) == 1 {
			mailed = decoded(m[0])
		}
		return len(m) == 1
	}, 10*time.Second, 20*time.Millisecond)
	bob, err := login.BuyerForEmail(ctx, b.env.Schema.Pool, b.product.TenantID, "bob@example.test")
	require.NoError(t, err)
	bobTok := b.buyerToken(t, bob)
	code, held := b.call(t, http.MethodGet, "/v1/tickets", bobTok, nil)
	require.Equal(t, http.StatusOK, code)
	tickets := held["tickets"].([]any)
	require.Len(t, tickets, 1)
	got := tickets[0].(map[string]any)
	require.Equal(t, true, got["received"])
	newCode := got["code"].(string)
	require.NotEqual(t, oldCode, newCode)
	require.Contains(t, mailed, newCode)
	require.Equal(t, checkout.CheckedIn, b.checkIn(t, newCode).Result)

	// The giver's order keeps both tickets, the new one without its code.
	order, err := b.env.Checkout.Get(ctx, b.product.TenantID, alice.ID, "alice")
	require.NoError(t, err)
	require.Len(t, order.Tickets, 3)
	for _, tk := range order.Tickets {
		switch {
		case tk.ID == alice.Tickets[0].ID:
			require.Equal(t, "TRANSFERRED", tk.Status)
		case tk.HeldBy != "":
			require.Equal(t, "bob@example.test", tk.HeldBy)
			require.Empty(t, tk.Code, "the giver never sees the receiver's code")
		default:
			require.NotEmpty(t, tk.Code)
		}
	}
	timeline, err := b.env.Checkout.OrderTimeline(ctx, b.product.TenantID, alice.ID)
	require.NoError(t, err)
	require.Len(t, timeline.Transfers, 1)

	// Once only by default, and used tickets stay put.
	code, body = b.call(t, http.MethodPost, "/v1/tickets/"+got["id"].(string)+"/transfer", bobTok,
		map[string]any{"email": "carol@example.test"}, "Idempotency-Key", "t3")
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, []any{"TRANSFER_LIMIT", "TICKET_NOT_TRANSFERABLE"}, body["code"])
	code, body = b.call(t, http.MethodPost, "/v1/tickets/"+alice.Tickets[1].ID.String()+"/transfer", aliceTok,
		map[string]any{"email": "not an address"}, "Idempotency-Key", "t5")
	require.Equal(t, http.StatusUnprocessableEntity, code, "%v", body)

	// The receiver's limit counts what they received: with a limit of 2,
	// dave, given two, can receive no third and buy no more.
	limit := 2
	_, err = b.env.Products.Update(ctx, b.product.TenantID, b.product.ID, product.Update{PerBuyerLimit: &limit})
	require.NoError(t, err)
	dave, err := login.BuyerForEmail(ctx, b.env.Schema.Pool, b.product.TenantID, "dave@example.test")
	require.NoError(t, err)
	erin, _ := b.confirmed(t, "erin")
	erinTok := b.buyerToken(t, "erin")
	for i, tk := range erin.Tickets {
		code, body = b.call(t, http.MethodPost, "/v1/tickets/"+tk.ID.String()+"/transfer", erinTok,
			map[string]any{"email": "dave@example.test"}, "Idempotency-Key", "e"+string(rune('0'+i)))
		require.Equal(t, http.StatusCreated, code, "%v", body)
	}
	frank, _ := b.confirmed(t, "frank")
	code, body = b.call(t, http.MethodPost, "/v1/tickets/"+frank.Tickets[0].ID.String()+"/transfer", b.buyerToken(t, "frank"),
		map[string]any{"email": "dave@example.test"}, "Idempotency-Key", "f1")
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "RECEIVER_LIMIT", body["code"])
	r := b.env.Reserve(t, b.product, dave, reservation.Params{Quantity: 1})
	b.env.Drain(t, b.product, 10)
	require.Equal(t, reservation.ReasonLimitExceeded, b.env.Get(t, b.product, r.ID).Reason, "received tickets count")

	// A refund of a received ticket frees its receiver's limit, and erin,
	// who gave both away, may buy again.
	rf := b.refund(t, erin.ID)
	b.waitRefund(t, rf.ID, checkout.StatusRefunded)
	r = b.env.Reserve(t, b.product, dave, reservation.Params{Quantity: 2})
	b.env.Drain(t, b.product, 10)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, b.product, r.ID).Status)
	r = b.env.Reserve(t, b.product, "erin", reservation.Params{Quantity: 2})
	b.env.Drain(t, b.product, 10)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, b.product, r.ID).Status)
	require.True(t, strings.Contains(mailed, "transferred to you"))
	b.requireSafe(t)
}
