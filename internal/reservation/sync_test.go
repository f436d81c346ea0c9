package reservation_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/schedule"
	"boxoffice/internal/testfix"
	"boxoffice/migrations"
)

// The synchronous baseline decides in the request: 40 buyers race for 10
// numbers, each answer is the decision, nothing is queued, nothing
// oversold, and a replay answers the same decision.
func TestClaimInRequest(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	svc := reservation.NewService(env.Schema.Pool, nil, nil, env.Logger, reservation.ServiceOptions{ClaimInRequest: env.Claimer})

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
	lingering, decided := make(chan struct{}), make(chan struct{})
	var asked atomic.Int32
	go func() {
		// Yield is asked at the top of each round: by its second ask the
		// drain has found the queue empty and lingers. Once the late request
		// is decided it ends the drain (a long Linger would otherwise hold
		// the test), which completes the job as the linger's end would.
		res, err := env.Claimer.Drain(ctx, p.ID, reservation.DrainOptions{BatchSize: 10, Linger: time.Minute,
			YieldEvery: time.Millisecond,
			Yield: func(context.Context, time.Duration) schedule.Turn {
				switch asked.Add(1) {
				case 2:
					close(lingering)
				}
				select {
				case <-decided:
					return schedule.Turn{HandOver: true}
				default:
					return schedule.Turn{}
				}
			},
			Complete: func(context.Context, pgx.Tx) error { completed++; return nil }})
		require.NoError(testfix.InGoroutine(t), err)
		done <- res
	}()
	<-lingering
	r := env.Reserve(t, p, "late", reservation.Params{Quantity: 1})
	require.Eventually(t, func() bool { return env.Get(t, p, r.ID).Status == reservation.StatusHeld }, 10*time.Second,
		5*time.Millisecond, "the lingering drain decides the late request")
	close(decided)
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
	// When each batch commits: a paced drain's batches are the pace apart,
	// whatever the machine's speed (a slow one only widens the gaps).
	var mu sync.Mutex
	var commits []time.Time
	env.Claimer.BeforeCommit = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, time.Now())
		return nil
	}
	res, err := env.Claimer.Drain(ctx, p.ID, reservation.DrainOptions{BatchSize: 100, Linger: 500 * time.Millisecond,
		Yield: func(context.Context, time.Duration) schedule.Turn {
			return schedule.Turn{Pace: true}
		},
		YieldEvery: time.Millisecond,
		Complete:   func(context.Context, pgx.Tx) error { return nil }})
	require.NoError(t, err)
	<-arrived
	require.Equal(t, arrivals+1, res.Requests, "every request decided by the one drain")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, commits, res.Batches)
	require.Greater(t, res.Batches, 2)
	// The first batch runs before the drain is first told to pace.
	for i := 2; i < len(commits); i++ {
		require.GreaterOrEqual(t, commits[i].Sub(commits[i-1]), 100*time.Millisecond, "batch %d came %s after the one before",
			i, commits[i].Sub(commits[i-1]))
	}
}

// A drain that keeps up with a burst gathers: after a batch of a dozen
// requests that emptied the queue it waits before the next, which takes
// together the requests that arrived meanwhile.
func TestDrainGathers(t *testing.T) {
	t.Parallel()
	env, p := queuedProduct(t)
	ctx := context.Background()
	const first, later = 12, 3
	for i := range first - 1 {
		env.Reserve(t, p, fmt.Sprintf("first%d", i), reservation.Params{Quantity: 1})
	}
	var mu sync.Mutex
	var commits []time.Time
	arrived := make(chan struct{})
	env.Claimer.BeforeCommit = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, time.Now())
		if len(commits) == 1 {
			// Sent while the first batch commits, one at a time.
			go func() {
				defer close(arrived)
				for i := range later {
					env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("later%d", i), reservation.Params{Quantity: 1})
				}
			}()
		}
		return nil
	}
	// The wait is long enough for the later requests to be accepted on a
	// slow machine; a drain that did not gather would claim the first of
	// them alone.
	gather := schedule.Gathering{Wait: 2 * time.Second, From: 10, Below: 100}
	res, err := env.Claimer.Drain(ctx, p.ID, reservation.DrainOptions{BatchSize: 100, Linger: 500 * time.Millisecond,
		Gather: gather, Complete: func(context.Context, pgx.Tx) error { return nil }})
	require.NoError(t, err)
	<-arrived
	require.Equal(t, first+later, res.Requests, "every request decided by the one drain")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, commits, 2, "the later requests claimed together")
	require.GreaterOrEqual(t, commits[1].Sub(commits[0]), gather.Wait)
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

// A request a claim skipped because another transaction held it locked
// may be behind the floor the drain's next scans start from; the drain's
// final check reads the whole queue and goes back for it.
func TestDrainComesBackForASkippedRequest(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 100})
	ctx := context.Background()
	first := env.Reserve(t, p, "first", reservation.Params{Quantity: 1})
	later := []uuid.UUID{
		env.Reserve(t, p, "second", reservation.Params{Quantity: 1}).ID,
		env.Reserve(t, p, "third", reservation.Params{Quantity: 1}).ID,
	}
	locker, err := env.Schema.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(ctx) }()
	_, err = locker.Exec(ctx, `SELECT FROM reservation_requests WHERE id = $1 FOR UPDATE`, first.ID)
	require.NoError(t, err)

	completed := 0
	done := make(chan reservation.DrainResult)
	drainCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		// Batches of one: each is full, so its floor is at least past the
		// skipped request (unless another test's transaction holds the
		// snapshot's xmin back, when the floor stays behind it).
		res, err := env.Claimer.Drain(drainCtx, p.ID, reservation.DrainOptions{BatchSize: 1, Linger: 200 * time.Millisecond,
			Complete: func(context.Context, pgx.Tx) error { completed++; return nil }})
		require.NoError(testfix.InGoroutine(t), err)
		done <- res
	}()
	for _, id := range later {
		require.Eventually(t, func() bool { return env.Get(t, p, id).Status == reservation.StatusHeld }, 10*time.Second,
			5*time.Millisecond, "the drain takes the requests behind the locked one")
	}
	require.Equal(t, reservation.StatusQueued, env.Get(t, p, first.ID).Status)
	require.NoError(t, locker.Rollback(ctx))

	res := <-done
	require.Equal(t, 3, res.Requests, "the drain came back for the request it had skipped")
	require.Equal(t, 1, completed)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, first.ID).Status)
	env.RequireInvariants(t)
}

// Requests queued before their transaction was recorded (the migration
// that added it) go first in the queue and are claimed as before.
func TestRequestsQueuedBeforeTheQueueOrderMigration(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 100})
	ctx := context.Background()
	m, err := migrations.New(env.Schema.Pool, migrations.Options{})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.DownTo(ctx, 36))
	// As the accept path wrote a request then.
	old := uuid.New()
	env.Exec(t, `INSERT INTO reservation_requests (id, tenant_id, product_id, buyer_id, idempotency_key, request_hash, quantity, mode)
		VALUES ($1, $2, $3, 'before', 'k', '\x00', 1, 'best')`, old, p.TenantID, p.ID)
	require.NoError(t, m.Up(ctx))

	newer := env.Reserve(t, p, "after", reservation.Params{Quantity: 1})
	res, err := env.Claimer.ClaimBatch(ctx, p.ID, 1)
	require.NoError(t, err)
	require.Equal(t, 1, res.Requests)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, old).Status, "the older request first")
	require.Equal(t, reservation.StatusQueued, env.Get(t, p, newer.ID).Status)
	env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, env.Get(t, p, newer.ID).Status)
	env.RequireInvariants(t)
}
