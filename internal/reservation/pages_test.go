package reservation_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/migrations"
)

// pageTaken reads each page's count of taken numbers.
func pageTaken(t *testing.T, env *testfix.Env, p *product.Product) []int {
	t.Helper()
	idx, err := inventory.Index(context.Background(), env.Schema.Pool, p.ID)
	require.NoError(t, err)
	out := make([]int, len(idx.Pages))
	for i, pg := range idx.Pages {
		out[i] = pg.Taken
	}
	return out
}

// decided claims a request and returns it decided.
func decided(t *testing.T, env *testfix.Env, p *product.Product, buyer string, params reservation.Params) *reservation.Request {
	t.Helper()
	r := env.Reserve(t, p, buyer, params)
	env.Drain(t, p, 50)
	return env.Get(t, p, r.ID)
}

func TestClaimsAcrossPages(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	ctx := context.Background()
	// 13 pages, the last of 5,056 numbers: large enough that a claim reads
	// only the pages it needs.
	const capacity = 12*inventory.PageBits + 5056
	p := env.Product(t, testfix.ProductOpts{Capacity: capacity, PerBuyerLimit: 10})
	require.Len(t, pageTaken(t, env, p), 13)

	// One request on both sides of a page boundary.
	span := decided(t, env, p, "span", reservation.Params{Numbers: testfix.Nums(inventory.PageBits, inventory.PageBits+1)})
	require.Equal(t, reservation.StatusHeld, span.Status, span.Reason)
	// The last number, and a request of a quantity: the lowest free numbers.
	last := decided(t, env, p, "last", reservation.Params{Numbers: testfix.Nums(capacity-1, capacity)})
	require.Equal(t, reservation.StatusHeld, last.Status, last.Reason)
	best := decided(t, env, p, "best", reservation.Params{Quantity: 3})
	require.Equal(t, []int32{1, 2, 3}, best.Numbers)
	random := decided(t, env, p, "random", reservation.Params{Quantity: 5, Mode: reservation.ModeRandom})
	require.Len(t, random.Numbers, 5)
	for _, n := range random.Numbers {
		require.False(t, slices.Contains([]int32{1, 2, 3, inventory.PageBits, inventory.PageBits + 1, capacity - 1, capacity}, n))
	}
	taken := decided(t, env, p, "late", reservation.Params{Numbers: testfix.Nums(inventory.PageBits + 1)})
	require.Equal(t, reservation.ReasonSeatTaken, taken.Reason)

	// Each page counts the numbers held on it.
	requirePages := func(held ...[]int32) {
		t.Helper()
		want := make([]int, 13)
		for _, numbers := range held {
			for _, n := range numbers {
				want[inventory.PageOf(n)]++
			}
		}
		require.Equal(t, want, pageTaken(t, env, p))
	}
	requirePages(span.Numbers, last.Numbers, best.Numbers, random.Numbers)
	env.RequireInvariants(t)

	// Released, both pages of the span free their number.
	_, err := env.Service.Release(ctx, p.TenantID, "span", *span.HoldID)
	require.NoError(t, err)
	requirePages(last.Numbers, best.Numbers, random.Numbers)
	env.RequireInvariants(t)

	// Expired, the last page's numbers are taken over by a new claim before
	// the sweeper runs, and the sweeper frees the rest of an expired hold.
	env.ExpireHold(t, *last.HoldID)
	over := decided(t, env, p, "over", reservation.Params{Numbers: testfix.Nums(capacity)})
	require.Equal(t, reservation.StatusHeld, over.Status, over.Reason)
	env.RequireInvariants(t)
	_, err = env.Claimer.ExpireHolds(ctx, 100)
	require.NoError(t, err)
	requirePages(over.Numbers, best.Numbers, random.Numbers)
	env.RequireInvariants(t)
}

func TestConcurrentClaimsOnDifferentPages(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true, BatchSize: 5})
	const pages = 20
	p := env.Product(t, testfix.ProductOpts{Capacity: pages * inventory.PageBits})
	// 60 buyers, three on each page, each a number of their own.
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, 3*pages)
	for i := range ids {
		wg.Go(func() {
			n := int32((i%pages)*inventory.PageBits + i/pages + 1)
			ids[i] = env.Reserve(testfix.InGoroutine(t), p, fmt.Sprintf("b-%d", i), reservation.Params{Numbers: testfix.Nums(n)}).ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		r := waitTerminal(t, env, p, id)
		require.Equal(t, reservation.StatusHeld, r.Status, r.Reason)
	}
	for i, n := range pageTaken(t, env, p) {
		require.Equal(t, 3, n, "page %d", i)
	}
	env.RequireInvariants(t)
}

func TestPagesMigratedInPlace(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	ctx := context.Background()
	p := env.Product(t, testfix.ProductOpts{Capacity: 2*inventory.PageBits + 100, PerBuyerLimit: 10})
	held := decided(t, env, p, "a", reservation.Params{Numbers: testfix.Nums(1, inventory.PageBits+1, 2*inventory.PageBits+100)})
	require.Equal(t, reservation.StatusHeld, held.Status)
	before, err := inventory.Get(ctx, env.Schema.Pool, p.ID)
	require.NoError(t, err)

	// Back to the one bitmap value an existing product had, then up again.
	m, err := migrations.New(env.Schema.Pool, migrations.Options{})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.DownTo(ctx, 35))
	var bitmap []byte
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT bitmap FROM inventory WHERE product_id = $1`, p.ID).Scan(&bitmap))
	require.Equal(t, before.Bitmap(), bitmap)
	require.NoError(t, m.Up(ctx))

	after, err := inventory.Get(ctx, env.Schema.Pool, p.ID)
	require.NoError(t, err)
	require.Equal(t, before.Bitmap(), after.Bitmap())
	require.Len(t, after.Pages, 3)
	for i, pg := range after.Pages {
		require.Equal(t, 1, pg.Taken, "page %d", i)
		require.Equal(t, before.Version, pg.Version, "a migrated page is of the row's version")
	}
	require.Len(t, after.Pages[2].Bits, (100+7)/8)
	env.RequireInvariants(t)
	// And claims go on from there.
	next := decided(t, env, p, "b", reservation.Params{Numbers: testfix.Nums(2, 2*inventory.PageBits+99)})
	require.Equal(t, reservation.StatusHeld, next.Status)
	env.RequireInvariants(t)
}
