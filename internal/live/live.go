// Package live pushes a product's availability to shoppers as it changes.
// Each process runs at most one feed per product: once a period it asks the
// database whether the product's inventory version moved (one primary-key
// read, the bitmap only when it did), turns the change into a delta of
// numbers taken and freed, encodes it once and hands the same bytes to every
// subscriber. Subscribers never cause a query each. A subscriber that cannot
// keep up is dropped rather than buffered without bound; it reconnects with
// the last version it saw and is resumed from the recent deltas, or given a
// fresh snapshot.
package live

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/metrics"
)

// Event is one server-sent event, encoded once for all subscribers.
type Event struct {
	Name    string // "snapshot" or "delta"
	Version int64
	Data    []byte // JSON
	// From is the version a delta was computed from.
	From int64
	// Read is when the feed read the change from the database: the
	// fan-out lag is measured from it.
	Read time.Time
}

// Snapshot is the first event of a stream.
type Snapshot struct {
	ProductID uuid.UUID `json:"productId"`
	Version   int64     `json:"version"`
	Capacity  int       `json:"capacity"`
	Available int       `json:"available"`
	Held      int       `json:"held"`
	Sold      int       `json:"sold"`
	Bitmap    string    `json:"bitmap,omitempty" doc:"As in GET /availability: base64, number n is bit (n-1)%8 of byte (n-1)/8, set = taken; only for products of up to 1,000,000 numbers"`
	PageSize  int       `json:"pageSize" doc:"Numbers per page of the bitmap"`
	Pages     []PageRef `json:"pages" doc:"Every page's version and count of taken numbers, as GET /availability lists them"`
}

// PageRef is one page of the bitmap in a snapshot or a delta: a client
// holding the page at an older version fetches it again (or applies the
// delta's numbers).
type PageRef struct {
	Page    int   `json:"page"`
	Version int64 `json:"version"`
	Taken   int   `json:"taken"`
}

// PageRefs lists a snapshot's pages.
func PageRefs(pages []inventory.Page) []PageRef {
	out := make([]PageRef, len(pages))
	for i, p := range pages {
		out[i] = PageRef{Page: p.Index, Version: p.Version, Taken: p.Taken}
	}
	return out
}

// Delta is what changed between two versions.
type Delta struct {
	Version   int64     `json:"version"`
	Taken     []int32   `json:"taken"`
	Freed     []int32   `json:"freed"`
	Available int       `json:"available"`
	Held      int       `json:"held"`
	Sold      int       `json:"sold"`
	Pages     []PageRef `json:"pages" doc:"The pages that changed, at their new versions"`
}

