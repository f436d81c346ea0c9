package reservation

import (
	"math/rand/v2"
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/product"
)

func newTestPicker(capacity int, taken []int32, rows []product.Row) *picker {
	bits := bitset.New(uint(capacity))
	for _, n := range taken {
		bits.Set(uint(n - 1))
	}
	return &picker{taken: bits, free: capacity - len(taken), visible: capacity - len(taken), capacity: capacity, rows: rows,
		rng: rand.New(rand.NewPCG(1, 2))}
}

func TestPickBestAvoidsOrphans(t *testing.T) {
	t.Parallel()
	l := &product.Layout{Sections: []product.Section{{Name: "A", Rows: []product.Row{
		{Name: "1", Seats: 5}, {Name: "2", Seats: 5}, {Name: "3", Seats: 4},
	}}}}
	l.Number()
	// Row 1 (1-5): 2 taken → runs 1 and 3-5. Row 2 (6-10): 9 taken → runs 6-8, 10.
	p := newTestPicker(14, []int32{2, 9}, l.Rows())
	// Pair: run 3-5 would orphan one; run 6-8 too; row 3 (11-14) leaves 2 — no orphan.
	require.Equal(t, []int32{11, 12}, p.best(2))
	// Three: run 3-5 fits exactly.
	require.Equal(t, []int32{3, 4, 5}, p.best(3))
	// Five: no row has five free together — first free seats in preference order.
	require.Equal(t, []int32{1, 3, 4, 5, 6}, p.best(5))
}

func TestPickBestSkipsFullRowsQuickly(t *testing.T) {
	t.Parallel()
	var rows []product.Row
	for range 2000 {
		rows = append(rows, product.Row{Name: "r", Seats: 30})
	}
	l := &product.Layout{Sections: []product.Section{{Name: "S", Rows: rows}}}
	l.Number()
	var taken []int32
	for n := int32(1); n <= 59_970; n++ {
		taken = append(taken, n)
	}
	p := newTestPicker(60_000, taken, l.Rows())
	require.Equal(t, []int32{59_971, 59_972}, p.best(2))
}

func TestPickRandomDistinctAndFree(t *testing.T) {
	t.Parallel()
	for _, takenCount := range []int{0, 990} { // dense, then sparse stock
		var taken []int32
		for n := int32(1); n <= int32(takenCount); n++ {
			taken = append(taken, n)
		}
		p := newTestPicker(1000, taken, nil)
		seen := map[int32]bool{}
		for range 3 {
			got := p.random(3)
			require.Len(t, got, 3)
			for _, n := range got {
				require.True(t, p.isFree(n), "picked a taken number %d", n)
				require.False(t, seen[n])
				seen[n] = true
			}
			p.take(got)
		}
	}
}

func TestPickRandomIsUniform(t *testing.T) {
	t.Parallel()
	counts := make([]int, 10)
	for i := range 20_000 {
		p := newTestPicker(10, nil, nil)
		p.rng = rand.New(rand.NewPCG(uint64(i), 7))
		counts[p.random(1)[0]-1]++
	}
	for n, c := range counts {
		require.InDelta(t, 2000, c, 200, "number %d drawn %d times", n+1, c)
	}
}
