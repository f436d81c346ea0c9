package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/payment"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// The waiting list through the API: refused while numbers are for sale,
// bad input refused with its code, joined once per buyer, an offer spent
// only by its holder, declined, and counted for the tenant.
func TestWaitlistAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 2})
	path := "/v1/products/" + p.ID.String() + "/waitlist"
	bo, cy := buyerToken(t, b.env.Tenant, "bo", time.Hour), buyerToken(t, b.env.Tenant, "cy", time.Hour)
	join := map[string]any{"quantity": 1, "email": "bo@example.test"}

	requireProblem(t, b.do(t, http.MethodPost, path, bo, join), http.StatusConflict, "NOT_SOLD_OUT")
	requireProblem(t, b.do(t, http.MethodGet, path, bo, nil), http.StatusNotFound, "NOT_ON_WAITLIST")
	held := b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations", b.buyer, map[string]any{"quantity": 2},
		"Idempotency-Key", "all")
	require.Equal(t, http.StatusAccepted, held.status, string(held.raw))
	b.env.Drain(t, p, 10)

	requireProblem(t, b.do(t, http.MethodPost, path, bo, map[string]any{"quantity": 9, "email": "bo@example.test"}),
		http.StatusUnprocessableEntity, "QUANTITY_OUT_OF_RANGE")
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodPost, path, bo, map[string]any{"quantity": 1, "email": "nope"}).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.do(t, http.MethodPost, path, bo, map[string]any{"quantity": 1, "email": "bo@example.test", "extra": 1}).status)
	r := b.do(t, http.MethodPost, path, bo, join)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "WAITING", r.body["state"])
	require.EqualValues(t, 1, r.body["position"])
	entry := r.body["id"].(string)
	r = b.do(t, http.MethodPost, path, bo, join)
	require.Equal(t, http.StatusOK, r.status, "joining again keeps the place")
	require.Equal(t, entry, r.body["id"])
	require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, path, cy, map[string]any{"quantity": 1, "email": "cy@example.test"}).status)
	require.EqualValues(t, 2, b.do(t, http.MethodGet, path, cy, nil).body["position"])

	// Alice lets her two go: an offer each for Bo and Cy.
	var holdID string
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT hold_id::text FROM reservation_requests WHERE idempotency_key = 'all'`).Scan(&holdID))
	require.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/v1/holds/"+holdID, b.buyer, nil).status)
	_, err := b.env.Claimer.ServeWaitlists(context.Background(), time.Hour, 100)
	require.NoError(t, err)
	r = b.do(t, http.MethodGet, path, bo, nil)
	require.Equal(t, "OFFERED", r.body["state"], string(r.raw))
	offer := map[string]any{"quantity": 1, "offer": entry}
	reserve := "/v1/products/" + p.ID.String() + "/reservations"
	requireProblem(t, b.do(t, http.MethodPost, reserve, cy, offer, "Idempotency-Key", "cy-1"), http.StatusConflict, "OFFER_INVALID")
	r = b.do(t, http.MethodPost, reserve, bo, offer, "Idempotency-Key", "bo-1")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	b.env.Drain(t, p, 10)
	require.Equal(t, "CONVERTED", b.do(t, http.MethodGet, path, bo, nil).body["state"])

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path, cy, nil).status)
	requireProblem(t, b.do(t, http.MethodDelete, path, cy, nil), http.StatusNotFound, "NOT_ON_WAITLIST")
	sum := b.do(t, http.MethodGet, path+"/summary", b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, sum.status, string(sum.raw))
	require.EqualValues(t, 1, sum.body["converted"])
	require.EqualValues(t, 1, sum.body["declined"], string(sum.raw))
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, path+"/summary", bo, nil).status)
	b.env.RequireInvariants(t)
}

// On a product sold through a waiting room, seats taken with a
// waiting-list offer are paid for without the room's token: the offer let
// the shopper in, as a token would; a hold made without one still needs it.
func TestOfferAdmitsToCheckoutPastTheRoom(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{Provider: payment.NewSim("http://127.0.0.1:1", time.Second)})
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 3,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 60}})
	ctx := context.Background()
	cy := b.env.Reserve(t, p, "cy", reservation.Params{Quantity: 1})
	ana := b.env.Reserve(t, p, "ana", reservation.Params{Quantity: 2})
	b.env.Drain(t, p, 10)
	held := b.env.Get(t, p, ana.ID)
	bo := buyerToken(t, b.env.Tenant, "bo", time.Hour)
	r := b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/waitlist", bo, map[string]any{"quantity": 2, "email": "bo@example.test"})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	entry := r.body["id"].(string)
	_, err := b.env.Service.Release(ctx, p.TenantID, "ana", *held.HoldID)
	require.NoError(t, err)
	_, err = b.env.Claimer.ServeWaitlists(ctx, time.Hour, 100)
	require.NoError(t, err)

	r = b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations", bo, map[string]any{"quantity": 2, "offer": entry},
		"Idempotency-Key", "bo-offer")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	b.env.Drain(t, p, 10)
	mine := b.do(t, http.MethodGet, "/v1/reservations/"+r.body["id"].(string), bo, nil)
	require.Equal(t, reservation.StatusHeld, mine.body["status"], string(mine.raw))
	order := b.do(t, http.MethodPost, "/v1/orders", bo, map[string]any{"holdId": mine.body["holdId"], "paymentMethod": "sim_ok"},
		"Idempotency-Key", "bo-pay")
	require.Equal(t, http.StatusAccepted, order.status, "the offer admits to checkout: %s", order.raw)

	// Cy's hold, made without an offer, still needs the room's token.
	cyHold := b.env.Get(t, p, cy.ID)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/orders", buyerToken(t, b.env.Tenant, "cy", time.Hour),
		map[string]any{"holdId": cyHold.HoldID, "paymentMethod": "sim_ok"}, "Idempotency-Key", "cy-pay"),
		http.StatusUnauthorized, "ACCESS_TOKEN_REQUIRED")
}
