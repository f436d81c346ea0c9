// Package wake lets a read wait for a row to change instead of asking the
// database again and again. The transaction that changes the row names it
// on a PostgreSQL notification channel, delivered at its commit; one
// connection a process listens there and wakes the reads waiting for it.
// A reservation's status read waits for its decision this way, an order's
// for its payment's outcome.
package wake

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/db"
)

// idsPerNotification keeps a notification's payload (16 bytes an id, in
// base64) under PostgreSQL's 8,000-byte limit.
const idsPerNotification = 300

// Payloads encodes ids as the payloads of the notifications that announce
// them: raw bytes in base64 without padding, as SQL writes one id with
// rtrim(encode(uuid_send(id), 'base64'), '=').
func Payloads(ids []uuid.UUID) []string {
	var out []string
	for len(ids) > 0 {
		n := min(len(ids), idsPerNotification)
		buf := make([]byte, 0, 16*n)
		for _, id := range ids[:n] {
			buf = append(buf, id[:]...)
		}
		out = append(out, base64.RawStdEncoding.EncodeToString(buf))
		ids = ids[n:]
	}
	return out
}

// parse reads a notification's payload back into ids.
func parse(payload string) ([]uuid.UUID, error) {
	raw, err := base64.RawStdEncoding.DecodeString(payload)
	if err != nil || len(raw)%16 != 0 {
		return nil, fmt.Errorf("notification of %d bytes is not a list of ids", len(payload))
	}
	ids := make([]uuid.UUID, len(raw)/16)
	for i := range ids {
		copy(ids[i][:], raw[16*i:])
	}
	return ids, nil
}

// MaxWaiters bounds the reads one Waiters keeps waiting; past it a read
// answers at once, as without a wait.
const MaxWaiters = 100_000

// freshFor is how young a row must be (by its UUIDv7 id's time) for a
// process to know it unchanged without reading it: no notification named
// it, and the process has listened since well before it was made
// (clockSkew covers the making process's clock). Notified ids are kept a
// little longer than that. It holds for rows whose every change after
// their first state is notified.
const (
	freshFor  = 10 * time.Second
	clockSkew = 2 * time.Second
	keepIDs   = freshFor + clockSkew
)

// Waiters wakes reads waiting for rows named on one channel. When read is
// set, the rows a notification names that reads wait for are read in one
// query and handed to those reads: a waiting read costs no query of its
// own. Without it each woken read reads its row itself, once.
type Waiters[T any] struct {
	channel string
	read    func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*T, error)
	connect func(ctx context.Context) (*pgx.Conn, error)
	logger  *slog.Logger

	mu        sync.Mutex
	waiting   map[uuid.UUID][]chan *T
	count     int
	listening bool
	since     time.Time              // when the listener last started listening
	notified  map[uuid.UUID]struct{} // ids notified in the last keepIDs
	recent    []notified             // the same, oldest first, to forget them
}

type notified struct {
	at  time.Time
	ids []uuid.UUID
}

// New returns waiters on channel, listening on a connection of their own
// to the pool's database once Run runs; read (may be nil) reads the rows
// woken reads wait for.
func New[T any](pool *pgxpool.Pool, channel string, read func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*T, error),
	logger *slog.Logger,
) *Waiters[T] {
	cfg := pool.Config().ConnConfig.Copy()
	return &Waiters[T]{
		channel:  channel,
		read:     read,
		connect:  func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) },
		logger:   logger,
		waiting:  map[uuid.UUID][]chan *T{},
		notified: map[uuid.UUID]struct{}{},
	}
}

