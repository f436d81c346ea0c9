package reservation_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// The synchronous baseline decides in the request: 40 buyers race for 10
// numbers, each answer is the decision, nothing is queued, nothing
// oversold, and a replay answers the same decision.
func TestClaimInRequest(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	svc := reservation.NewService(env.Schema.Pool, nil, nil, env.Logger)
	svc.SetClaimInRequest(env.Claimer)

	ctx := context.Background()
	outcomes := make([]*reservation.Request, 40)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: fmt.Sprintf("b%d", i),
				IdempotencyKey: "k", Params: reservation.Params{Numbers: testfix.Nums(int32(1 + i%10))}})
			if err == nil {
				outcomes[i] = acc.Request
			}
		}()
	}
	wg.Wait()
	held := 0
	for i, r := range outcomes {
		require.NotNil(t, r, "buyer %d", i)
		switch r.Status {
		case reservation.StatusHeld:
			held++
		case reservation.StatusRejected:
			require.Equal(t, reservation.ReasonSeatTaken, r.Reason)
		default:
			t.Fatalf("buyer %d: %s is no decision", i, r.Status)
		}
	}
	require.Equal(t, 10, held, "each number once")
	var queued, jobs int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`).Scan(&queued))
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs))
	require.Zero(t, queued)
	require.Zero(t, jobs, "no claim job queued")

	again, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: "b0", IdempotencyKey: "k",
		Params: reservation.Params{Numbers: testfix.Nums(1)}})
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, outcomes[0].ID, again.Request.ID)
	require.Equal(t, outcomes[0].Status, again.Request.Status)
	env.RequireInvariants(t)
}

// A drain watches an emptied queue for its Linger before ending: a request
// that comes meanwhile is decided by the same drain, without a new job.
func TestDrainLingers(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	ctx := context.Background()
	completed := 0
	done := make(chan reservation.DrainResult)
	go func() {
		res, err := env.Claimer.Drain(ctx, p.ID, reservation.DrainOptions{BatchSize: 10, Linger: 2 * time.Second,
			Complete: func(context.Context, pgx.Tx) error { completed++; return nil }})
		require.NoError(testfix.InGoroutine(t), err)
		done <- res
	}()
	time.Sleep(100 * time.Millisecond) // the queue is empty: the drain lingers
	r := env.Reserve(t, p, "late", reservation.Params{Quantity: 1})
	res := <-done
	require.Equal(t, 1, res.Requests, "the lingering drain decided the late request")
	require.Equal(t, 1, completed)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, r.ID).Status)
}

// A drain told to pace (its tenant runs more drains than any other) waits
// after each batch that empties its queue, so requests arriving meanwhile
// are decided together: batches are at least the pace (100 ms) apart.
func TestDrainPaces(t *testing.T) {
	t.Parallel()
	env, p := queuedProduct(t)
	ctx := context.Background()
	const arrivals = 30
	arrived := make(chan struct{})
	go func() {
		defer close(arrived)
		for i := range arrivals {
			time.Sleep(10 * time.Millisecond)
			env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("b%d", i), reservation.Params{Quantity: 1})
		}
	}()
	start := time.Now()
	res, err := env.Claimer.Drain(ctx, p.ID, reservation.DrainOptions{BatchSize: 100, Linger: 500 * time.Millisecond,
		Yield: func(context.Context, time.Duration) reservation.Turn {
			return reservation.Turn{Pace: true}
		},
		YieldEvery: time.Millisecond,
		Complete:   func(context.Context, pgx.Tx) error { return nil }})
	require.NoError(t, err)
	<-arrived
	took := time.Since(start)
	require.Equal(t, arrivals+1, res.Requests, "every request decided by the one drain")
	require.LessOrEqual(t, res.Batches, int(took/(100*time.Millisecond))+1,
		"%d batches in %s: at least 100 ms apart", res.Batches, took)
}

// A drain handing its product on (out of budget, stopping, or owing its
// worker to another tenant's sale) does not wait for the product's accepts
// in flight: the follow-up job decides their requests. Only a drain that
// ends with nothing left waits for them (TestTrickleNeverStrands).
func TestDrainHandsOnWithoutWaitingForAccepts(t *testing.T) {
	t.Parallel()
	env, p := queuedProduct(t)
	ctx := context.Background()
	// An accept in flight holds the product's queue row FOR KEY SHARE.
	accept, err := env.Schema.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = accept.Rollback(ctx) }()
	_, err = accept.Exec(ctx, `SELECT FROM claim_queues WHERE product_id = $1 FOR KEY SHARE`, p.ID)
	require.NoError(t, err)

	stop := make(chan struct{})
	close(stop)
	var completed, continued bool
	drainCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = env.Claimer.Drain(drainCtx, p.ID, reservation.DrainOptions{BatchSize: 100, Stop: stop,
		Complete: func(context.Context, pgx.Tx) error { completed = true; return nil },
		Continue: func(context.Context, pgx.Tx) error { continued = true; return nil }})
	require.NoError(t, err, "handed on without waiting for the accept")
	require.True(t, completed)
	require.True(t, continued, "a follow-up job takes the queued request")
}

// queuedProduct is a product of 100 numbers with one request queued.
func queuedProduct(t *testing.T) (*testfix.Env, *product.Product) {
	t.Helper()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 100})
	env.Reserve(t, p, "queued", reservation.Params{Quantity: 1})
	return env, p
}
