package reservation_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitlist"
)

// holdFor reserves quantity numbers for buyer and claims them.
func holdFor(t *testing.T, env *testfix.Env, p *product.Product, buyer string, params reservation.Params) *reservation.Request {
	t.Helper()
	r := env.Reserve(t, p, buyer, params)
	env.Drain(t, p, 100)
	return env.Get(t, p, r.ID)
}

// counters reads the product's inventory counters.
func counters(t *testing.T, env *testfix.Env, p *product.Product) *inventory.Snapshot {
	t.Helper()
	snap, err := inventory.Get(context.Background(), env.Schema.Pool, p.ID)
	require.NoError(t, err)
	return snap
}

func entryOf(t *testing.T, env *testfix.Env, p *product.Product, buyer string) *waitlist.Entry {
	t.Helper()
	e, err := env.Service.Waitlist(context.Background(), p.ID, buyer)
	require.NoError(t, err)
	return e
}

// serve runs one pass of the waiting-list job with offers lasting ttl.
func serve(t *testing.T, env *testfix.Env, ttl time.Duration) reservation.ServeResult {
	t.Helper()
	res, err := env.Claimer.ServeWaitlists(context.Background(), ttl, 1000)
	require.NoError(t, err)
	return res
}

// A sold-out product's line gets what comes back in order of joining: a
// released hold's and an expired hold's numbers become offers, never more
// than are free, withheld from everyone else; an offer is spent by its
// holder only; a declined or lapsed offer moves on; with no one left in
// line the numbers are on sale again.
func TestWaitingListGetsFreedNumbersInOrder(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 4})
	ctx := context.Background()

	a := holdFor(t, env, p, "ana", reservation.Params{Quantity: 2})
	_, _, err := env.Service.JoinWaitlist(ctx, p, "xavi", "xavi@example.test", 1)
	require.ErrorIs(t, err, reservation.ErrNotSoldOut, "the line is for sold-out products")
	b := holdFor(t, env, p, "bea", reservation.Params{Quantity: 2})
	require.Equal(t, reservation.StatusHeld, b.Status)

	for _, who := range []string{"xavi", "yara", "walt"} {
		e, created, err := env.Service.JoinWaitlist(ctx, p, who, who+"@example.test", 1)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, waitlist.Waiting, e.State)
	}
	require.Equal(t, 3, entryOf(t, env, p, "walt").Position)
	_, created, err := env.Service.JoinWaitlist(ctx, p, "xavi", "xavi@example.test", 1)
	require.NoError(t, err)
	require.False(t, created, "one place per buyer")
	require.Zero(t, serve(t, env, time.Hour).Offers, "nothing has come back")

	// Ana lets her two go: the first two in line get an offer each.
	_, err = env.Service.Release(ctx, p.TenantID, "ana", *a.HoldID)
	require.NoError(t, err)
	res := serve(t, env, time.Hour)
	require.Equal(t, 2, res.Offers)
	snap := counters(t, env, p)
	require.Equal(t, 2, snap.Offered)
	require.Zero(t, snap.Available, "offered numbers are withheld from sale")
	x, y := entryOf(t, env, p, "xavi"), entryOf(t, env, p, "yara")
	require.Equal(t, waitlist.Offered, x.State)
	require.Equal(t, waitlist.Offered, y.State)
	require.Equal(t, 1, entryOf(t, env, p, "walt").Position)
	env.RequireInvariants(t)

	// The numbers are free in the bitmap, but not for sale: not to a
	// shopper without an offer, nor with someone else's.
	z := holdFor(t, env, p, "zoe", reservation.Params{Quantity: 1})
	require.Equal(t, reservation.ReasonSoldOut, z.Reason)
	free := holdFor(t, env, p, "zoe", reservation.Params{Numbers: a.Numbers[:1]})
	require.Equal(t, reservation.ReasonSoldOut, free.Reason)
	stolen := holdFor(t, env, p, "yara", reservation.Params{Quantity: 1, Offer: &x.ID})
	require.Equal(t, reservation.ReasonOfferInvalid, stolen.Reason)
	greedy := holdFor(t, env, p, "xavi", reservation.Params{Quantity: 2, Offer: &x.ID})
	require.Equal(t, reservation.ReasonOfferExceeded, greedy.Reason)

	// Xavi takes his: a hold, and the offer is spent.
	xh := holdFor(t, env, p, "xavi", reservation.Params{Numbers: a.Numbers[:1], Offer: &x.ID})
	require.Equal(t, reservation.StatusHeld, xh.Status, "reason %s", xh.Reason)
	require.Equal(t, waitlist.Converted, entryOf(t, env, p, "xavi").State)
	require.Equal(t, 1, counters(t, env, p).Offered)
	again := holdFor(t, env, p, "xavi", reservation.Params{Quantity: 1, Offer: &x.ID})
	require.Equal(t, reservation.ReasonOfferInvalid, again.Reason, "an offer is spent once")

	// Yara declines: her number is offered to Walt, for a second.
	require.NoError(t, env.Service.LeaveWaitlist(ctx, p.ID, "yara"))
	require.Equal(t, waitlist.Declined, entryOf(t, env, p, "yara").State)
	require.Zero(t, counters(t, env, p).Offered)
	require.Equal(t, 1, serve(t, env, time.Second).Offers)
	require.Equal(t, waitlist.Offered, entryOf(t, env, p, "walt").State)
	env.RequireInvariants(t)

	// Walt lets it lapse: with no one left in line, it is on sale again.
	time.Sleep(1100 * time.Millisecond)
	res = serve(t, env, time.Hour)
	require.Equal(t, 1, res.Ended)
	require.Zero(t, res.Offers)
	require.Equal(t, waitlist.Expired, entryOf(t, env, p, "walt").State)
	snap = counters(t, env, p)
	require.Zero(t, snap.Offered)
	require.Equal(t, 1, snap.Available)
	z = holdFor(t, env, p, "zoe", reservation.Params{Quantity: 1})
	require.Equal(t, reservation.StatusHeld, z.Status, "reason %s", z.Reason)

	// Sold out again, Zoe's hold lapses while Walt has rejoined: her number
	// is his, not the next claim's, though no sweep has run yet.
	_, _, err = env.Service.JoinWaitlist(ctx, p, "walt", "walt@example.test", 1)
	require.NoError(t, err)
	env.ExpireHold(t, *z.HoldID)
	late := holdFor(t, env, p, "zack", reservation.Params{Quantity: 1})
	require.Equal(t, reservation.ReasonSoldOut, late.Reason, "a lapsed hold's number waits for the line")
	require.Equal(t, 1, serve(t, env, time.Hour).Offers)
	w := entryOf(t, env, p, "walt")
	require.Equal(t, waitlist.Offered, w.State)
	wh := holdFor(t, env, p, "walt", reservation.Params{Quantity: 1, Offer: &w.ID})
	require.Equal(t, reservation.StatusHeld, wh.Status, "reason %s", wh.Reason)

	sum, err := env.Service.WaitlistSummary(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, waitlist.Summary{Converted: 2, Expired: 1, Declined: 1}, sum)
	env.RequireInvariants(t)
}

