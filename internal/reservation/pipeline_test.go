package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// Requests arriving while drains start and finish must all be decided
// without the repair job (it is off here): the drain's final transaction
// and River's unique insert leave no gap.
func TestTrickleNeverStrands(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true, BatchSize: 5})
	p := env.Product(t, testfix.ProductOpts{Capacity: 1000})

	var mu sync.Mutex
	var ids []uuid.UUID
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 50 {
				id := env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("g%d-%d", g, i), reservation.Params{Quantity: 1}).ID
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, reservation.StatusHeld, waitTerminal(t, env, p, id).Status)
	}
	env.RequireInvariants(t)
}

// A worker that dies before commit leaves nothing behind; River runs the
// job again and every request reaches the outcome it would have had.
func TestWorkerDiesMidBatchRiverRetries(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 20})
	var failures atomic.Int32
	env.Claimer.BeforeCommit = func(context.Context) error {
		if failures.Add(1) == 1 {
			return errors.New("worker killed before commit")
		}
		return nil
	}
	var ids []uuid.UUID
	for i := range 4 {
		ids = append(ids, env.Reserve(t, p, fmt.Sprintf("b%d", i), reservation.Params{Numbers: testfix.Nums(int32(i+1), int32(i+5))}).ID)
	}
	env.StartWorkers(t)

	for i, id := range ids {
		r := waitTerminal(t, env, p, id)
		require.Equal(t, reservation.StatusHeld, r.Status)
		require.Equal(t, []int32{int32(i + 1), int32(i + 5)}, r.Numbers)
	}
	require.GreaterOrEqual(t, failures.Load(), int32(2), "the first attempt failed and a later one committed")
	env.RequireInvariants(t)
}

// A request whose claim job was lost (deleted here) is picked up by the
// repair job.
func TestRequeueRepairsLostJob(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{RequeueAfter: time.Second})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	r := env.Reserve(t, p, "alice", reservation.Params{Quantity: 1})
	env.Exec(t, `DELETE FROM river_job`)
	env.Exec(t, `UPDATE reservation_requests SET created_at = now() - interval '1 hour'`)
	env.StartWorkers(t)
	require.Equal(t, reservation.StatusHeld, waitTerminal(t, env, p, r.ID).Status)
}

// Accept micro-batching: concurrent accepts share transactions; every
// request is recorded once, replays of a key (even within one batch) get the
// same request, and one claim job per product decides them all.
func TestAcceptBatching(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	// Accepts batched as an API process batches them by default: one
	// transaction at a time.
	svc := reservation.NewService(env.Schema.Pool, reservation.RiverEnqueuer{Client: env.River}, nil, env.Logger,
		reservation.ServiceOptions{Linger: 2 * time.Millisecond, Transactions: 1})
	p := env.Product(t, testfix.ProductOpts{Capacity: 1000})
	const n = 300
	ids := make([]uuid.UUID, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Buyers 0..149 each send their request twice with the same key.
			buyer := fmt.Sprintf("buyer-%d", i%150)
			acc, err := svc.Accept(context.Background(), reservation.AcceptParams{Product: p, BuyerID: buyer,
				IdempotencyKey: "k", Params: reservation.Params{Quantity: 1}})
			if assert.NoError(t, err) {
				ids[i] = acc.Request.ID
			}
		}()
	}
	wg.Wait()
	for i := range 150 {
		require.Equal(t, ids[i], ids[i+150], "the same key: the same request")
	}
	var rows, jobs int
	ctx := context.Background()
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests`).Scan(&rows))
	require.Equal(t, 150, rows)
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'claim_product'`).Scan(&jobs))
	require.Equal(t, 1, jobs)
	env.StartWorkers(t)
	for _, id := range ids[:150] {
		require.Equal(t, reservation.StatusHeld, waitTerminal(t, env, p, id).Status)
	}
	env.RequireInvariants(t)
}

// Two products on sale at once, accepts micro-batched: batches that meet the
// products in different orders must not deadlock on their claim jobs (a
// deadlock surfaced as 500s before the jobs were inserted in product order).
func TestAcceptTwoProductsConcurrently(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{MaxConns: 20})
	// Two services stand for two API processes batching independently.
	enqueuer := reservation.RiverEnqueuer{Client: env.River}
	// One bounds its accept transactions, as an API process does by
	// default; the other does not.
	services := []*reservation.Service{
		reservation.NewService(env.Schema.Pool, enqueuer, nil, env.Logger,
			reservation.ServiceOptions{Linger: 2 * time.Millisecond, Transactions: 1}),
		reservation.NewService(env.Schema.Pool, enqueuer, nil, env.Logger,
			reservation.ServiceOptions{Linger: 2 * time.Millisecond, Transactions: 0})}
	products := []*product.Product{env.Product(t, testfix.ProductOpts{Capacity: 1000}), env.Product(t, testfix.ProductOpts{Capacity: 1000})}

	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				// Random buyers: batches are sorted by buyer, so they meet
				// the two products in either order.
				p := products[(g/2+i)%2]
				buyer := uuid.NewString()
				_, err := services[g%2].Accept(context.Background(), reservation.AcceptParams{
					Product: p, BuyerID: buyer, IdempotencyKey: uuid.NewString(),
					Params: reservation.Params{Quantity: 1},
				})
				if !assert.NoError(t, err) {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	var n int
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM reservation_requests`).Scan(&n))
	require.Equal(t, 240, n)
}

// A backlog loaded in bulk is decided like accepted requests, in order.
func TestImportedBacklogDrains(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	reqs := make([]reservation.Queued, 7)
	for i := range reqs {
		reqs[i] = reservation.Queued{BuyerID: fmt.Sprintf("b%d", i), Quantity: 2, Mode: reservation.ModeBest}
	}
	refs, err := reservation.ImportQueued(context.Background(), env.Schema.Pool, p.TenantID, p.ID, reqs)
	require.NoError(t, err)
	require.Len(t, refs, 7)
	env.Drain(t, p, 100)
	for i, ref := range refs {
		r := env.Get(t, p, ref.ID)
		if i < 5 {
			require.Equal(t, reservation.StatusHeld, r.Status, "request %d", i)
			require.Equal(t, []int32{int32(2*i + 1), int32(2*i + 2)}, r.Numbers, "in the order loaded")
		} else {
			require.Equal(t, reservation.StatusRejected, r.Status, "request %d", i)
		}
	}
	env.RequireInvariants(t)
}
