// Package cache is a small in-process cache with a time to live and one
// loader per key at a time, for values that may be slightly stale: product
// settings, key lookups, availability snapshots.
package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Cache maps K to V for at most TTL after loading.
type Cache[K comparable, V any] struct {
	ttl   time.Duration
	load  func(ctx context.Context, key K) (V, error)
	now   func() time.Time
	group singleflight.Group

	mu      sync.Mutex
	entries map[K]entry[V]
	max     int
}

type entry[V any] struct {
	value  V
	loaded time.Time
}

// New returns a cache of at most maxEntries values, loading misses with load.
// Errors are not cached.
func New[K comparable, V any](ttl time.Duration, maxEntries int, load func(ctx context.Context, key K) (V, error)) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, load: load, now: time.Now, entries: map[K]entry[V]{}, max: maxEntries}
}

// Get returns the cached value for key, loading it when missing or older than
// the TTL. Concurrent misses for one key share one load.
func (c *Cache[K, V]) Get(ctx context.Context, key K) (V, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.loaded) < c.ttl {
		return e.value, nil
	}
	v, err, _ := c.group.Do(keyString(key), func() (any, error) {
		v, err := c.load(ctx, key)
		if err != nil {
			return v, err
		}
		c.mu.Lock()
		if len(c.entries) >= c.max {
			clear(c.entries) // crude but bounded: a full cache starts over
		}
		c.entries[key] = entry[V]{value: v, loaded: c.now()}
		c.mu.Unlock()
		return v, nil
	})
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

func keyString[K comparable](k K) string {
	if s, ok := any(k).(interface{ String() string }); ok {
		return s.String()
	}
	return fmt.Sprint(k)
}
