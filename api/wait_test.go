package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/metrics"
	"boxoffice/internal/payment"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/ticket"
)

// counted is b's world served by an API process whose queries are
// counted; services puts the services under test on its pool.
func (b *testBundle) counted(t *testing.T, services func(traced *pgxpool.Pool, d *api.Deps)) (*testBundle, *dbtest.QueryCounter) {
	t.Helper()
	ctx := context.Background()
	queries := &dbtest.QueryCounter{}
	traced, err := db.Open(ctx, b.env.Schema.URL, db.PoolOptions{Schema: b.env.Schema.Name, Tracer: queries})
	require.NoError(t, err)
	t.Cleanup(traced.Close)
	d := api.Deps{Pool: traced, Tenants: b.env.Tenants, Products: b.env.Products, Logger: b.env.Logger}
	services(traced, &d)
	srv := api.New(d)
	srvCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	require.NoError(t, srv.Start(srvCtx))
	c := *b
	c.server = srv
	return &c, queries
}

// Status reads with Prefer: wait are answered by the claim's commit: one
// query reads the requests a notification names for all their readers,
// and while they wait they cost no query.
func TestStatusReadWaitsForTheDecision(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{}) // no workers: the test decides when claims run
	c, queries := b.counted(t, func(traced *pgxpool.Pool, d *api.Deps) {
		d.Reservations = reservation.NewService(traced, nil, metrics.New(), b.env.Logger, reservation.ServiceOptions{})
	})

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

	// Refused as it was recorded (its number is held), a young request is
	// announced as the claim's decisions are: its waiting read answers at
	// once instead of taking it for one still queued.
	refused := b.env.Reserve(t, b.product, "alice", reservation.Params{Numbers: testfix.Nums(1)})
	require.Equal(t, reservation.StatusRejected, refused.Status)
	start = time.Now()
	r = c.do(t, http.MethodGet, "/v1/reservations/"+refused.ID.String(), b.buyer, nil, "Prefer", "wait=8")
	require.Equal(t, "REJECTED", r.body["status"])
	require.Less(t, time.Since(start), 2*time.Second)
}

// Order reads with Prefer: wait are answered by the commit that changed the
// order's status: while the payment is out they cost no query, and a
// woken read reads its order once.
func TestOrderReadWaitsForThePayment(t *testing.T) {
	t.Parallel()
	sim := pspsim.New(pspsim.Config{})
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { simSrv.Close(); sim.Close() })
	// Workers start once the reads wait: until then the order stays pending.
	b := setup(t, testfix.Options{Provider: payment.NewSim(simSrv.URL, 5*time.Second)})
	c, queries := b.counted(t, func(traced *pgxpool.Pool, d *api.Deps) {
		d.Reservations = b.env.Service
		d.Checkout = checkout.NewService(traced, b.env.River, payment.NewSim(simSrv.URL, 5*time.Second),
			ticket.NewSigner([]byte("test ticket secret")), metrics.New(), b.env.Logger, checkout.DefaultConfig())
	})

	r := b.env.Reserve(t, b.product, "alice", reservation.Params{Quantity: 2})
	b.env.Drain(t, b.product, 10)
	held := b.env.Get(t, b.product, r.ID)
	o := b.do(t, http.MethodPost, "/v1/orders", b.buyer, map[string]any{"holdId": held.HoldID, "paymentMethod": pspsim.MethodOK},
		"Idempotency-Key", "pay-1")
	require.Equal(t, http.StatusAccepted, o.status, string(o.raw))
	path := "/v1/orders/" + o.body["id"].(string)

	// A read without Prefer answers at once.
	plain := c.do(t, http.MethodGet, path, b.buyer, nil)
	require.Equal(t, checkout.StatusPending, plain.body["status"])
	require.Empty(t, plain.header.Get("Preference-Applied"))
	// Once the process listens, a wait is applied.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		r := c.do(ct, http.MethodGet, path, b.buyer, nil, "Prefer", "wait=1")
		assert.Equal(ct, "wait=1", r.header.Get("Preference-Applied"))
		assert.Equal(ct, checkout.StatusPending, r.body["status"])
	}, 10*time.Second, 10*time.Millisecond)
	// A wait past the API's 10 s deadline for database work ends with the
	// order as it is then, not with that deadline's 503.
	lateStart := time.Now()
	late := c.do(t, http.MethodGet, path, b.buyer, nil, "Prefer", "wait=11")
	require.Equal(t, http.StatusOK, late.status, string(late.raw))
	require.Equal(t, checkout.StatusPending, late.body["status"])
	require.Equal(t, "wait=11", late.header.Get("Preference-Applied"))
	require.GreaterOrEqual(t, time.Since(lateStart), 11*time.Second)

	const readers = 5
	type answer struct {
		status, applied string
		tickets         int
		took            time.Duration
	}
	answers := make([]answer, readers)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			start := time.Now()
			r := c.do(testfix.InGoroutine(t), http.MethodGet, path, b.buyer, nil, "Prefer", "wait=15")
			tickets, _ := r.body["tickets"].([]any)
			answers[i] = answer{status: fmt.Sprint(r.body["status"]), applied: r.header.Get("Preference-Applied"),
				tickets: len(tickets), took: time.Since(start)}
		})
	}
	time.Sleep(time.Second) // every read has registered and read once
	before := queries.Count()
	time.Sleep(time.Second)
	require.Equal(t, before, queries.Count(), "waiting reads query nothing")

	b.env.StartWorkers(t) // the payment goes out and is applied
	wg.Wait()
	for i, a := range answers {
		require.Equal(t, checkout.StatusConfirmed, a.status, "read %d", i)
		require.Equal(t, 2, a.tickets, "read %d", i)
		require.Equal(t, "wait=15", a.applied)
		require.Less(t, a.took, 12*time.Second, "answered by the change, not at the end of the wait")
	}
	woken := queries.Count() - before

	// Settled already, the read answers at once (its queries: an order's
	// and its tickets'); another buyer's order is not found, waiting or not.
	before, start := queries.Count(), time.Now()
	require.Equal(t, checkout.StatusConfirmed, c.do(t, http.MethodGet, path, b.buyer, nil, "Prefer", "wait=15").body["status"])
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, readers*(queries.Count()-before), woken, "each woken read reads its order once")
	requireProblem(t, c.do(t, http.MethodGet, path, buyerToken(t, b.env.Tenant, "bob", time.Hour), nil, "Prefer", "wait=2"),
		http.StatusNotFound, "NOT_FOUND")
}

