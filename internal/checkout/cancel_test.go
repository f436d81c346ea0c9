package checkout_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
)

// Cancelling a date over the API: nothing more sells or checks in, every
// order is refunded once (one already partly refunded included), the seats
// stay off sale, each buyer gets one mail however many orders they had,
// and the invariants hold.
func TestCancelDateRefundsEveryOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	key := b.env.Tenant.APIKey

	alice1, _ := b.confirmed(t, "alice")
	alice2, _ := b.confirmed(t, "alice")
	bob, _ := b.confirmed(t, "bob")
	carol, _ := b.confirmed(t, "carol")
	partial := b.refund(t, carol.ID, carol.Tickets[0].ID)
	b.waitRefund(t, partial.ID, checkout.StatusRefunded)
	pending := b.hold(t, "dave") // held, not yet an order
	_, err := b.env.Products.Update(ctx, b.product.TenantID, b.product.ID, product.Update{Transfers: &product.Transfers{HoursBefore: 0}})
	require.NoError(t, err)
	_, _, err = b.env.Checkout.TransferTicket(ctx, checkout.TransferParams{TenantID: b.product.TenantID, BuyerID: "bob",
		TicketID: bob.Tickets[1].ID, Email: "zoe@example.test", IdempotencyKey: "gift"})
	require.NoError(t, err)

	path := "/v1/products/" + b.product.ID.String() + "/cancellation"
	code, body := b.call(t, http.MethodGet, path, key, nil)
	require.Equal(t, http.StatusNotFound, code, "not cancelled yet: %v", body)
	code, body = b.call(t, http.MethodPost, path, key, map[string]any{})
	require.Equal(t, http.StatusUnprocessableEntity, code, "a reason is required: %v", body)
	code, body = b.call(t, http.MethodPost, path, key, map[string]any{"reason": "The artist is ill."})
	require.Equal(t, http.StatusAccepted, code, "%v", body)
	require.Equal(t, "The artist is ill.", body["reason"])

	// At once: nothing more is sold, and no ticket admits.
	res := b.checkIn(t, bob.Tickets[0].Code)
	require.Equal(t, checkout.VoidTicket, res.Result)
	require.Equal(t, "EVENT_CANCELLED", res.Void)
	_, _, err = b.env.Checkout.Create(ctx, checkout.CreateParams{TenantID: b.product.TenantID, BuyerID: "dave",
		IdempotencyKey: "late", HoldID: pending, PaymentMethod: pspsim.MethodOK})
	require.ErrorIs(t, err, product.ErrDateCancelled)
	r := b.env.Reserve(t, b.product, "erin", reservation.Params{Quantity: 1})
	b.env.Drain(t, b.product, 10)
	got := b.env.Get(t, b.product, r.ID)
	require.Equal(t, reservation.StatusRejected, got.Status)
	require.Equal(t, reservation.ReasonEventCancelled, got.Reason)
	code, _ = b.call(t, http.MethodPatch, "/v1/products/"+b.product.ID.String(), key, map[string]any{"publication": "PUBLISHED"})
	require.Equal(t, http.StatusConflict, code, "a cancelled date stays cancelled")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := b.call(c, http.MethodGet, path, key, nil)
		assert.Equal(c, http.StatusOK, code)
		assert.Equal(c, "DONE", body["state"], "%v", body)
	}, 30*time.Second, 50*time.Millisecond)
	_, body = b.call(t, http.MethodGet, path, key, nil)
	require.EqualValues(t, 4, body["refunded"], "one refund per order: %v", body)
	require.EqualValues(t, 0, body["remaining"])
	require.EqualValues(t, 4, body["buyersMailed"], "three buyers, and zoe, who holds a ticket bob gave her")

	for _, o := range []*checkout.Order{alice1, alice2, bob, carol} {
		got, err := b.env.Checkout.Get(ctx, b.product.TenantID, o.ID, "")
		require.NoError(t, err)
		require.Equal(t, checkout.StatusCancelled, got.Status)
		require.Equal(t, got.AmountCents, got.RefundedCents, "order %s refunded in full", o.ID)
	}
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1`, carol.ID), "the partial refund and the rest")
	for _, o := range []*checkout.Order{alice1, alice2, bob, carol} {
		require.Equal(t, 1, b.refundsAt("ref_"+b.status(t, `SELECT id::text FROM refunds WHERE order_id = $1 AND kind = 'EVENT_CANCELLED'`, o.ID)))
	}
	// Cancelled seats stay sold (nobody can buy a cancelled date); carol's
	// earlier refund went back on sale under the product's policy.
	require.Equal(t, 7, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, b.product.ID))

	// One mail per buyer, none of the refunds' own notices.
	require.Eventually(t, func() bool { return len(b.mailsTo("bob@example.test", "Cancelled")) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Len(t, b.mailsTo("alice@example.test", "Cancelled"), 1, "alice's two orders, one mail")
	require.Contains(t, decoded(b.mailsTo("alice@example.test", "Cancelled")[0]), "Your 4 tickets no longer admit")
	require.Contains(t, decoded(b.mailsTo("alice@example.test", "Cancelled")[0]), "€200.00")
	require.Contains(t, decoded(b.mailsTo("carol@example.test", "Cancelled")[0]), "Your ticket no longer admits")
	require.Contains(t, decoded(b.mailsTo("carol@example.test", "Cancelled")[0]), "The artist is ill.")
	require.Empty(t, b.mailsTo("bob@example.test", "Your refund"))
	require.Len(t, b.mailsTo("zoe@example.test", "Cancelled"), 1)
	require.Contains(t, decoded(b.mailsTo("zoe@example.test", "Cancelled")[0]), "the refund goes to them")

	// Cancelling again changes nothing.
	code, body = b.call(t, http.MethodPost, path, key, map[string]any{"reason": "again"})
	require.Equal(t, http.StatusAccepted, code)
	require.Equal(t, "The artist is ill.", body["reason"])
	b.requireSafe(t)
}
