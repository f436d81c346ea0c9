package inventory_test

import (
	"context"
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/inventory"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	for _, capacity := range []int{1, 7, 8, 9, 63, 64, 65, 1000, 1_000_000} {
		bits := bitset.New(uint(capacity))
		raw := make([]byte, (capacity+7)/8)
		for _, i := range []int{0, capacity / 2, capacity - 1} {
			bits.Set(uint(i))
			raw[i/8] |= 1 << (i % 8)
		}
		require.Len(t, raw, (capacity+7)/8)
		// Documented order: number n is bit (n-1)%8, least significant first, of byte (n-1)/8.
		require.Equal(t, byte(1), raw[0]&1)
		last := capacity - 1
		require.NotZero(t, raw[last/8]&(1<<(last%8)))
		back := inventory.Decode(raw, capacity)
		require.True(t, bits.Equal(back), "capacity %d", capacity)
	}
}

func TestApplyRefusesDoubleSet(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 16})
	ctx := context.Background()
	apply := func(c inventory.Change) error {
		return pgx.BeginFunc(ctx, env.Schema.Pool, func(tx pgx.Tx) error { return inventory.Apply(ctx, tx, p.ID, c) })
	}
	require.NoError(t, apply(inventory.Change{Set: []int32{3, 16}, HeldDelta: 2}))
	require.Error(t, apply(inventory.Change{Set: []int32{3}, HeldDelta: 1}), "3 is already taken")
	require.Error(t, apply(inventory.Change{Clear: []int32{4}, HeldDelta: -1}), "4 is free")
	require.Error(t, apply(inventory.Change{Set: []int32{17}, HeldDelta: 1}), "17 is outside capacity")
	snap, err := inventory.Get(ctx, env.Schema.Pool, p.ID)
	require.NoError(t, err)
	require.Equal(t, 2, snap.Held)
	require.Equal(t, 14, snap.Available)
	require.Equal(t, int64(1), snap.Version)
}

func TestAuditFindsCorruption(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 16})
	env.RequireInvariants(t)

	// A claims row without its bit and counters: what a buggy writer would leave.
	env.Exec(t, `INSERT INTO claims (product_id, number, hold_id, state) VALUES ($1, 5, $2, 'HELD')`, p.ID, uuid.New())
	violations, products, err := reservation.AuditAll(context.Background(), env.Schema.Pool)
	require.NoError(t, err)
	require.Equal(t, 1, products)
	rules := map[string]bool{}
	for _, v := range violations {
		rules[v.Rule] = true
	}
	require.True(t, rules["claims_counters"])
	require.True(t, rules["claims_without_bit"])
}
