package api

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestBodyMemo: a remembered body comes back as it was decoded, each time
// with slices and pointers of its own; bodies too long are not kept, and a
// full memo starts again.
func TestBodyMemo(t *testing.T) {
	t.Parallel()
	var m bodyMemo
	offer := uuid.New()
	body := []byte(`{"numbers":[7,9],"offer":"` + offer.String() + `"}`)
	_, ok := m.get(body)
	require.False(t, ok)
	m.put(body, ReservationBody{Numbers: []int32{7, 9}, Offer: &offer})

	got, ok := m.get(body)
	require.True(t, ok)
	require.Equal(t, ReservationBody{Numbers: []int32{7, 9}, Offer: &offer}, got)
	got.Numbers[0], *got.Offer = 8, uuid.Nil
	again, ok := m.get(body)
	require.True(t, ok)
	require.Equal(t, []int32{7, 9}, again.Numbers, "what a request changes is its own")
	require.Equal(t, offer, *again.Offer)

	empty := []byte(`{"numbers":[]}`)
	m.put(empty, ReservationBody{Numbers: []int32{}})
	got, ok = m.get(empty)
	require.True(t, ok)
	require.NotNil(t, got.Numbers, "an empty list stays a list: the API tells it from none")
	m.put([]byte(`{"quantity":1}`), ReservationBody{Quantity: 1})
	got, ok = m.get([]byte(`{"quantity":1}`))
	require.True(t, ok)
	require.Nil(t, got.Numbers)

	long := []byte(`{"numbers":[` + strings.Repeat("1,", maxMemoBody) + `1]}`)
	m.put(long, ReservationBody{Numbers: []int32{1}})
	_, ok = m.get(long)
	require.False(t, ok, "a long body is decoded each time")

	var full bodyMemo
	for i := range maxMemoBodies + 1 {
		full.put([]byte(`{"quantity":`+strconv.Itoa(i)+`}`), ReservationBody{Quantity: i})
	}
	require.Len(t, full.m, 1, "full, the memo started again")
	got, ok = full.get([]byte(`{"quantity":` + strconv.Itoa(maxMemoBodies) + `}`))
	require.True(t, ok)
	require.Equal(t, maxMemoBodies, got.Quantity)
}
