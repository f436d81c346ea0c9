package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFenced is returned instead of running a query when the process cannot
// tell which database is the one writer: more than one host of DATABASE_URL
// accepts writes, or the connection's server is on an older timeline than a
// writer this process has already seen (an old primary back after a
// failover). Nothing is written until an operator has fenced the old one.
var ErrFenced = errors.New("database writer in doubt")

// Fence keeps one process from writing to a stale primary. PostgreSQL
// raises its timeline at every promotion, so after a failover the new
// primary's timeline is higher than the old one's, which comes back (if it
// does) on the timeline it had. The fence remembers the highest timeline it
// has seen on a writer — from every connection the pool opens and from
// probing every host listed in DATABASE_URL — and refuses a connection to a
// writer on a lower one. When more than one listed host accepts writes it
// refuses every query: safety over availability.
//
// A fence guards one pool: Open installs it on the pool's connections
// (PoolOptions.Fence), and CheckFence checks it inside a transaction.
type Fence struct {
	hosts  []*pgx.ConnConfig
	logger *slog.Logger

	seen      atomic.Int64 // highest timeline seen on a writer
	writers   atomic.Int32 // listed hosts that accepted writes at the last probe
	refusals  atomic.Int64
	probed    atomic.Bool
	probeOnce sync.Mutex // one probe at a time
}

// fenceKey is where a connection's fence and server timeline live in its
// pgconn.CustomData.
const (
	fenceKey    = "boxoffice.fence"
	timelineKey = "boxoffice.timeline"
)

// fenceProbeTimeout bounds one host's answer to a probe: a host that cannot
// answer in time counts as not accepting writes.
const fenceProbeTimeout = 2 * time.Second

// NewFence reads the hosts listed in url (host1:port1,host2:port2,…). It
// connects to nothing; Probe asks them.
func NewFence(url string, logger *slog.Logger) (*Fence, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	f := &Fence{logger: logger}
	// pgconn lists every host (and each TLS variant of a host) as a
	// fallback; the fence asks each host once, with its own variants.
	byHost := map[string]*pgx.ConnConfig{}
	add := func(host string, port uint16, fb *pgconn.FallbackConfig) {
		key := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if c, ok := byHost[key]; ok {
			c.Fallbacks = append(c.Fallbacks, fb)
			return
		}
		c := cfg.Copy()
		c.Host, c.Port, c.TLSConfig = host, port, fb.TLSConfig
		c.Fallbacks = nil
		// Ask every host, whichever it is: target_session_attrs would hide
		// the second writer the fence looks for.
		c.ValidateConnect = nil
		c.ConnectTimeout = fenceProbeTimeout
		c.Tracer = nil
		byHost[key] = c
		f.hosts = append(f.hosts, c)
	}
	add(cfg.Host, cfg.Port, &pgconn.FallbackConfig{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig})
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port, fb)
	}
	return f, nil
}

// Hosts is how many hosts the URL lists.
func (f *Fence) Hosts() int { return len(f.hosts) }

// Writers is how many listed hosts accepted writes at the last probe.
func (f *Fence) Writers() int { return int(f.writers.Load()) }

// Timeline is the highest timeline the process has seen on a writer.
func (f *Fence) Timeline() int64 { return f.seen.Load() }

// Refusals counts queries and connections refused.
func (f *Fence) Refusals() int64 { return f.refusals.Load() }

// Conflict reports whether more than one listed host accepts writes.
func (f *Fence) Conflict() bool { return f.writers.Load() > 1 }

// serverState is one server's answer: in recovery (a standby), or a writer
// on a timeline. The timeline is the current WAL file's, which a primary
// writes on; it is readable by any user.
const serverState = `
	SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN 0
		ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int::bigint END`

func queryState(ctx context.Context, conn *pgx.Conn) (standby bool, timeline int64, err error) {
	err = conn.QueryRow(ctx, serverState).Scan(&standby, &timeline)
	return standby, timeline, err
}

