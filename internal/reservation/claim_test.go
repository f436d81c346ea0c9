package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
	"boxoffice/internal/metrics"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

func TestLastSeat(t *testing.T) {
	t.Parallel()
	// 50 buyers race for one number through the real River workers.
	env := testfix.New(t, testfix.Options{Work: true, BatchSize: 7})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})

	ids := make([]uuid.UUID, 50)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("buyer-%d", i), reservation.Params{Numbers: testfix.Nums(7)}).ID
		}()
	}
	wg.Wait()

	held, rejected := 0, 0
	for _, id := range ids {
		r := waitTerminal(t, env, p, id)
		switch {
		case r.Status == reservation.StatusHeld:
			held++
			require.Equal(t, []int32{7}, r.Numbers)
		case r.Status == reservation.StatusRejected && r.Reason == reservation.ReasonSeatTaken:
			rejected++
		default:
			t.Fatalf("unexpected outcome %+v", r)
		}
	}
	require.Equal(t, 1, held)
	require.Equal(t, 49, rejected)

	var claims int
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM claims WHERE product_id = $1 AND number = 7`, p.ID).Scan(&claims))
	require.Equal(t, 1, claims)
	env.RequireInvariants(t)
}

func TestOversellStress(t *testing.T) {
	t.Parallel()
	// 1,000 concurrent requests over 200 numbers, overlapping explicit picks
	// and both quantity modes, drained by River workers.
	env := testfix.New(t, testfix.Options{Work: true, BatchSize: 50, MaxConns: 20})
	p := env.Product(t, testfix.ProductOpts{Capacity: 200})

	const n = 1000
	ids := make([]uuid.UUID, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var params reservation.Params
			switch i % 3 {
			case 0:
				params.Numbers = testfix.Nums(int32(i%40+1), int32(i%40+2))
			case 1:
				params = reservation.Params{Quantity: 1 + i%3, Mode: reservation.ModeBest}
			case 2:
				params = reservation.Params{Quantity: 2, Mode: reservation.ModeRandom, AcceptFewer: true}
			}
			ids[i] = env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("buyer-%d", i%400), params).ID
		}()
	}
	wg.Wait()

	owner := map[int32]uuid.UUID{}
	heldNumbers := 0
	for _, id := range ids {
		r := waitTerminal(t, env, p, id)
		if r.Status != reservation.StatusHeld {
			require.Equal(t, reservation.StatusRejected, r.Status)
			continue
		}
		for _, num := range r.Numbers {
			prev, dup := owner[num]
			require.False(t, dup, "number %d held by %s and %s", num, prev, id)
			owner[num] = id
		}
		heldNumbers += len(r.Numbers)
	}
	require.Equal(t, 200, heldNumbers, "every number ends up held: demand exceeds stock")
	env.RequireInvariants(t)
}

func waitTerminal(t *testing.T, env *testfix.Env, p *product.Product, id uuid.UUID) *reservation.Request {
	t.Helper()
	var r *reservation.Request
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = env.Get(c, p, id)
		assert.NotEqual(c, reservation.StatusQueued, r.Status)
	}, 30*time.Second, 10*time.Millisecond, "request %s never left QUEUED", id)
	return r
}

func TestBuyerLimit(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 50, PerBuyerLimit: 4})

	a := env.Reserve(t, p, "alice", reservation.Params{Quantity: 3})
	b := env.Reserve(t, p, "alice", reservation.Params{Quantity: 2})
	c := env.Reserve(t, p, "alice", reservation.Params{Quantity: 2, AcceptFewer: true})
	d := env.Reserve(t, p, "bob", reservation.Params{Quantity: 4})
	env.Drain(t, p, 10)

	require.Equal(t, reservation.StatusHeld, env.Get(t, p, a.ID).Status)
	rb := env.Get(t, p, b.ID)
	require.Equal(t, reservation.StatusRejected, rb.Status)
	require.Equal(t, reservation.ReasonLimitExceeded, rb.Reason)
	rc := env.Get(t, p, c.ID)
	require.Equal(t, reservation.StatusHeld, rc.Status)
	require.Len(t, rc.Numbers, 1, "acceptFewer takes what the limit leaves")
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, d.ID).Status)

	// At the limit, nothing more; after releasing a hold, room again.
	e := env.Reserve(t, p, "alice", reservation.Params{Quantity: 1})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.ReasonLimitExceeded, env.Get(t, p, e.ID).Reason)

	ra := env.Get(t, p, a.ID)
	_, err := env.Service.Release(context.Background(), p.TenantID, "alice", *ra.HoldID)
	require.NoError(t, err)
	require.Equal(t, reservation.StatusReleased, env.Get(t, p, a.ID).Status)
	f := env.Reserve(t, p, "alice", reservation.Params{Quantity: 3})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, f.ID).Status)
	env.RequireInvariants(t)
}

// TestHopelessRequestsLockNoBuyer: requests that cannot be held (their
// numbers taken, the product sold out) are rejected without locking or
// counting their buyers — most of an opening's requests — while the limit
// still holds for the ones that could be.
func TestHopelessRequestsLockNoBuyer(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 4, PerBuyerLimit: 2})
	a := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(1, 2)})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, a.ID).Status)

	taken := env.Reserve(t, p, "bob", reservation.Params{Numbers: testfix.Nums(1)})
	atLimit := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(3)})
	carol := env.Reserve(t, p, "carol", reservation.Params{Numbers: testfix.Nums(3, 4)})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.ReasonSeatTaken, env.Get(t, p, taken.ID).Reason)
	require.Equal(t, reservation.ReasonLimitExceeded, env.Get(t, p, atLimit.ID).Reason)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, carol.ID).Status)

	soldOut := env.Reserve(t, p, "dave", reservation.Params{Quantity: 1})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.ReasonSoldOut, env.Get(t, p, soldOut.ID).Reason)

	rows, err := env.Schema.Pool.Query(context.Background(),
		`SELECT buyer_id FROM buyer_limits WHERE product_id = $1 ORDER BY buyer_id`, p.ID)
	require.NoError(t, err)
	locked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "carol"}, locked, "only buyers whose requests could be held are locked")
	env.RequireInvariants(t)
}

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{})
	ctx := context.Background()
	params := reservation.AcceptParams{Product: p, BuyerID: "alice", IdempotencyKey: "k1",
		Params: reservation.Params{Numbers: testfix.Nums(3, 1)}}

	first, err := env.Service.Accept(ctx, params)
	require.NoError(t, err)
	require.False(t, first.Replayed)

	params.Numbers = testfix.Nums(1, 3) // same set, other order: the same request
	again, err := env.Service.Accept(ctx, params)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.Request.ID, again.Request.ID)

	params.Numbers = testfix.Nums(1, 4)
	_, err = env.Service.Accept(ctx, params)
	require.ErrorIs(t, err, reservation.ErrIdempotencyConflict)

	var count int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests`).Scan(&count))
	require.Equal(t, 1, count)
}

