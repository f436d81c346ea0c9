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
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Do(context.Background(), i)
			assert.NoError(t, err)
			assert.Equal(t, 2*i, v)
		}()
	}
	wg.Wait()
	require.Less(t, runs.Load(), int32(50), "calls were coalesced")

	_, err := c.Do(context.Background(), -1)
	require.EqualError(t, err, "negative")
}
