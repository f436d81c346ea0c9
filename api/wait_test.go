package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/metrics"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// Status reads with Prefer: wait are answered by the claim's commit: one
// query reads the requests a notification names for all their readers,
// and while they wait they cost no query.
func TestStatusReadWaitsForTheDecision(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{}) // no workers: the test decides when claims run
	ctx := context.Background()
	queries := &dbtest.QueryCounter{}
	traced, err := db.Open(ctx, b.env.Schema.URL, db.PoolOptions{Schema: b.env.Schema.Name, Tracer: queries})
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	srv := api.New(api.Deps{Pool: traced, Tenants: b.env.Tenants, Products: b.env.Products, Logger: b.env.Logger,
		Reservations: reservation.NewService(traced, nil, metrics.New(), b.env.Logger, reservation.ServiceOptions{})})
	srvCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	require.NoError(t, srv.Start(srvCtx))
	c := *b
	c.server = srv

	const waiters = 20
	ids := make([]string, waiters)
	for i := range ids {
		ids[i] = b.env.Reserve(t, b.product, "alice", reservation.Params{Numbers: testfix.Nums(int32(i + 1))}).ID.String()
	}
	// Once the process listens, a wait is applied (a QUEUED request's read
	// then takes its second).
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		r := c.do(ct, http.MethodGet, "/v1/reservations/"+ids[0], b.buyer, nil, "Prefer", "wait=1")
		assert.Equal(ct, "wait=1", r.header.Get("Preference-Applied"))
	}, 10*time.Second, 10*time.Millisecond)

	type answer struct {
		status, applied string
		took            time.Duration
	}
	answers := make([]answer, waiters)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			start := time.Now()
			r := c.do(testfix.InGoroutine(t), http.MethodGet, "/v1/reservations/"+id, b.buyer, nil, "Prefer", "respond-async, wait=8")
			answers[i] = answer{status: fmt.Sprint(r.body["status"]), applied: r.header.Get("Preference-Applied"), took: time.Since(start)}
		})
	}
	time.Sleep(time.Second) // every read has registered and read once
	before := queries.Count()
	time.Sleep(time.Second)
	require.Equal(t, before, queries.Count(), "waiting reads query nothing")

	b.env.Drain(t, b.product, 50)
	wg.Wait()
	for i, a := range answers {
		// Four are held, the rest past alice's limit of four refused.
		require.Contains(t, []string{"HELD", "REJECTED"}, a.status, "request %d", i)
		require.Equal(t, "wait=8", a.applied)
		require.Less(t, a.took, 7*time.Second, "answered by the decision, not at the end of the wait")
	}
	require.Equal(t, int64(1), queries.Count()-before, "one read of the requests the claim's notification named")

	// A request accepted well after the process started listening is
	// known undecided until its notification: its waiting read reads it
	// once, when decided.
	time.Sleep(2 * time.Second) // past the allowance for another process's clock
	late := b.env.Reserve(t, b.product, "alice", reservation.Params{Numbers: testfix.Nums(99)}).ID.String()
	before = queries.Count()
	done := make(chan string)
	go func() {
		r := c.do(testfix.InGoroutine(t), http.MethodGet, "/v1/reservations/"+late, b.buyer, nil, "Prefer", "wait=8")
		done <- fmt.Sprint(r.body["status"])
	}()
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, before, queries.Count(), "not read before its decision")
	b.env.Drain(t, b.product, 50)
	require.Equal(t, "REJECTED", <-done, "alice is at her limit")
	require.Equal(t, int64(1), queries.Count()-before)

	// Decided already, the read answers at once; without Prefer, as before.
	start := time.Now()
	r := c.do(t, http.MethodGet, "/v1/reservations/"+ids[0], b.buyer, nil, "Prefer", "wait=8")
	require.Equal(t, "HELD", r.body["status"])
	require.Less(t, time.Since(start), 2*time.Second)
	r = c.do(t, http.MethodGet, "/v1/reservations/"+ids[0], b.buyer, nil)
	require.Empty(t, r.header.Get("Preference-Applied"))
}
