package reservation_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// A request the claim could only reject is decided as it is recorded, and
// one it might hold is queued for it.
func TestRefusedAsRecorded(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	ctx := context.Background()
	p := env.Product(t, testfix.ProductOpts{Capacity: 4})
	alice := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(1, 2)})
	require.Equal(t, reservation.StatusQueued, alice.Status)
	env.Drain(t, p, 10)
	alice = env.Get(t, p, alice.ID)
	require.Equal(t, reservation.StatusHeld, alice.Status)

	refused := func(buyer string, params reservation.Params, reason string) {
		t.Helper()
		r := env.Reserve(t, p, buyer, params)
		require.Equal(t, reservation.StatusRejected, r.Status, "%s asking %+v", buyer, params)
		require.Equal(t, reason, r.Reason)
		require.NotNil(t, r.ProcessedAt)
		// Recorded as decided, and nothing left for a claim to do.
		stored := env.Get(t, p, r.ID)
		require.Equal(t, reservation.StatusRejected, stored.Status)
		require.Equal(t, reason, stored.Reason)
		require.NotNil(t, stored.ProcessedAt)
		var queued int
		require.NoError(t, env.Schema.Pool.QueryRow(ctx,
			`SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, p.ID).Scan(&queued))
		require.Zero(t, queued)
	}
	queued := func(buyer string, params reservation.Params) uuid.UUID {
		t.Helper()
		r := env.Reserve(t, p, buyer, params)
		require.Equal(t, reservation.StatusQueued, r.Status, "%s asking %+v", buyer, params)
		return r.ID
	}

	refused("bob", reservation.Params{Numbers: testfix.Nums(2)}, reservation.ReasonSeatTaken)
	refused("bob", reservation.Params{Numbers: testfix.Nums(1), AcceptFewer: true}, reservation.ReasonSeatTaken)
	refused("bob", reservation.Params{Numbers: testfix.Nums(3, 1)}, reservation.ReasonSeatTaken)
	refused("bob", reservation.Params{Numbers: testfix.Nums(1, 2), AcceptFewer: true}, reservation.ReasonSeatTaken)
	refused("bob", reservation.Params{Quantity: 3}, reservation.ReasonNotEnoughLeft)
	// Some of them free: the claim takes those.
	carol := queued("carol", reservation.Params{Numbers: testfix.Nums(2, 3), AcceptFewer: true})
	dave := queued("dave", reservation.Params{Quantity: 3, AcceptFewer: true})
	env.Drain(t, p, 10)
	got := env.Get(t, p, carol)
	require.Equal(t, reservation.StatusHeld, got.Status)
	require.Equal(t, []int32{3}, got.Numbers)
	got = env.Get(t, p, dave)
	require.Equal(t, reservation.StatusHeld, got.Status)
	require.Equal(t, []int32{4}, got.Numbers)
	refused("erin", reservation.Params{Quantity: 1, AcceptFewer: true}, reservation.ReasonSoldOut)

	// A hold that ran out keeps its numbers until the sweeper comes, but
	// they are free for the claim: not refused.
	env.ExpireHold(t, *alice.HoldID)
	frank := queued("frank", reservation.Params{Numbers: testfix.Nums(2)})
	gina := queued("gina", reservation.Params{Quantity: 1})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, frank).Status)
	require.Equal(t, []int32{1}, env.Get(t, p, gina).Numbers)
	refused("hank", reservation.Params{Numbers: testfix.Nums(1)}, reservation.ReasonSeatTaken)

	// The same key again answers the refusal, as for any decided request.
	params := reservation.AcceptParams{Product: p, BuyerID: "ivan", IdempotencyKey: "k",
		Params: reservation.Params{Numbers: testfix.Nums(4)}}
	first, err := env.Service.Accept(ctx, params)
	require.NoError(t, err)
	require.Equal(t, reservation.ReasonSeatTaken, first.Request.Reason)
	again, err := env.Service.Accept(ctx, params)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.Request.ID, again.Request.ID)
	require.Equal(t, reservation.ReasonSeatTaken, again.Request.Reason)
	env.RequireInvariants(t)
}
