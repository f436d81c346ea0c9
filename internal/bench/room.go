package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/product"
	"boxoffice/internal/waitingroom"
)

// RoomConfig sizes the waiting-room benchmark.
type RoomConfig struct {
	Joins       int           // buyers joining before opening (default 20,000)
	Concurrency int           // concurrent callers (default 64)
	PollFor     time.Duration // how long each poll run lasts (default 3s)
}

// RoomResult is the waiting-room benchmark's outcome.
type RoomResult struct {
	JoinsPerSec      float64 `json:"joinsPerSec"`
	LateJoinsPerSec  float64 `json:"lateJoinsPerSec" doc:"joins after the draw, each taking the next position"`
	PollsPerSec      float64 `json:"pollsPerSec"`
	DBPollsPerSec    float64 `json:"dbPollsPerSec" doc:"baseline: the position read from the database per poll"`
	PollRatio        float64 `json:"pollRatio"`
	PollQueriesTotal int64   `json:"-"`
}

// Room measures joins per second before opening (the spike: no shared row
// is touched) and after the draw (each late arrival takes the next
// position from the room's row), then status polls per second answered
// from memory against a baseline that reads the position from the
// database on every poll. All run at the service level, without HTTP.
func Room(ctx context.Context, pool *pgxpool.Pool, c RoomConfig, out io.Writer) (*RoomResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := newTenant(ctx, pool, "room-")
	if err != nil {
		return nil, err
	}
	products := newProducts(pool)
	p, err := products.Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "r-" + uuid.NewString()[:8],
		Name: "Room bench", Kind: product.KindNumbered, Capacity: 60_000, PriceCents: 1000, Currency: "EUR",
		OnSaleAt: time.Now().Add(time.Hour), WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 1000, ShoppingSeconds: 300}})
	if err != nil {
		return nil, err
	}
	a, err := build(ctx, pool, logger, app.Options{}, func(cfg *config.Config) { cfg.AccessTokenSecret = "bench" })
	if err != nil {
		return nil, err
	}
	svc := a.Rooms
	fmt.Fprintf(out, "room: %d joins before opening, %d concurrent callers\n", c.Joins, c.Concurrency)

	tokens := make([]string, c.Joins)
	ids := make([]uuid.UUID, c.Joins)
	// join has buyers prefix0… join from c.Concurrency callers and
	// answers joins per second; keep, when set, takes each entry.
	join := func(n int, prefix string, keep func(i int, e waitingroom.Entry)) (float64, error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, c.Concurrency)
		start := time.Now()
		for range c.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					e, _, err := svc.Join(ctx, t.ID, p.ID, prefix+strconv.Itoa(i))
					if err != nil {
						errs <- err
						return
					}
					if keep != nil {
						keep(i, e)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return float64(n) / time.Since(start).Seconds(), <-errs
	}
	res := &RoomResult{}
	res.JoinsPerSec, err = join(c.Joins, "b", func(i int, e waitingroom.Entry) { tokens[i], ids[i] = svc.QueueToken(e), e.ID })
	if err != nil {
		return nil, err
	}
	var recorded int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT buyer_id) FROM queue_entries WHERE product_id = $1`, p.ID).Scan(&recorded); err != nil {
		return nil, err
	}
	if recorded != c.Joins {
		return nil, fmt.Errorf("room bench: %d joins recorded, want %d", recorded, c.Joins)
	}
	fmt.Fprintf(out, "  joins: %8.0f/s\n", res.JoinsPerSec)

	// Open, draw, admit the first shoppers.
	if _, err := products.Reschedule(ctx, t.ID, p.ID, time.Now().Add(-time.Second)); err != nil {
		return nil, err
	}
	// The draw, then a second later the first admissions.
	for i := range 2 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		if _, err := svc.Tick(ctx); err != nil {
			return nil, err
		}
	}
	late := max(c.Joins/4, 1)
	if res.LateJoinsPerSec, err = join(late, "late", nil); err != nil {
		return nil, err
	}
	var placed int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT position) FROM queue_entries WHERE product_id = $1 AND buyer_id LIKE 'late%'`,
		p.ID).Scan(&placed); err != nil {
		return nil, err
	}
	if placed != late {
		return nil, fmt.Errorf("room bench: %d late joins placed, want %d", placed, late)
	}
	fmt.Fprintf(out, "  joins after the draw: %8.0f/s (%d, each at the next position)\n", res.LateJoinsPerSec, late)

	run := func(poll func(i int) error) (float64, error) {
		var n atomic.Int64
		deadline := time.Now().Add(c.PollFor)
		var wg sync.WaitGroup
		errs := make(chan error, c.Concurrency)
		start := time.Now()
		for w := range c.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; time.Now().Before(deadline); i += c.Concurrency {
					if err := poll(i % len(tokens)); err != nil {
						errs <- err
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		return float64(n.Load()) / time.Since(start).Seconds(), <-errs
	}
	if res.PollsPerSec, err = run(func(i int) error { _, err := svc.Poll(ctx, tokens[i]); return err }); err != nil {
		return nil, err
	}
	res.DBPollsPerSec, err = run(func(i int) error {
		var pos, through int64
		return pool.QueryRow(ctx, `
			SELECT coalesce(e.position, 0), r.admitted_through
			FROM queue_entries e JOIN waiting_rooms r ON r.product_id = e.product_id WHERE e.id = $1`, ids[i]).Scan(&pos, &through)
	})
	if err != nil {
		return nil, err
	}
	res.PollRatio = res.PollsPerSec / res.DBPollsPerSec
	fmt.Fprintf(out, "  polls from memory: %8.0f/s; database-backed baseline: %8.0f/s; ratio %.1fx\n",
		res.PollsPerSec, res.DBPollsPerSec, res.PollRatio)
	return res, nil
}
