package rehearsal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/payment"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/rehearsal"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// simulator runs a payment simulator and counts the calls it gets.
func simulator(t *testing.T) (payment.Provider, *atomic.Int64) {
	t.Helper()
	sim := pspsim.New(pspsim.Config{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sim.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return payment.NewSim(srv.URL, 5*time.Second), &calls
}

// A rehearsal sells a shadow copy out through the real waiting room, claims
// and test-mode payments, reports what it saw, and leaves the real
// product's stock, requests, orders and payment provider untouched.
func TestRehearsalLeavesTheRealSaleAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	real, realCalls := simulator(t)
	testMode, testCalls := simulator(t)
	env := testfix.New(t, testfix.Options{Work: true, Provider: real, TestModeProvider: testMode})
	p := env.Product(t, testfix.ProductOpts{Capacity: 40, PerBuyerLimit: 2,
		WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 500, ShoppingSeconds: 60}})
	// A real buyer already holds a number.
	r := env.Reserve(t, p, "real-buyer", reservation.Params{Quantity: 1})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, r.ID).Status)
	reh, err := env.Rehearsals.Start(ctx, env.Tenant.ID, p.ID, rehearsal.Params{Buyers: 60, ActiveShoppers: 30,
		ShoppingSeconds: 2, ArrivalSeconds: 3, PayShare: 0.5, DeadlineSeconds: 60})
	require.NoError(t, err)
	// Start answers with the row as committed; a worker may have taken it
	// up already.
	require.Contains(t, []string{"QUEUED", "RUNNING"}, reh.Status)
	_, err = env.Rehearsals.Start(ctx, env.Tenant.ID, p.ID, rehearsal.Params{Buyers: 1})
	require.ErrorIs(t, err, rehearsal.ErrBusy, "one at a time per product")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reh, err = env.Rehearsals.Get(ctx, env.Tenant.ID, reh.ID)
		assert.NoError(c, err)
		assert.Contains(c, []string{"DONE", "FAILED"}, reh.Status)
	}, 90*time.Second, 200*time.Millisecond)
	require.Equal(t, "DONE", reh.Status, reh.Error)
	res := reh.Result
	require.NotNil(t, res)
	t.Logf("rehearsal: %+v", *res)
	require.True(t, res.SoldOut, "60 buyers wanting two each sell 40 numbers out")
	require.Positive(t, res.SellOutSeconds)
	require.EqualValues(t, 60, res.Arrived)
	require.Positive(t, res.Admitted)
	require.Positive(t, res.AdmissionRate)
	require.Positive(t, res.Held)
	require.Positive(t, res.Paid, "some paid with the test-mode provider")
	require.NotEmpty(t, res.Timeline)
	require.NotNil(t, reh.ShadowID)

	// The shadow was never in the store, and is gone now with all of it:
	// it holds no numbers against the tenant's quota.
	_, err = env.Products.GetAny(ctx, *reh.ShadowID)
	require.ErrorIs(t, err, db.ErrNotFound, "the shadow is deleted when the rehearsal ends")
	for _, table := range []string{"reservation_requests", "holds", "claims", "orders", "tickets", "inventory",
		"waiting_rooms", "queue_entries"} {
		var n int
		require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE product_id = $1`, *reh.ShadowID).Scan(&n))
		require.Zero(t, n, "%s of the shadow", table)
	}
	listed, err := env.Products.List(ctx, env.Tenant.ID, 100)
	require.NoError(t, err)
	require.Len(t, listed, 1, "the tenant's list shows the real product only")

	// The real sale is as it was.
	counts, err := inventory.CountsOf(ctx, env.Schema.Pool, []uuid.UUID{p.ID})
	require.NoError(t, err)
	require.Equal(t, inventory.Counts{Available: 39, Held: 1}, counts[p.ID])
	live, err := reservation.ReadLive(ctx, env.Schema.Pool, p.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"HELD": 1}, live.ByStatus, "no request of the rehearsal reached the real product")
	orders, err := checkout.ReadLive(ctx, env.Schema.Pool, p.ID)
	require.NoError(t, err)
	require.Empty(t, orders.OrdersByStatus)
	require.Zero(t, realCalls.Load(), "the real provider was never called")
	require.Positive(t, testCalls.Load())
	env.RequireInvariants(t)
}

// While it runs a shadow counts against the tenant's quota like any
// product: a rehearsal that would take the tenant over it fails, saying so,
// and leaves nothing behind.
func TestRehearsalCountsAgainstTheQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testfix.New(t, testfix.Options{Work: true})
	p := env.Product(t, testfix.ProductOpts{Capacity: 40})
	require.NoError(t, env.Tenants.SetQuota(ctx, env.Tenant.ID, tenant.Quota{Products: 10, Capacity: 60}))
	reh, err := env.Rehearsals.Start(ctx, env.Tenant.ID, p.ID, rehearsal.Params{Buyers: 5, DeadlineSeconds: 30})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reh, err = env.Rehearsals.Get(ctx, env.Tenant.ID, reh.ID)
		assert.NoError(c, err)
		assert.Contains(c, []string{"DONE", "FAILED"}, reh.Status)
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, "FAILED", reh.Status)
	require.Contains(t, reh.Error, "quota")
	var n int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM products WHERE tenant_id = $1`, env.Tenant.ID).Scan(&n))
	require.Equal(t, 1, n, "no shadow left")
}
