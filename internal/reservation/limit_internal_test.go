package reservation

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The limiter paces batches with a fake clock: no wall-clock sleeps.
func TestLimiterPacesClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		hot, cold := uuid.New(), uuid.New()

		l := newLimiter(Limits{PerProduct: 100})
		start := time.Now()
		for range 4 { // 400 numbers at 100/s with a 100-number burst: 3 s of waiting
			require.NoError(t, l.wait(ctx, hot, 100))
		}
		require.Equal(t, 3*time.Second, time.Since(start).Round(time.Second))
		before := time.Now()
		require.NoError(t, l.wait(ctx, cold, 100), "another product has its own budget")
		require.Equal(t, time.Duration(0), time.Since(before))

		g := newLimiter(Limits{Global: 1000})
		start = time.Now()
		for range 3 {
			require.NoError(t, g.wait(ctx, uuid.New(), 1000))
		}
		require.Equal(t, 2*time.Second, time.Since(start).Round(time.Second), "the global budget spans products")

		unlimited := newLimiter(Limits{})
		start = time.Now()
		require.NoError(t, unlimited.wait(ctx, hot, 1_000_000))
		require.Zero(t, time.Since(start))
	})
}