// Offers never outnumber free numbers, whatever runs at once: claims
// spending offers, shoppers without one, the job making offers and
// shoppers leaving, over and over.
func TestOffersNeverExceedFreeNumbersUnderConcurrency(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true, MaxConns: 20})
	p := env.Product(t, testfix.ProductOpts{Capacity: 20})
	ctx := context.Background()
	var holds []uuid.UUID
	for i := range 10 {
		r := holdFor(t, env, p, fmt.Sprintf("first-%d", i), reservation.Params{Quantity: 2})
		require.Equal(t, reservation.StatusHeld, r.Status)
		holds = append(holds, *r.HoldID)
	}
	// Twelve in line want 18 numbers: the 20 that come back can serve
	// them all, and walk-ins get only what the line leaves.
	const inLine = 12
	for i := range inLine {
		_, _, err := env.Service.JoinWaitlist(ctx, p, fmt.Sprintf("line-%d", i), "line@example.test", 1+i%2)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for i, h := range holds {
		wg.Go(func() {
			_, err := env.Service.Release(ctx, p.TenantID, fmt.Sprintf("first-%d", i), h)
			require.NoError(testfix.InGoroutine(t), err)
		})
	}
	stop := make(chan struct{})
	var shoppers sync.WaitGroup
	for i := range inLine {
		buyer := fmt.Sprintf("line-%d", i)
		shoppers.Go(func() {
			c := testfix.InGoroutine(t)
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, err := env.Service.Waitlist(ctx, p.ID, buyer)
				require.NoError(c, err)
				switch {
				case e.State == waitlist.Offered && i%5 == 0:
					require.NoError(c, env.Service.LeaveWaitlist(ctx, p.ID, buyer))
				case e.State == waitlist.Offered:
					env.Reserve(c, p, buyer, reservation.Params{Quantity: e.Offer.Quantity, Offer: &e.ID})
				case e.State != waitlist.Waiting:
					return
				}
				env.Reserve(c, p, "walk-in-"+buyer, reservation.Params{Quantity: 1})
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		serve(t, env, time.Hour)
		snap := counters(t, env, p)
		require.LessOrEqual(t, snap.Offered, snap.Capacity-snap.Held-snap.Sold, "offers within the free numbers")
		sum, err := env.Service.WaitlistSummary(ctx, p.ID)
		require.NoError(t, err)
		if sum.Waiting == 0 && sum.Offered == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	shoppers.Wait()
	env.Drain(t, p, 100)
	env.RequireInvariants(t)
	sum, err := env.Service.WaitlistSummary(ctx, p.ID)
	require.NoError(t, err)
	require.Zero(t, sum.Waiting+sum.Offered, "the line was served: %+v", sum)
	require.Equal(t, 3, sum.Declined, "every fifth declined")
	require.Positive(t, sum.Converted)
}