func TestNotOnSaleAndSoldOut(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	later := env.Product(t, testfix.ProductOpts{OnSaleAt: time.Now().Add(time.Hour)})
	r := env.Reserve(t, later, "alice", reservation.Params{Quantity: 1})
	env.Drain(t, later, 10)
	require.Equal(t, reservation.ReasonNotOnSale, env.Get(t, later, r.ID).Reason)

	small := env.Product(t, testfix.ProductOpts{Capacity: 3})
	a := env.Reserve(t, small, "alice", reservation.Params{Quantity: 2})
	b := env.Reserve(t, small, "bob", reservation.Params{Quantity: 2})
	c := env.Reserve(t, small, "carol", reservation.Params{Quantity: 1})
	d := env.Reserve(t, small, "dave", reservation.Params{Quantity: 1})
	env.Drain(t, small, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, small, a.ID).Status)
	require.Equal(t, reservation.ReasonNotEnoughLeft, env.Get(t, small, b.ID).Reason)
	require.Equal(t, reservation.StatusHeld, env.Get(t, small, c.ID).Status)
	require.Equal(t, reservation.ReasonSoldOut, env.Get(t, small, d.ID).Reason)
	env.RequireInvariants(t)
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	a := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(1, 2)})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, a.ID).Status)

	// Time travel: the hold ran out. The sweeper has not run.
	env.Exec(t, `UPDATE holds SET expires_at = now() - interval '1 second'`)
	env.Exec(t, `UPDATE claims SET expires_at = now() - interval '1 second'`)
	require.Equal(t, reservation.StatusExpired, env.Get(t, p, a.ID).Status)

	// The expired hold's numbers are claimable at once, and alice's limit
	// no longer counts them.
	b := env.Reserve(t, p, "bob", reservation.Params{Numbers: testfix.Nums(2, 3)})
	env.Drain(t, p, 10)
	rb := env.Get(t, p, b.ID)
	require.Equal(t, reservation.StatusHeld, rb.Status)
	require.ElementsMatch(t, []int32{2, 3}, rb.Numbers)
	env.RequireInvariants(t)

	// The sweeper frees number 1 (still alice's expired claim) and marks the
	// hold EXPIRED; bob's taken-over number 2 stays his.
	res, err := env.Claimer.ExpireHolds(context.Background(), 1000)
	require.NoError(t, err)
	require.Equal(t, 1, res.HoldsExpired)
	require.Equal(t, 1, res.ClaimsFreed)
	var held int
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT held FROM inventory WHERE product_id = $1`, p.ID).Scan(&held))
	require.Equal(t, 2, held)
	require.Equal(t, reservation.StatusExpired, env.Get(t, p, a.ID).Status)
	env.RequireInvariants(t)
}

func TestSweeperRunsInRiver(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true, SweepInterval: 200 * time.Millisecond})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	a := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(5)})
	waitTerminal(t, env, p, a.ID)
	env.Exec(t, `UPDATE holds SET expires_at = now() - interval '1 second'`)
	env.Exec(t, `UPDATE claims SET expires_at = now() - interval '1 second'`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var held int
		assert.NoError(c, env.Schema.Pool.QueryRow(context.Background(),
			`SELECT held FROM inventory WHERE product_id = $1`, p.ID).Scan(&held))
		assert.Zero(c, held)
	}, 20*time.Second, 50*time.Millisecond)
	env.RequireInvariants(t)
}

func TestWorkerDiesMidBatch(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 20})
	var ids []uuid.UUID
	for i := range 6 {
		ids = append(ids, env.Reserve(t, p, fmt.Sprintf("b%d", i), reservation.Params{Quantity: 2}).ID)
	}
	boom := errors.New("worker killed")
	env.Claimer.BeforeCommit = func(context.Context) error { return boom }
	_, err := env.Claimer.ClaimBatch(context.Background(), p.ID, 10)
	require.ErrorIs(t, err, boom)

	ctx := context.Background()
	var claims, holds int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM claims`).Scan(&claims))
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM holds`).Scan(&holds))
	require.Zero(t, claims)
	require.Zero(t, holds)
	for _, id := range ids {
		require.Equal(t, reservation.StatusQueued, env.Get(t, p, id).Status)
	}
	env.RequireInvariants(t)

	env.Claimer.BeforeCommit = nil
	env.Drain(t, p, 10)
	for i, id := range ids {
		r := env.Get(t, p, id)
		require.Equal(t, reservation.StatusHeld, r.Status)
		require.Equal(t, []int32{int32(2*i + 1), int32(2*i + 2)}, r.Numbers)
	}
	env.RequireInvariants(t)
}

func TestBestAvailableSeats(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	layout := &product.Layout{Sections: []product.Section{{Name: "A", Rows: []product.Row{
		{Name: "1", Seats: 5}, {Name: "2", Seats: 6},
	}}}}
	p := env.Product(t, testfix.ProductOpts{Layout: layout})
	// Row 1 is 1..5, row 2 is 6..11. Take seat 3 so row 1 has runs 1-2 and 4-5.
	first := env.Reserve(t, p, "x", reservation.Params{Numbers: testfix.Nums(3)})
	// 2 seats: run 1-2 fits exactly (no orphan).
	a := env.Reserve(t, p, "a", reservation.Params{Quantity: 2})
	// 3 seats: no room in row 1; row 2 (6 seats) left-aligned 6-8.
	b := env.Reserve(t, p, "b", reservation.Params{Quantity: 3})
	// 2 seats: row 1 run 4-5 fits exactly.
	c := env.Reserve(t, p, "c", reservation.Params{Quantity: 2})
	// 2 seats: row 2 run 9-11 would leave an orphan either way; it is the only fit.
	d := env.Reserve(t, p, "d", reservation.Params{Quantity: 2})
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, first.ID).Status)
	require.Equal(t, []int32{1, 2}, env.Get(t, p, a.ID).Numbers)
	require.Equal(t, []int32{6, 7, 8}, env.Get(t, p, b.ID).Numbers)
	require.Equal(t, []int32{4, 5}, env.Get(t, p, c.ID).Numbers)
	require.Equal(t, []int32{9, 10}, env.Get(t, p, d.ID).Numbers)
	env.RequireInvariants(t)
}

// With a tenant's claims capped at one at a time, a claim of its second
// product waits for the first's transaction, while another tenant's claim
// goes ahead.
func TestTenantClaimsCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testfix.New(t, testfix.Options{})
	claimer := reservation.NewClaimer(env.Schema.Pool, env.Logger, metrics.New(), reservation.ClaimerOptions{TenantClaims: 1})
	other := env.NewTenant(t).ID
	p1, p2 := env.Product(t, testfix.ProductOpts{}), env.Product(t, testfix.ProductOpts{})
	p3 := env.Product(t, testfix.ProductOpts{Tenant: other})
	for _, p := range []*product.Product{p1, p2, p3} {
		env.Reserve(t, p, "buyer", reservation.Params{Quantity: 1})
	}

	// p1's claim stops before its commit, holding its tenant's one slot.
	held, unblock := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(unblock) })
	t.Cleanup(release) // before the schema's cleanup, should the test fail early
	var calls atomic.Int32
	claimer.BeforeCommit = func(context.Context) error {
		if calls.Add(1) == 1 {
			close(held)
			<-unblock
		}
		return nil
	}
	claim := func(p *product.Product) <-chan reservation.BatchResult {
		done := make(chan reservation.BatchResult, 1)
		go func() {
			res, err := claimer.ClaimBatch(ctx, p.ID, 10)
			assert.NoError(t, err)
			done <- res
		}()
		return done
	}
	done1 := claim(p1)
	<-held
	require.Equal(t, 1, (<-claim(p3)).Requests, "another tenant's claim goes ahead")
	done2 := claim(p2)
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, env.Schema.Pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
			  AND query LIKE '%boxoffice.claims/%'`).Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the tenant's second claim waits for its slot")
	select {
	case <-done2:
		t.Fatal("the tenant's second claim ran while its first held the slot")
	default:
	}
	release()
	require.Equal(t, 1, (<-done1).Requests)
	require.Equal(t, 1, (<-done2).Requests)
	env.RequireInvariants(t)
}

