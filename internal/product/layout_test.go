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
