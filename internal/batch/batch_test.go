package batch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/batch"
)

// Concurrent calls share runs and each gets its own answer.
func TestCoalescer(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	c := &batch.Coalescer[int, int]{Linger: 20 * time.Millisecond, Timeout: time.Second,
		Run: func(ctx context.Context, reqs []int) []batch.Result[int] {
			runs.Add(1)
			out := make([]batch.Result[int], len(reqs))
			for i, r := range reqs {
				if r < 0 {
					out[i].Err = errors.New("negative")
					continue
				}
				out[i].Value = r * 2
			}
			return out
		}}
	doAll(t, c, 50, func(i int) int { return 2 * i })
	require.Less(t, runs.Load(), int32(50), "calls were coalesced")

	_, err := c.Do(context.Background(), -1)
	require.EqualError(t, err, "negative")
}

// With MaxRuns, runs never overlap beyond it, and callers arriving while
// one runs wait together: the batches grow instead of multiplying.
func TestCoalescerMaxRuns(t *testing.T) {
	t.Parallel()
	var running, most, runs atomic.Int32
	c := &batch.Coalescer[int, int]{Linger: time.Microsecond, MaxRuns: 1, Timeout: time.Second,
		Run: func(ctx context.Context, reqs []int) []batch.Result[int] {
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			runs.Add(1)
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			out := make([]batch.Result[int], len(reqs))
			for i, r := range reqs {
				out[i].Value = r + 1
			}
			return out
		}}
	doAll(t, c, 200, func(i int) int { return i + 1 })
	require.Equal(t, int32(1), most.Load(), "one run at a time")
	require.Less(t, runs.Load(), int32(100), "callers that waited for the run shared the next")
}

// doAll calls c.Do with 0..n-1 at once and checks each answer against want.
func doAll(t *testing.T, c *batch.Coalescer[int, int], n int, want func(int) int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Do(context.Background(), i)
			assert.NoError(t, err)
			assert.Equal(t, want(i), v)
		}()
	}
	wg.Wait()
}
