package waitingroom_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/product"
	"boxoffice/internal/waitingroom"
)

// Mid-sale the organiser slows admission down, pauses it and resumes it:
// each step follows the settings as they are now, and the draw's
// commitment and places stay as published.
func TestAdmissionRateChangedMidSale(t *testing.T) {
	t.Parallel()
	b := setup(t, 1000, waitingroom.Settings{ActiveShoppers: 100, ShoppingSeconds: 10}, time.Now().Add(time.Hour))
	ctx := context.Background()
	b.drawn(t, 60)
	before, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	order, err := b.rooms.DrawOrder(ctx, b.product.ID)
	require.NoError(t, err)

	// A step covers the seconds since the last one as the database counts
	// them: a moment more than the test set when the machine is busy, so
	// one more shopper may be admitted.
	about := func(want int64, res waitingroom.TickResult) int64 {
		t.Helper()
		require.GreaterOrEqual(t, res.Admitted, want)
		require.LessOrEqual(t, res.Admitted, want+1)
		return res.Admitted
	}
	res := b.tick(t, 2*time.Second)
	require.InDelta(t, 10.0, res.Rate, 1e-9, "λ = 100 ÷ 10")
	admitted := about(20, res)

	tune := func(c product.AdmissionChange) {
		t.Helper()
		_, err := b.env.Products.TuneAdmission(ctx, b.product.TenantID, b.product.ID, c)
		require.NoError(t, err)
	}
	l, w := 100, 50
	tune(product.AdmissionChange{ActiveShoppers: &l, ShoppingSeconds: &w})
	res = b.tick(t, 5*time.Second)
	require.InDelta(t, 2.0, res.Rate, 1e-9, "the next step follows: λ = 100 ÷ 50")
	admitted += about(10, res)

	paused := true
	tune(product.AdmissionChange{Paused: &paused})
	res = b.tick(t, 5*time.Second)
	require.Zero(t, res.Admitted)
	require.Equal(t, "paused by the organiser", res.Reason)
	v, err := b.rooms.Queue(ctx, b.product.TenantID, b.product.ID, nil)
	require.NoError(t, err)
	require.True(t, v.Settings.Paused)
	require.Equal(t, admitted, v.Counts.Admitted)
	require.Equal(t, 60-admitted, v.Counts.Waiting)

	paused = false
	tune(product.AdmissionChange{Paused: &paused})
	// Resumed at λ = 2.
	about(10, b.tick(t, 5*time.Second))
	tune(product.AdmissionChange{Paused: &paused}) // no change: no event
	var topics []string
	require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `
		SELECT array_agg(topic ORDER BY id) FROM outbox WHERE topic LIKE 'sale.%' AND payload ->> 'productId' = $1`,
		b.product.ID.String()).Scan(&topics))
	require.Equal(t, []string{"sale.paused", "sale.resumed"}, topics, "tenants' webhooks hear of the pause and the resumption")

	p, err := b.env.Products.Get(ctx, b.product.TenantID, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, 50, p.WaitingRoom.ShoppingSeconds, "the product shows the room as it runs")
	after, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, before.Commitment, after.Commitment)
	again, err := b.rooms.DrawOrder(ctx, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, order, again, "the draw is untouched")
}

// The organiser looks a shopper up in the line and takes them out: their
// turn ends for polls and the access check, and the counts say so.
func TestQueueViewAndRemoval(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 2, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	ctx := context.Background()
	entries := b.drawn(t, 5)
	require.Equal(t, int64(2), b.tick(t, 5*time.Second).Admitted)

	v, err := b.rooms.Queue(ctx, b.product.TenantID, b.product.ID, nil)
	require.NoError(t, err)
	require.Equal(t, waitingroom.QueueCounts{Waiting: 3, Admitted: 2}, v.Counts)
	require.Len(t, v.Entries, 3, "the next in line")
	require.Equal(t, int64(3), v.Entries[0].Position)

	var target waitingroom.Entry
	for _, e := range entries {
		if e.ID == v.Entries[2].ID {
			target = e
		}
	}
	v, err = b.rooms.Queue(ctx, b.product.TenantID, b.product.ID, []string{target.BuyerID})
	require.NoError(t, err)
	require.Len(t, v.Entries, 1)
	require.Equal(t, target.ID, v.Entries[0].ID)

	other := b.env.NewTenant(t)
	require.Error(t, b.rooms.RemoveEntry(ctx, other.ID, b.product.ID, target.ID), "another tenant's line is not found")
	require.NoError(t, b.rooms.RemoveEntry(ctx, b.product.TenantID, b.product.ID, target.ID))
	require.NoError(t, b.rooms.RemoveEntry(ctx, b.product.TenantID, b.product.ID, target.ID), "removing twice changes nothing")
	require.Equal(t, waitingroom.StatusRemoved, b.pollFresh(t, target).Status)
	v, err = b.rooms.Queue(ctx, b.product.TenantID, b.product.ID, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), v.Counts.Removed)
	require.Equal(t, int64(2), v.Counts.Waiting)
}
