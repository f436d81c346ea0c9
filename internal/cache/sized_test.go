package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A byte-bounded cache never holds more than its budget: expired entries go
// first, then the oldest; a value bigger than the budget is served, not kept.
func TestSizedCacheStaysWithinBytes(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	loads := 0
	c := NewSized(time.Second, 1000, 100, func(v []byte) int { return len(v) }, func(_ context.Context, k int) ([]byte, error) {
		loads++
		return make([]byte, k), nil
	})
	c.now = func() time.Time { return now }
	ctx := context.Background()
	for _, k := range []int{30, 30, 30} {
		_, err := c.Get(ctx, k)
		require.NoError(t, err)
	}
	require.Equal(t, 30, c.Bytes(), "the same key twice is one entry")
	for k := 31; k <= 33; k++ {
		now = now.Add(time.Millisecond)
		_, err := c.Get(ctx, k)
		require.NoError(t, err)
		require.LessOrEqual(t, c.Bytes(), 100, fmt.Sprint(k))
	}
	require.Equal(t, 31+32+33, c.Bytes(), "the oldest (30) went to make room for 33")
	require.Equal(t, 3, c.Len())

	now = now.Add(2 * time.Second) // everything expires
	_, err := c.Get(ctx, 4)
	require.NoError(t, err)
	require.Equal(t, 100, c.Bytes(), "expired entries stay until room is needed")
	_, err = c.Get(ctx, 90)
	require.NoError(t, err)
	require.Equal(t, 94, c.Bytes(), "expired entries made room: 4 + 90")

	_, err = c.Get(ctx, 500)
	require.NoError(t, err)
	require.LessOrEqual(t, c.Bytes(), 100, "too big to keep")
}
