package reservation

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

// decidedChannel is the PostgreSQL notification channel on which every
// claim transaction names the requests it decided, delivered at its
// commit: a status read waiting for a decision (Waiters) is woken by it
// instead of asking the database again and again.
const decidedChannel = "boxoffice_decided"

// idsPerNotification keeps a notification's payload (16 bytes an id, in
// base64) under PostgreSQL's 8,000-byte limit.
const idsPerNotification = 300

// decidedPayloads encodes ids as the payloads of the notifications that
// announce them.
func decidedPayloads(ids []uuid.UUID) []string {
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

// parseDecided reads a notification's payload back into ids.
func parseDecided(payload string) ([]uuid.UUID, error) {
	raw, err := base64.RawStdEncoding.DecodeString(payload)
	if err != nil || len(raw)%16 != 0 {
		return nil, fmt.Errorf("decided notification of %d bytes is not a list of ids", len(payload))
	}
	ids := make([]uuid.UUID, len(raw)/16)
	for i := range ids {
		copy(ids[i][:], raw[16*i:])
	}
	return ids, nil
}

// MaxWaiters bounds the status reads one process keeps waiting; past it a
// read answers at once, as without a wait.
const MaxWaiters = 100_000

// freshFor is how young a request must be (by its UUIDv7 id's time) for a
// process to know it undecided without reading it: no notification named
// it, and the process has listened since well before it was accepted
// (clockSkew covers the accepting process's clock). Notified ids are kept
// a little longer than that.
const (
	freshFor  = 10 * time.Second
	clockSkew = 2 * time.Second
	keepIDs   = freshFor + clockSkew
)

// Waiters wakes status reads waiting for their requests' decisions. One
// connection per process listens on decidedChannel; for each notification
// the requests it names that reads wait for are read in one query and
// handed to those reads: a waiting read costs no query of its own.
type Waiters struct {
	connect func(ctx context.Context) (*pgx.Conn, error)
	pool    *pgxpool.Pool
	logger  *slog.Logger

	mu        sync.Mutex
	waiting   map[uuid.UUID][]chan *Owned
	count     int
	listening bool
	since     time.Time              // when the listener last started listening
	decided   map[uuid.UUID]struct{} // ids notified in the last keepIDs
	notified  []notified             // the same, oldest first, to forget them
}

type notified struct {
	at  time.Time
	ids []uuid.UUID
}

// NewWaiters returns the process's waiters, listening on a connection of
// its own to the pool's database once Run runs.
func NewWaiters(pool *pgxpool.Pool, logger *slog.Logger) *Waiters {
	cfg := pool.Config().ConnConfig.Copy()
	return &Waiters{
		connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) },
		pool:    pool,
		logger:  logger,
		waiting: map[uuid.UUID][]chan *Owned{},
		decided: map[uuid.UUID]struct{}{},
	}
}