// Probe asks every listed host whether it accepts writes and on which
// timeline, raises the timeline seen and records how many writers answered.
// A host that cannot be reached is not a writer. It returns how many there
// are; more than one is a conflict, logged as an error.
func (f *Fence) Probe(ctx context.Context) int {
	f.probeOnce.Lock()
	defer f.probeOnce.Unlock()
	timelines := make([]int64, len(f.hosts))
	var wg sync.WaitGroup
	for i, host := range f.hosts {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, fenceProbeTimeout)
			defer cancel()
			conn, err := pgx.ConnectConfig(ctx, host)
			if err != nil {
				f.logger.DebugContext(ctx, "fence: host unreachable", "host", host.Host, "port", host.Port, "error", err)
				return
			}
			defer conn.Close(context.WithoutCancel(ctx))
			standby, timeline, err := queryState(ctx, conn)
			if err != nil {
				f.logger.DebugContext(ctx, "fence: host did not answer", "host", host.Host, "port", host.Port, "error", err)
				return
			}
			if !standby {
				timelines[i] = timeline
			}
		})
	}
	wg.Wait()
	writers := 0
	var hosts []string
	for i, tl := range timelines {
		if tl > 0 {
			writers++
			f.raise(tl)
			hosts = append(hosts, fmt.Sprintf("%s:%d (timeline %d)", f.hosts[i].Host, f.hosts[i].Port, tl))
		}
	}
	was := f.writers.Swap(int32(writers))
	first := !f.probed.Swap(true)
	switch {
	case writers > 1 && (was <= 1 || first):
		f.logger.ErrorContext(ctx, "more than one database host accepts writes: purchases paused until the old primary is fenced",
			"writers", hosts, "timeline_seen", f.seen.Load())
	case writers <= 1 && was > 1:
		f.logger.InfoContext(ctx, "one database writer again: purchases resume", "writers", hosts,
			"timeline_seen", f.seen.Load())
	}
	return writers
}

// Run probes every interval until ctx ends. With a single host listed
// there is no second writer to find (a stale one is still refused from the
// timelines the pool sees), so it only waits.
func (f *Fence) Run(ctx context.Context, interval time.Duration) error {
	if len(f.hosts) < 2 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			f.Probe(ctx)
		}
	}
}

// raise records a writer's timeline if it is the highest seen.
func (f *Fence) raise(timeline int64) {
	for {
		seen := f.seen.Load()
		if timeline <= seen || f.seen.CompareAndSwap(seen, timeline) {
			return
		}
	}
}

// afterConnect records the new connection's server timeline on it.
func (f *Fence) afterConnect(ctx context.Context, conn *pgx.Conn) error {
	standby, timeline, err := queryState(ctx, conn)
	if err != nil {
		return fmt.Errorf("fence: read the server's timeline: %w", err)
	}
	data := conn.PgConn().CustomData()
	data[fenceKey] = f
	data[timelineKey] = timeline
	if !standby {
		f.raise(timeline)
	}
	return nil
}

// check refuses conn when the writer is in doubt. A connection made to a
// standby (timeline 0) is asked again, since it may have been promoted
// since; a standby refuses writes by itself.
func (f *Fence) check(ctx context.Context, conn *pgx.Conn) error {
	if f.Conflict() {
		f.refusals.Add(1)
		return fmt.Errorf("%w: %d hosts of DATABASE_URL accept writes", ErrFenced, f.Writers())
	}
	data := conn.PgConn().CustomData()
	timeline, _ := data[timelineKey].(int64)
	if timeline == 0 {
		standby, tl, err := queryState(ctx, conn)
		if err != nil {
			return fmt.Errorf("fence: read the server's timeline: %w", err)
		}
		if standby {
			return nil
		}
		timeline = tl
		data[timelineKey] = tl
		f.raise(tl)
	}
	if seen := f.seen.Load(); timeline < seen {
		f.refusals.Add(1)
		return fmt.Errorf("%w: the server is a writer on timeline %d, a writer on timeline %d has been seen (an old primary?)",
			ErrFenced, timeline, seen)
	}
	return nil
}

// prepareConn is the pool's check before handing out a connection: a stale
// writer's connection is destroyed, and in a conflict none is handed out.
func (f *Fence) prepareConn(ctx context.Context, conn *pgx.Conn) (bool, error) {
	if err := f.check(ctx, conn); err != nil {
		// A conflict says nothing against the connection itself: it goes
		// back to the pool. A stale writer's, or one that could not be
		// asked, is destroyed.
		return errors.Is(err, ErrFenced) && f.Conflict(), err
	}
	return true, nil
}

// CheckFence refuses to let tx commit when the writer is in doubt; the
// claim, confirm and capture transactions call it last, so a timeline seen
// while they ran still stops them. A transaction on a pool opened without a
// fence (tests' own pools) passes.
func CheckFence(ctx context.Context, tx pgx.Tx) error {
	conn := tx.Conn()
	if conn == nil {
		return nil
	}
	f, ok := conn.PgConn().CustomData()[fenceKey].(*Fence)
	if !ok {
		return nil
	}
	return f.check(ctx, conn)
}

// BeginFenced runs fn in a transaction on pool, as pgx.BeginFunc does, and
// checks the fence last, before the commit: the claim, confirm and capture
// transactions (every one that writes claims, bitmap, counters or a
// payment's outcome) run through it.
func BeginFenced(ctx context.Context, pool Beginner, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return CheckFence(ctx, tx)
	})
}

// Beginner is what BeginFenced begins a transaction on (a pool).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}