// A reservation asked with Prefer: wait answers with its decision: 201
// and the request HELD (or REJECTED) as soon as the claim commits; the
// same request again, 200 at once; a wait that ends first, 202 QUEUED —
// also for a wait past the API's deadline for database work.
func TestReservationAnswerWaitsForTheDecision(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{}) // no workers: the test decides when claims run
	listening := b.env.Reserve(t, b.product, "alice", reservation.Params{Numbers: testfix.Nums(1)}).ID.String()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		r := b.do(ct, http.MethodGet, "/v1/reservations/"+listening, b.buyer, nil, "Prefer", "wait=1")
		assert.Equal(ct, "wait=1", r.header.Get("Preference-Applied"))
	}, 10*time.Second, 10*time.Millisecond)

	path := "/v1/products/" + b.product.ID.String() + "/reservations"
	answered := make(chan response)
	start := time.Now()
	go func() {
		answered <- b.do(testfix.InGoroutine(t), http.MethodPost, path, b.buyer, map[string]any{"numbers": []int{2}},
			"Idempotency-Key", "waits", "Prefer", "wait=8")
	}()
	// Decided once it is recorded (its answer waiting meanwhile).
	require.Eventually(t, func() bool {
		var n int
		err := b.env.Schema.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM reservation_requests WHERE idempotency_key = 'waits'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	b.env.Drain(t, b.product, 50)
	r := <-answered
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "HELD", r.body["status"])
	require.NotEmpty(t, r.body["holdId"])
	require.Equal(t, "wait=8", r.header.Get("Preference-Applied"))
	require.Equal(t, r.body["statusUrl"], r.header.Get("Location"))
	require.Less(t, time.Since(start), 7*time.Second, "answered by the decision, not at the end of the wait")

	again := b.do(t, http.MethodPost, path, b.buyer, map[string]any{"numbers": []int{2}}, "Idempotency-Key", "waits", "Prefer", "wait=8")
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, r.body["holdId"], again.body["holdId"])

	// Undecided when the wait ends: 202 and its status then. Twelve
	// seconds outlast the API's ten for an operation's database work; the
	// wait is not that work.
	for _, wait := range []int{1, 12} {
		start = time.Now()
		r = b.do(t, http.MethodPost, path, b.buyer, map[string]any{"numbers": []int{10 + wait}},
			"Idempotency-Key", fmt.Sprint("late-", wait), "Prefer", fmt.Sprint("wait=", wait))
		require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
		require.Equal(t, "QUEUED", r.body["status"])
		require.Equal(t, fmt.Sprint("wait=", wait), r.header.Get("Preference-Applied"))
		require.GreaterOrEqual(t, time.Since(start), time.Duration(wait)*time.Second)
	}
	start = time.Now()
	r = b.do(t, http.MethodGet, r.body["statusUrl"].(string), b.buyer, nil, "Prefer", "wait=12")
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "QUEUED", r.body["status"])
	require.GreaterOrEqual(t, time.Since(start), 12*time.Second)
}
