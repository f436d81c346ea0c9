package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCache(t *testing.T) {
	t.Parallel()
	var loads atomic.Int32
	fail := false
	c := New(time.Second, 2, func(_ context.Context, k string) (string, error) {
		loads.Add(1)
		if fail {
			return "", errors.New("boom")
		}
		time.Sleep(10 * time.Millisecond)
		return "v-" + k, nil
	})
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(ctx, "a")
			assert.NoError(t, err)
			assert.Equal(t, "v-a", v)
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), loads.Load(), "concurrent misses share one load")

	_, _ = c.Get(ctx, "a")
	require.Equal(t, int32(1), loads.Load(), "fresh: cached")
	now = now.Add(2 * time.Second)
	_, _ = c.Get(ctx, "a")
	require.Equal(t, int32(2), loads.Load(), "stale: loaded again")

	fail = true
	_, err := c.Get(ctx, "b")
	require.Error(t, err)
	_, err = c.Get(ctx, "b")
	require.Error(t, err)
	require.Equal(t, int32(4), loads.Load(), "errors are not cached")
}

// A kept miss answers from the cache for its own TTL; other errors are
// never kept.
func TestKeptMisses(t *testing.T) {
	t.Parallel()
	errMissing, errDown := errors.New("missing"), errors.New("down")
	var loads atomic.Int32
	c := New(time.Minute, 100, func(_ context.Context, k string) (string, error) {
		loads.Add(1)
		if k == "down" {
			return "", errDown
		}
		return "", errMissing
	}).KeepMisses(func(err error) bool { return errors.Is(err, errMissing) }, 5*time.Second)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		_, err := c.Get(ctx, "ghost")
		require.ErrorIs(t, err, errMissing)
	}
	require.EqualValues(t, 1, loads.Load(), "one load for three asks")
	now = now.Add(6 * time.Second)
	_, err := c.Get(ctx, "ghost")
	require.ErrorIs(t, err, errMissing)
	require.EqualValues(t, 2, loads.Load(), "loaded again after the miss TTL")
	for range 2 {
		_, err := c.Get(ctx, "down")
		require.ErrorIs(t, err, errDown)
	}
	require.EqualValues(t, 4, loads.Load(), "other errors are not kept")
}

// A key that aliases a buffer its caller reuses (as Fiber's path
// parameters and headers do) is kept with bytes of its own: Forget finds it
// whatever the buffer holds by then, and the next Get loads afresh instead
// of finding the forgotten value once the buffer holds the key again.
func TestKeysFromReusedBuffersStayPut(t *testing.T) {
	t.Parallel()
	var loads atomic.Int32
	c := New(time.Minute, 10, func(_ context.Context, k string) (string, error) {
		return fmt.Sprintf("%s v%d", k, loads.Add(1)), nil
	})
	ctx := context.Background()
	buf := []byte("login-a")
	aliased := unsafe.String(&buf[0], len(buf))
	v, err := c.Get(ctx, aliased)
	require.NoError(t, err)
	require.Equal(t, "login-a v1", v)
	copy(buf, "/v1/sto") // another request reuses the buffer
	c.Forget("login-a")  // the store's settings changed
	copy(buf, "login-a") // and a request for the store comes again
	v, err = c.Get(ctx, aliased)
	require.NoError(t, err)
	require.Equal(t, "login-a v2", v, "the forgotten value is gone")
	c.mu.Lock()
	require.Len(t, c.entries, 1)
	c.mu.Unlock()
}

// Past its TTL a value is served while one background load replaces it;
// past the stale window, readers wait for the load again.
func TestServeStale(t *testing.T) {
	t.Parallel()
	var loads atomic.Int32
	release := make(chan struct{})
	c := New(time.Second, 10, func(_ context.Context, k string) (string, error) {
		n := loads.Add(1)
		if n > 1 {
			<-release
		}
		return fmt.Sprintf("%s-%d", k, n), nil
	}).ServeStale(time.Second)
	var now atomic.Int64
	now.Store(1000)
	c.now = func() time.Time { return time.Unix(now.Load(), 0) }
	ctx := context.Background()

	v, err := c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a-1", v)
	c.mu.Lock()
	c.entries["a"] = entry[string]{value: "a-1", loaded: time.Unix(1000, 0).Add(-1500 * time.Millisecond)}
	c.mu.Unlock()
	for range 50 {
		v, err := c.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "a-1", v, "served stale while it reloads")
	}
	close(release)
	require.Eventually(t, func() bool { v, _ := c.Get(ctx, "a"); return v == "a-2" }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(2), loads.Load(), "one background load")

	now.Store(1003) // past the TTL and the window: a blocking load
	v, err = c.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a-3", v)
}
