package bench_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/bench"
	"boxoffice/internal/dbtest"
)

// A tiny run of the drain benchmark: it must sell exactly the seats asked
// for with no invariant broken. Timing is not asserted.
func TestClaimSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 12)
	res, err := bench.Claim(context.Background(), schema.Pool,
		bench.ClaimConfig{Seats: 3000, Requests: 300, BatchSize: 100, Workers: 2, Baseline: true}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 600, res.Batched.Numbers)
	require.Zero(t, res.Batched.Violations)
	require.NotNil(t, res.Unbatched)
	require.Equal(t, 600, res.Unbatched.Numbers)
	require.Zero(t, res.Unbatched.Violations)
}

// A tiny checkout run: every order confirmed and captured.
func TestCheckoutSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 12)
	res, err := bench.Checkout(context.Background(), schema.Pool,
		bench.CheckoutConfig{Orders: 10, Latency: 20 * time.Millisecond, PaymentWorkers: 5}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 10, res.Confirmed)
}

// A tiny waiting-room run: joins and polls work; figures are not asserted.
func TestRoomSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 12)
	res, err := bench.Room(context.Background(), schema.Pool,
		bench.RoomConfig{Joins: 50, Concurrency: 8, PollFor: 50 * time.Millisecond}, io.Discard)
	require.NoError(t, err)
	require.Positive(t, res.PollsPerSec)
}

// A tiny accept run over HTTP, both modes: requests are accepted.
func TestAcceptSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 12)
	steps, err := bench.HTTPAccept(context.Background(), schema.Pool,
		bench.HTTPAcceptConfig{Concurrency: []int{2}, Duration: 100 * time.Millisecond, Linger: time.Millisecond}, io.Discard)
	require.NoError(t, err)
	require.Len(t, steps, 2)
	for _, s := range steps {
		require.Positive(t, s.Accepted, s.Mode)
		require.Zero(t, s.Errors, s.Mode)
	}
}

// A tiny run of the large-raffle scenario: every kind of claim on a
// product of one page and one of nine keeps the invariants; reads succeed.
func TestMillionSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 12)
	res, err := bench.Million(context.Background(), schema.Pool, bench.MillionConfig{Sizes: []int{1000, 9 * 16384},
		Rounds: 1, Batches: 2, Batch: 50, Cached: 2, ReadFor: 50 * time.Millisecond}, io.Discard)
	require.NoError(t, err)
	require.Zero(t, res.Violations)
	require.Len(t, res.Claims, 6)
	for _, c := range res.Claims {
		require.Equal(t, 100, c.Numbers, "%s on %d", c.Kind, c.Size)
		require.Positive(t, c.WALPerBatch)
	}
	require.Positive(t, res.CachedPerSec)
	require.Positive(t, res.PageReadsPerSec)
	// The heap figure is the whole test process's, shared with the
	// parallel tests; the caches' own count is this run's alone.
	require.Positive(t, res.CacheHeld)
}

// A tiny on-sale: nothing oversold, invariants hold, seats sell.
func TestOnsaleSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 40)
	res, err := bench.Onsale(context.Background(), schema.Pool, bench.OnsaleConfig{Seats: 3000, Buyers: 60,
		JoinOver: time.Second, PreOpenShare: 0.5, ActiveShoppers: 60, ShoppingSecs: 1, PSPLatency: 10 * time.Millisecond,
		PaymentWorkers: 20, Deadline: time.Minute}, testWriter{t})
	require.NoError(t, err)
	require.Zero(t, res.Oversold)
	require.Zero(t, res.Violations)
	require.Positive(t, res.Held)
	require.Positive(t, res.OrdersConfirm)
}

// A tiny raffle on-sale: numbers of the buyers' choosing, a large
// product, nothing oversold.
func TestRaffleOnsaleSmoke(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 40)
	res, err := bench.Onsale(context.Background(), schema.Pool, bench.OnsaleConfig{Raffle: 10_000_000, Buyers: 60,
		JoinOver: time.Second, PreOpenShare: 0.5, ActiveShoppers: 60, ShoppingSecs: 1, PSPLatency: 10 * time.Millisecond,
		PaymentWorkers: 20, PayShare: 0.5, Deadline: time.Minute}, testWriter{t})
	require.NoError(t, err)
	require.Zero(t, res.Oversold)
	require.Zero(t, res.Violations)
	require.Positive(t, res.Held)
	require.Positive(t, res.OrdersConfirm)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
