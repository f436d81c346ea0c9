// Package cache is a small in-process cache with a time to live and one
// loader per key at a time, for values that may be slightly stale: product
// settings, key lookups, availability snapshots.
package cache

import (
	"context"
	"fmt"
	"strings"
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

	// With a size function the cache is bounded by bytes too.
	size     func(V) int
	maxBytes int
	bytes    int

	// With isMiss, the errors it recognises are kept for missTTL.
	isMiss  func(error) bool
	missTTL time.Duration

	// staleFor: past its TTL a value is still served this long while one
	// load in the background replaces it.
	staleFor   time.Duration
	refreshing map[K]bool // keys reloading in the background
}

type entry[V any] struct {
	value  V
	err    error // a kept miss
	loaded time.Time
	size   int
}

// New returns a cache of at most maxEntries values, loading misses with load.
// Errors are not cached.
func New[K comparable, V any](ttl time.Duration, maxEntries int, load func(ctx context.Context, key K) (V, error)) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, load: load, now: time.Now, entries: map[K]entry[V]{}, max: maxEntries}
}

// KeepMisses makes the cache keep, for ttl, the load errors isMiss
// recognises (a key that does not exist): a flood of unknown keys then
// costs one load per key and ttl, not one per request. Call it once, on a
// new cache.
func (c *Cache[K, V]) KeepMisses(isMiss func(error) bool, ttl time.Duration) *Cache[K, V] {
	c.isMiss, c.missTTL = isMiss, ttl
	return c
}

// ServeStale makes Get answer, for window past a value's TTL, with the
// value it has while one load in the background replaces it: the readers
// of a busy key never wait for its reload. Call it once, on a new cache.
func (c *Cache[K, V]) ServeStale(window time.Duration) *Cache[K, V] {
	c.staleFor, c.refreshing = window, map[K]bool{}
	return c
}

// Get returns the cached value for key, loading it when missing or older than
// the TTL (see ServeStale). Concurrent misses for one key share one load.
func (c *Cache[K, V]) Get(ctx context.Context, key K) (V, error) {
	if v, err, ok := c.fresh(key); ok {
		return v, err
	}
	if v, ok := c.stale(key); ok {
		return v, nil
	}
	v, err, _ := c.group.Do(keyString(key), c.loader(ctx, key))
	if err != nil {
		var zero V
		return zero, err
	}
	return v.(V), nil
}

// stale returns key's value if it is past its TTL by less than staleFor,
// and starts its reload in the background unless one runs.
func (c *Cache[K, V]) stale(key K) (V, bool) {
	var zero V
	if c.staleFor <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.err != nil || c.now().Sub(e.loaded) >= c.ttl+c.staleFor {
		return zero, false
	}
	if !c.refreshing[key] {
		c.refreshing[key] = true
		go func() {
			// The reload outlives the request that noticed the value aged.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, _ = c.group.Do(keyString(key), c.loader(ctx, key))
			c.mu.Lock()
			delete(c.refreshing, key)
			c.mu.Unlock()
		}()
	}
	return e.value, true
}

// loader loads key once into the cache (the one load of a singleflight).
func (c *Cache[K, V]) loader(ctx context.Context, key K) func() (any, error) {
	return func() (any, error) {
		// A caller that missed while another's load was finishing joins
		// after it: the value is there now, and loading again would be a
		// second database read for nothing.
		if v, err, ok := c.fresh(key); ok {
			return v, err
		}
		v, err := c.load(ctx, key)
		if err != nil {
			if c.isMiss != nil && c.isMiss(err) {
				c.mu.Lock()
				c.putMiss(key, err)
				c.mu.Unlock()
			}
			return v, err
		}
		c.mu.Lock()
		c.put(key, v)
		c.mu.Unlock()
		return v, nil
	}
}

// fresh returns key's value (or kept miss) if it is cached and younger
// than its TTL.
func (c *Cache[K, V]) fresh(key K) (V, error, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	ttl := c.ttl
	if e.err != nil {
		ttl = c.missTTL
	}
	if ok && c.now().Sub(e.loaded) < ttl {
		return e.value, e.err, true
	}
	var zero V
	return zero, nil, false
}

// NewSized returns a cache bounded by maxEntries values and maxBytes as
// size measures them: the right cache for values whose size varies by
// orders of magnitude (a 10-number product's availability and a
// 10,000,000-number one's). A value larger than the whole budget is served
// but not kept.
func NewSized[K comparable, V any](ttl time.Duration, maxEntries, maxBytes int, size func(V) int,
	load func(ctx context.Context, key K) (V, error)) *Cache[K, V] {
	c := New(ttl, maxEntries, load)
	c.size, c.maxBytes = size, maxBytes
	return c
}

// Bytes reports the size of what the cache holds (0 without a size function).
func (c *Cache[K, V]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len reports how many values the cache holds.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// put stores v under key, making room first: expired entries go, then the
// oldest, until both bounds hold. Callers hold c.mu.
func (c *Cache[K, V]) put(key K, v V) {
	sz := 0
	if c.size != nil {
		sz = c.size(v)
		if sz > c.maxBytes {
			c.remove(key)
			return
		}
	}
	c.store(key, entry[V]{value: v, size: sz})
}

// putMiss keeps a miss under key. Callers hold c.mu.
func (c *Cache[K, V]) putMiss(key K, err error) { c.store(key, entry[V]{err: err}) }

// store adds e under key, making room first. Callers hold c.mu.
func (c *Cache[K, V]) store(key K, e entry[V]) {
	key = own(key)
	now := c.now()
	c.remove(key)
	sz := e.size
	full := func() bool { return len(c.entries) >= c.max || (c.size != nil && c.bytes+sz > c.maxBytes) }
	if full() {
		for k, e := range c.entries {
			if now.Sub(e.loaded) >= c.ttl {
				c.remove(k)
			}
		}
	}
	for full() && len(c.entries) > 0 {
		var oldest K
		first := true
		var at time.Time
		for k, e := range c.entries {
			if first || e.loaded.Before(at) {
				oldest, at, first = k, e.loaded, false
			}
		}
		c.remove(oldest)
	}
	e.loaded = now
	c.entries[key] = e
	c.bytes += sz
}

// own returns a string key with bytes of its own. Keys often come from a
// request (a path parameter, a header), and Fiber's strings point into
// buffers it reuses for the next request: kept as a map key, such a string
// would change under the map, so that a lookup misses its entry, Forget
// cannot find it, or — once the buffer holds another key of the same
// length — a lookup of that key finds this key's value.
func own[K comparable](key K) K {
	if s, ok := any(key).(string); ok {
		return any(strings.Clone(s)).(K)
	}
	return key
}

func (c *Cache[K, V]) remove(key K) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

func keyString[K comparable](k K) string {
	if s, ok := any(k).(interface{ String() string }); ok {
		return s.String()
	}
	return fmt.Sprint(k)
}

// Forget drops a key, so the next Get loads it afresh: this process sees a
// change it made itself at once.
func (c *Cache[K, V]) Forget(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
}
