package checkout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/db"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// failHoldLookup makes the API's hold-ownership query fail the way a
// database error would (its context is cancelled); every other query runs.
type failHoldLookup struct{}

func (failHoldLookup) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM holds h JOIN reservation_requests r ON r.id = h.request_id") { // reservation.HoldProduct
		c, cancel := context.WithCancel(ctx)
		cancel()
		return c
	}
	return ctx
}

func (failHoldLookup) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A database error while checking whose hold it is must not wave the buyer
// past the waiting room: only "no such hold" may (checkout answers 404
// itself). It once let any error through.
func TestHoldAccessCheckFailsClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 1}
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10, WaitingRoom: room})
	r := b.env.Reserve(t, p, "dora", reservation.Params{Quantity: 1})
	b.env.Drain(t, p, 10)
	hold := b.env.Get(t, p, r.ID).HoldID
	require.NotNil(t, hold)

	traced, err := db.Open(context.Background(), b.env.Schema.URL,
		db.PoolOptions{MaxConns: 4, Schema: b.env.Schema.Name, Tracer: failHoldLookup{}})
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	srv := api.New(api.Deps{Pool: traced, Tenants: tenant.NewStore(traced, b.env.Keys), Products: b.env.Products,
		Reservations: b.env.Service, Logger: b.env.Logger, River: b.env.River, Checkout: b.env.Checkout,
		WaitingRoom: b.env.Rooms, WebhookSecrets: []string{webhookSecret}})
	tok, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "dora", time.Hour)
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodPost, "/v1/orders",
		strings.NewReader(`{"holdId":"`+hold.String()+`","paymentMethod":"sim_ok"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "no-access-token")
	resp, err := srv.App().Test(req, 10_000)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.NotEqual(t, http.StatusAccepted, resp.StatusCode, "no access token, and the check could not run")
	require.GreaterOrEqual(t, resp.StatusCode, 500)
	var orders int
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), `SELECT count(*) FROM orders`).Scan(&orders))
	require.Zero(t, orders)
}