// TestStatusReadsTogether: status reads arriving together are read in one
// query and each still answers only what its caller may see.
func TestStatusReadsTogether(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 20})
	alice := env.Reserve(t, p, "alice", reservation.Params{Numbers: testfix.Nums(1)})
	bob := env.Reserve(t, p, "bob", reservation.Params{Numbers: testfix.Nums(1)})
	env.Drain(t, p, 10)

	type read struct {
		id     uuid.UUID
		tenant uuid.UUID
		buyer  string
		want   string // the status, or "" for not found
	}
	reads := []read{
		{alice.ID, p.TenantID, "alice", reservation.StatusHeld},
		{bob.ID, p.TenantID, "bob", reservation.StatusRejected},
		{bob.ID, p.TenantID, "", reservation.StatusRejected}, // the tenant's admin
		{bob.ID, p.TenantID, "alice", ""},
		{alice.ID, uuid.New(), "alice", ""},
		{uuid.New(), p.TenantID, "alice", ""},
	}
	var wg sync.WaitGroup
	for i := range 120 {
		r := reads[i%len(reads)]
		wg.Go(func() {
			got, err := env.Service.Get(context.Background(), r.tenant, r.id, r.buyer)
			if r.want == "" {
				assert.ErrorIs(t, err, db.ErrNotFound, "read %d", i)
				return
			}
			if assert.NoError(t, err, "read %d", i) {
				assert.Equal(t, r.want, got.Status, "read %d", i)
				assert.Equal(t, r.id, got.ID, "read %d", i)
			}
		})
	}
	wg.Wait()
}