// Options tune a Hub.
type Options struct {
	// Period is how often a feed reads its product (deltas are coalesced
	// to at most one per period). Default 1s.
	Period time.Duration
	// Buffer is how many events a subscriber may fall behind before it is
	// dropped. Default 32.
	Buffer int
	// History is how many recent deltas a feed keeps for resuming.
	// Default 120.
	History int
	// MaxSubscribers caps this process's subscribers. Default 50,000.
	MaxSubscribers int
	// Idle is how long a feed without subscribers lives on. Default 30s.
	Idle    time.Duration
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// ErrFull is returned when the process has as many subscribers as it takes.
var ErrFull = errors.New("too many availability subscribers")

// Hub runs the feeds of one process.
type Hub struct {
	q       db.DBTX
	o       Options
	mu      sync.Mutex
	feeds   map[uuid.UUID]*feed
	subs    int
	queries atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
	closed  sync.Once
}

// NewHub returns a Hub reading through q.
func NewHub(q db.DBTX, o Options) *Hub {
	if o.Period <= 0 {
		o.Period = time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 32
	}
	if o.History <= 0 {
		o.History = 120
	}
	if o.MaxSubscribers <= 0 {
		o.MaxSubscribers = 50_000
	}
	if o.Idle <= 0 {
		o.Idle = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{q: q, o: o, feeds: map[uuid.UUID]*feed{}, done: make(chan struct{})}
}

// Close stops every feed (their subscriptions are closed) and waits for
// them.
func (h *Hub) Close() {
	h.closed.Do(func() { close(h.done) })
	h.wg.Wait()
}

// Queries is how many database reads the feeds have made: it grows with
// products and time, not with subscribers.
func (h *Hub) Queries() int64 { return h.queries.Load() }

// Subscription is one subscriber's stream.
type Subscription struct {
	// C delivers the events; it is closed when the subscriber is dropped
	// (too slow) or the feed ends.
	C    <-chan Event
	c    chan Event
	feed *feed
	once sync.Once
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.once.Do(func() { s.feed.unsubscribe(s) })
}

// Subscribe starts a stream of a product's availability: a snapshot first
// (or, when lastVersion is among the recent deltas, the deltas after it),
// then a delta whenever the product changes. lastVersion < 0 asks for a
// snapshot.
func (h *Hub) Subscribe(ctx context.Context, productID uuid.UUID, lastVersion int64) (*Subscription, error) {
	h.mu.Lock()
	if h.subs >= h.o.MaxSubscribers {
		h.mu.Unlock()
		return nil, ErrFull
	}
	f, ok := h.feeds[productID]
	if !ok {
		select {
		case <-h.done:
			h.mu.Unlock()
			return nil, errors.New("availability hub closed")
		default:
		}
		f = &feed{hub: h, product: productID, subs: map[*Subscription]struct{}{}, ready: make(chan struct{})}
		h.feeds[productID] = f
		h.wg.Add(1)
		go f.run()
	}
	h.subs++
	h.mu.Unlock()
	h.o.Metrics.LiveSubscribers(1)

	select {
	case <-f.ready:
	case <-ctx.Done():
		h.release()
		return nil, ctx.Err()
	}
	if f.err != nil {
		h.release()
		return nil, f.err
	}
	s := &Subscription{c: make(chan Event, h.o.Buffer), feed: f}
	s.C = s.c
	if !f.attach(s, lastVersion) {
		// It went idle as we arrived: start another.
		h.release()
		return h.Subscribe(ctx, productID, lastVersion)
	}
	return s, nil
}

// attach adds a subscriber with its first events: the deltas since
// lastVersion when the history has them all and they fit its buffer, else a
// snapshot. It is false when the feed has stopped.
func (f *feed) attach(s *Subscription, lastVersion int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	backlog := f.since(lastVersion)
	if backlog == nil || len(backlog) >= cap(s.c) {
		backlog = []Event{f.snapshot}
	}
	for _, ev := range backlog {
		s.c <- ev
	}
	f.subs[s] = struct{}{}
	return true
}

func (h *Hub) release() {
	h.mu.Lock()
	h.subs--
	h.mu.Unlock()
	h.o.Metrics.LiveSubscribers(-1)
}

// feed reads one product and fans its changes out.
type feed struct {
	hub     *Hub
	product uuid.UUID
	ready   chan struct{} // closed once the first read is done (or failed)
	err     error         // the first read's failure

	mu       sync.Mutex
	subs     map[*Subscription]struct{}
	snapshot Event   // the current state as a snapshot event
	history  []Event // recent deltas, oldest first
	stopped  bool
	idleFrom time.Time

	snap *inventory.Snapshot // last state read, every page
}

// since returns the deltas after version, or nil when the history does
// not reach back to it (or version is unknown). Each kept delta starts where
// the one before it ended, so the chain from version on is complete.
func (f *feed) since(version int64) []Event {
	if version < 0 {
		return nil
	}
	if version == f.snapshot.Version {
		return []Event{}
	}
	for i, ev := range f.history {
		if ev.From == version {
			return append([]Event(nil), f.history[i:]...)
		}
	}
	return nil
}

func (f *feed) run() {
	h := f.hub
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	first := true
	t := time.NewTicker(h.o.Period)
	defer t.Stop()
	for {
		if err := f.read(ctx, first); err != nil {
			if first {
				f.err = err
				close(f.ready)
				f.stop()
				return
			}
			h.o.Logger.Warn("availability feed read failed", "product", f.product, "error", err)
		} else if first {
			close(f.ready)
		}
		first = false
		select {
		case <-t.C:
		case <-h.done:
			f.end()
			return
		}
		if f.idle() {
			return
		}
	}
}

// idle stops the feed once it has had no subscriber for Idle.
func (f *feed) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) > 0 {
		f.idleFrom = time.Time{}
		return false
	}
	if f.idleFrom.IsZero() {
		f.idleFrom = time.Now()
		return false
	}
	if time.Since(f.idleFrom) < f.hub.o.Idle {
		return false
	}
	f.hub.mu.Lock()
	delete(f.hub.feeds, f.product)
	f.hub.mu.Unlock()
	f.stopped = true
	return true
}

