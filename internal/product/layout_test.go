package product

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlaceRowsWithoutPositions: a plan given as sections of rows with seat
// counts only is drawn as rows one below the other, each section below the
// one before; positions given are kept.
func TestPlaceRowsWithoutPositions(t *testing.T) {
	t.Parallel()
	l := &Layout{Sections: []Section{
		{Name: "Floor", Rows: []Row{{Name: "1", Seats: 3}, {Name: "2", Seats: 3}}},
		{Name: "Upper", Rows: []Row{{Name: "1", Seats: 2}, {Name: "2", Seats: 2}, {Name: "3", Seats: 2}}},
		{Name: "Box", X: 40, Y: 1, Rows: []Row{{Name: "A", Seats: 1, X: 1, Y: 2}}},
	}}
	require.Equal(t, 13, l.Number())
	ys := map[float64]int{}
	for n := 1; n <= 13; n++ {
		_, _, seat, ok := l.Locate(n)
		require.True(t, ok)
		ys[seat.Y]++
	}
	require.Equal(t, map[float64]int{0: 3, 1: 3, 3: 2 + 1, 4: 2, 5: 2}, ys, "the box is at y 3 too")
	_, _, box, _ := l.Locate(13)
	require.Equal(t, PlacedSeat{Number: 13, Label: "1", X: 41, Y: 3}, box, "a placed section is kept")
	_, _, first, _ := l.Locate(4)
	require.Equal(t, 0.0, first.X, "seats one unit apart from the row's start")
	_, _, third, _ := l.Locate(6)
	require.Equal(t, 2.0, third.X)

	// Numbering again changes nothing.
	before := l.Sections[1].Y
	l.Number()
	require.Equal(t, before, l.Sections[1].Y)
}

// TestLocateEveryNumber: the indexed lookup finds every number's seat, in
// sections of uneven rows, and nothing outside the layout.
func TestLocateEveryNumber(t *testing.T) {
	t.Parallel()
	l := &Layout{}
	type want struct{ section, row string }
	var expect []want
	for s := range 7 {
		sec := Section{Name: string(rune('A' + s))}
		for r := range 1 + s*3 {
			seats := 1 + (s*7+r*3)%11
			sec.Rows = append(sec.Rows, Row{Name: string(rune('a' + r)), Seats: seats})
			for range seats {
				expect = append(expect, want{sec.Name, string(rune('a' + r))})
			}
		}
		l.Sections = append(l.Sections, sec)
	}
	require.Equal(t, len(expect), l.Number())
	for i, w := range expect {
		s, r, seat, ok := l.Locate(i + 1)
		require.True(t, ok, "number %d", i+1)
		require.Equal(t, w, want{s.Name, r.Name}, "number %d", i+1)
		require.Equal(t, i+1, seat.Number)
	}
	for _, n := range []int{0, -1, len(expect) + 1} {
		_, _, _, ok := l.Locate(n)
		require.False(t, ok, "number %d", n)
	}
}

// TestSeatMapCaps: a map over MaxSeats seats or MaxRows rows is refused,
// however few bytes describe it; one at the caps is taken.
func TestSeatMapCaps(t *testing.T) {
	t.Parallel()
	rows := func(n, seats int) []Row {
		out := make([]Row, n)
		for i := range out {
			out[i] = Row{Name: "R", Seats: seats}
		}
		return out
	}
	huge := &Layout{Sections: []Section{{Name: "S", Rows: rows(40, 100_000)}}}
	require.ErrorIs(t, huge.Validate(4_000_000), ErrLayout)
	require.ErrorIs(t, (&Layout{Sections: []Section{{Name: "S", Rows: rows(MaxRows+1, 1)}}}).Validate(MaxRows+1), ErrLayout)
	atCap := &Layout{Sections: []Section{{Name: "S", Rows: rows(MaxRows/2, 10)}, {Name: "T", Rows: rows(MaxRows/2, 10)}}}
	require.NoError(t, atCap.Validate(MaxSeats))
}