// Run listens until ctx ends, connecting again after a failure.
func (w *Waiters) Run(ctx context.Context) {
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
		w.logger.Warn("decision listener lost its connection", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (w *Waiters) listen(ctx context.Context) error {
	conn, err := w.connect(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+decidedChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	w.setListening(true)
	defer w.setListening(false)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		ids, err := parseDecided(n.Payload)
		if err != nil {
			w.logger.Warn("ignored a decision notification", "error", err)
			continue
		}
		w.answer(ctx, w.wake(ids))
	}
}

// answer reads the requests readers wait for and hands each reader its
// request (nil when the read failed: the reader reads it itself).
func (w *Waiters) answer(ctx context.Context, woken map[uuid.UUID][]chan *Owned) {
	if len(woken) == 0 {
		return
	}
	ids := make([]uuid.UUID, 0, len(woken))
	for id := range woken {
		ids = append(ids, id)
	}
	read, err := readRequests(ctx, w.pool, ids)
	if err != nil {
		w.logger.Warn("could not read the decided requests readers wait for", "error", err)
	}
	for id, chans := range woken {
		for _, c := range chans {
			c <- read[id] // buffered: never blocks
		}
	}
}

// setListening says whether the listener listens. Once it does again,
// decisions made while no one listened were missed: whoever waits is woken
// to read for itself.
func (w *Waiters) setListening(on bool) {
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

// wake notes ids as decided and takes the readers waiting for them off
// the waiting list.
func (w *Waiters) wake(ids []uuid.UUID) map[uuid.UUID][]chan *Owned {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for len(w.notified) > 0 && now.Sub(w.notified[0].at) > keepIDs {
		for _, id := range w.notified[0].ids {
			delete(w.decided, id)
		}
		w.notified = w.notified[1:]
	}
	w.notified = append(w.notified, notified{at: now, ids: ids})
	for _, id := range ids {
		w.decided[id] = struct{}{}
	}
	var woken map[uuid.UUID][]chan *Owned
	for _, id := range ids {
		chans, ok := w.waiting[id]
		if !ok {
			continue
		}
		if woken == nil {
			woken = map[uuid.UUID][]chan *Owned{}
		}
		woken[id] = chans
		w.count -= len(chans)
		delete(w.waiting, id)
	}
	return woken
}

// ErrNotListening means a read cannot wait: the listener is not connected
// (or the process has MaxWaiters already); it answers at once.
var ErrNotListening = errors.New("reservation: not listening for decisions")

// Register starts waiting for request id's decision, before the caller
// reads its status (so a decision committed in between is not missed).
// The channel brings the request once a claim transaction decided it, or
// nil when the caller must read it itself: the read of it failed, or the
// listener reconnected and may have missed its notification. undecided
// says the process knows, without reading it, that the request was not
// decided when it registered (a young request no notification named): the
// caller may wait before reading it. stop ends the wait.
func (w *Waiters) Register(id uuid.UUID) (decided <-chan *Owned, undecided bool, stop func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.listening || w.count >= MaxWaiters {
		return nil, false, nil, ErrNotListening
	}
	if id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		created := time.Unix(sec, nsec)
		_, notified := w.decided[id]
		undecided = !notified && created.After(w.since.Add(clockSkew)) && time.Since(created) < freshFor
	}
	c := make(chan *Owned, 1)
	w.waiting[id] = append(w.waiting[id], c)
	w.count++
	return c, undecided, func() { w.unregister(id, c) }, nil
}

func (w *Waiters) unregister(id uuid.UUID, c chan *Owned) {
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

// Await is a status read that waits for the decision.
type Await struct {
	ID   uuid.UUID
	Wait time.Duration // at most this long
	// Read reads the request's status (the caller's own read, with its
	// checks of who may see it).
	Read func() (*Request, error)
	// Mine says whether the caller may see a request the listener read.
	Mine func(*Owned) bool
	// Stop, when closed, ends the wait early (a server shutting down).
	Stop <-chan struct{}
}

// Await reads the request, and while it is QUEUED waits for its decision
// (registered before each read, so a decision committed in between is not
// missed) until a.Wait has passed: the request comes read with the others
// the same notification decided. A request the process knows undecided is
// not read before. applied is false when the process could not wait (its
// listener down, or MaxWaiters waiting): the first read is the answer.
func (w *Waiters) Await(ctx context.Context, a Await) (_ *Request, applied bool, _ error) {
	deadline := time.NewTimer(a.Wait)
	defer deadline.Stop()
	for {
		decided, undecided, stop, err := w.Register(a.ID)
		if err != nil {
			r, err := a.Read()
			return r, false, err
		}
		if !undecided {
			r, err := a.Read()
			if err != nil || r.Status != StatusQueued {
				stop()
				return r, true, err
			}
		}
		select {
		case got := <-decided:
			stop()
			if got == nil {
				continue // read it here
			}
			if !a.Mine(got) {
				return nil, true, db.ErrNotFound
			}
			return &got.Request, true, nil
		case <-deadline.C:
		case <-ctx.Done():
		case <-a.Stop:
		}
		stop()
		r, err := a.Read()
		return r, true, err
	}
}