// end closes every subscription: the hub is closing.
func (f *feed) end() {
	f.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		delete(f.subs, s)
		close(s.c)
		f.hub.release()
	}
}

func (f *feed) stop() {
	f.hub.mu.Lock()
	delete(f.hub.feeds, f.product)
	f.hub.mu.Unlock()
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

// read asks whether the product changed and, if so, publishes the change.
func (f *feed) read(ctx context.Context, first bool) error {
	var since int64 = -1
	if f.snap != nil {
		since = f.snap.Version
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	f.hub.queries.Add(1)
	snap, changed, err := inventory.Changed(ctx, f.hub.q, f.product, since)
	if err != nil || !changed {
		return err
	}
	now := time.Now()
	var delta *Event
	if !first && f.snap != nil {
		d := merge(f.snap, snap)
		delta = &Event{Name: "delta", Version: snap.Version, From: f.snap.Version, Read: now, Data: mustJSON(d)}
	}
	f.snap = snap
	ev := Snapshot{ProductID: f.product, Version: snap.Version, Capacity: snap.Capacity, Available: snap.Available,
		Held: snap.Held, Sold: snap.Sold, PageSize: inventory.PageBits, Pages: PageRefs(snap.Pages)}
	if snap.Capacity <= inventory.WholeBitmapUpTo {
		ev.Bitmap = base64.StdEncoding.EncodeToString(snap.Bitmap())
	}
	snapEv := Event{Name: "snapshot", Version: snap.Version, Read: now, Data: mustJSON(ev)}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshot = snapEv
	if delta == nil {
		return nil
	}
	f.history = append(f.history, *delta)
	if len(f.history) > f.hub.o.History {
		f.history = f.history[len(f.history)-f.hub.o.History:]
	}
	for s := range f.subs {
		select {
		case s.c <- *delta:
		default:
			// Too slow: drop it; it resumes from the history or a
			// snapshot when it reconnects.
			delete(f.subs, s)
			close(s.c)
			f.hub.release()
			f.hub.o.Metrics.LiveDropped()
		}
	}
	return nil
}

func (f *feed) unsubscribe(s *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.c)
		f.hub.release()
	}
}

// merge lists the numbers taken and freed between the feed's last state
// (every page) and a read of the pages changed since, and completes the
// read with the unchanged pages.
func merge(before, after *inventory.Snapshot) Delta {
	d := Delta{Version: after.Version, Available: after.Available, Held: after.Held, Sold: after.Sold,
		Taken: []int32{}, Freed: []int32{}, Pages: PageRefs(after.Pages)}
	pages := slices.Clone(before.Pages)
	for _, p := range after.Pages {
		old := pages[p.Index].Bits
		a, b := inventory.Decode(old, len(old)*8), inventory.Decode(p.Bits, len(p.Bits)*8)
		base := int32(p.Index * inventory.PageBits)
		for _, n := range numbers(b.Difference(a)) {
			d.Taken = append(d.Taken, base+n)
		}
		for _, n := range numbers(a.Difference(b)) {
			d.Freed = append(d.Freed, base+n)
		}
		pages[p.Index] = p
	}
	after.Pages = pages
	return d
}

// numbers lists the numbers whose bits are set.
func numbers(b *bitset.BitSet) []int32 {
	out := []int32{}
	for i, ok := b.NextSet(0); ok; i, ok = b.NextSet(i + 1) {
		out = append(out, int32(i+1))
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs always encode
	}
	return b
}
