package reservation

import (
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestHashAsRecorded: the fingerprint is the one recorded requests carry —
// SHA-256 of json.Marshal's encoding — so replays of requests recorded by
// earlier versions are still told apart from new requests.
func TestHashAsRecorded(t *testing.T) {
	t.Parallel()
	offer := uuid.New()
	product := uuid.New()
	for _, p := range []Params{
		{Numbers: []int32{7}},
		{Numbers: []int32{9, 3, 2147483647, 1}, AcceptFewer: true},
		{Numbers: []int32{}},
		{Quantity: 2, Mode: ModeBest},
		{Quantity: 6, Mode: ModeRandom, AcceptFewer: true},
		{Quantity: 1, Mode: ModeBest, Offer: &offer},
		{Numbers: []int32{4, 5}, Offer: &offer},
		{Quantity: -3, Mode: "<a & \"b\"\\\n\x00\xff é>"},
	} {
		sorted := []int32(nil)
		if p.Numbers != nil {
			sorted = append([]int32{}, p.Numbers...)
			for i := range sorted { // insertion sort: the reference shares no code with hash
				for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
					sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
				}
			}
		}
		b, err := json.Marshal(struct {
			P uuid.UUID
			N []int32
			Q int
			M string
			F bool
			O *uuid.UUID `json:",omitempty"`
		}{product, sorted, p.Quantity, p.Mode, p.AcceptFewer, p.Offer})
		require.NoError(t, err)
		want := sha256.Sum256(b)
		require.Equal(t, want[:], p.hash(product), "%+v (%s)", p, b)
	}
}