// Run listens until ctx ends, connecting again after a failure.
func (w *Waiters[T]) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := w.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		w.logger.Warn("listener lost its connection", "channel", w.channel, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (w *Waiters[T]) listen(ctx context.Context) error {
	conn, err := w.connect(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+w.channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	w.setListening(true)
	defer w.setListening(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		ids, err := parse(n.Payload)
		if err != nil {
			w.logger.Warn("ignored a notification", "channel", w.channel, "error", err)
			continue
		}
		w.answer(ctx, w.wake(ids))
	}
}

// answer reads the rows readers wait for and hands each reader its row
// (nil when there is no read, or it failed: the reader reads it itself).
func (w *Waiters[T]) answer(ctx context.Context, woken map[uuid.UUID][]chan *T) {
	if len(woken) == 0 {
		return
	}
	var read map[uuid.UUID]*T
	if w.read != nil {
		ids := make([]uuid.UUID, 0, len(woken))
		for id := range woken {
			ids = append(ids, id)
		}
		var err error
		if read, err = w.read(ctx, ids); err != nil {
			w.logger.Warn("could not read the rows readers wait for", "channel", w.channel, "error", err)
		}
	}
	for id, chans := range woken {
		for _, c := range chans {
			c <- read[id] // buffered: never blocks
		}
	}
}

// setListening says whether the listener listens. Once it does again,
// changes made while no one listened were missed: whoever waits is woken
// to read for itself.
func (w *Waiters[T]) setListening(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listening = on
	w.since = time.Now()
	if on {
		for id, chans := range w.waiting {
			for _, c := range chans {
				c <- nil
			}
			delete(w.waiting, id)
		}
		w.count = 0
	}
}

// wake notes ids as notified and takes the readers waiting for them off
// the waiting list.
func (w *Waiters[T]) wake(ids []uuid.UUID) map[uuid.UUID][]chan *T {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for len(w.recent) > 0 && now.Sub(w.recent[0].at) > keepIDs {
		for _, id := range w.recent[0].ids {
			delete(w.notified, id)
		}
		w.recent = w.recent[1:]
	}
	w.recent = append(w.recent, notified{at: now, ids: ids})
	for _, id := range ids {
		w.notified[id] = struct{}{}
	}
	var woken map[uuid.UUID][]chan *T
	for _, id := range ids {
		chans, ok := w.waiting[id]
		if !ok {
			continue
		}
		if woken == nil {
			woken = map[uuid.UUID][]chan *T{}
		}
		woken[id] = chans
		w.count -= len(chans)
		delete(w.waiting, id)
	}
	return woken
}

// ErrNotListening means a read cannot wait: the listener is not connected
// (or MaxWaiters wait already); it answers at once.
var ErrNotListening = errors.New("wake: not listening")

// Register starts waiting for row id's change, before the caller reads it
// (so a change committed in between is not missed). The channel brings
// the row once a transaction changed it, or nil when the caller must read
// it itself: there is no read, it failed, or the listener reconnected and
// may have missed its notification. unchanged says the process knows,
// without reading it, that the row has not changed since it was made (a
// young row no notification named): the caller may wait before reading
// it. stop ends the wait.
func (w *Waiters[T]) Register(id uuid.UUID) (changed <-chan *T, unchanged bool, stop func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.listening || w.count >= MaxWaiters {
		return nil, false, nil, ErrNotListening
	}
	if id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		made := time.Unix(sec, nsec)
		_, seen := w.notified[id]
		unchanged = !seen && made.After(w.since.Add(clockSkew)) && time.Since(made) < freshFor
	}
	c := make(chan *T, 1)
	w.waiting[id] = append(w.waiting[id], c)
	w.count++
	return c, unchanged, func() { w.unregister(id, c) }, nil
}

func (w *Waiters[T]) unregister(id uuid.UUID, c chan *T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	chans := w.waiting[id]
	for i, x := range chans {
		if x == c {
			w.waiting[id] = append(chans[:i], chans[i+1:]...)
			w.count--
			break
		}
	}
	if len(w.waiting[id]) == 0 {
		delete(w.waiting, id)
	}
}

// Read is a read that waits for a row to settle.
type Read[T any] struct {
	ID   uuid.UUID
	Wait time.Duration // at most this long
	// Get reads the row (the caller's own read, with its checks of who may
	// see it).
	Get func() (*T, error)
	// Pending says the row has not settled yet: the read waits on.
	Pending func(*T) bool
	// Mine says whether the caller may see a row the listener read (nil:
	// a woken read reads the row itself).
	Mine func(*T) bool
	// Stop, when closed, ends the wait early (a server shutting down).
	Stop <-chan struct{}
}

// Await reads the row, and while it is pending waits for a change
// (registered before each read, so a change committed in between is not
// missed) until r.Wait has passed. A row the process knows unchanged since
// it was made is not read before. applied is false when the process could
// not wait (its listener down, or MaxWaiters waiting): the first read is
// the answer.
func (w *Waiters[T]) Await(ctx context.Context, r Read[T]) (_ *T, applied bool, _ error) {
	deadline := time.NewTimer(r.Wait)
	defer deadline.Stop()
	for {
		changed, unchanged, stop, err := w.Register(r.ID)
		if err != nil {
			row, err := r.Get()
			return row, false, err
		}
		if !unchanged {
			row, err := r.Get()
			if err != nil || !r.Pending(row) {
				stop()
				return row, true, err
			}
		}
		select {
		case got := <-changed:
			stop()
			if got == nil || r.Mine == nil {
				continue // read it here
			}
			if !r.Mine(got) {
				return nil, true, db.ErrNotFound
			}
			if r.Pending(got) {
				continue // changed, not settled: wait on
			}
			return got, true, nil
		case <-deadline.C:
		case <-ctx.Done():
		case <-r.Stop:
		}
		stop()
		row, err := r.Get()
		return row, true, err
	}
}
