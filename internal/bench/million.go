package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// MillionConfig sizes the million-number raffle benchmark.
type MillionConfig struct {
	Numbers  int           // capacity (default 1,000,000)
	Requests int           // queued random requests of 2 numbers (default 20,000)
	ReadFor  time.Duration // each availability read run (default 2s)
}

// MillionResult is the raffle benchmark's outcome.
type MillionResult struct {
	ViewBytes         int           `json:"viewBytes" doc:"size of the cached availability response"`
	CachedPerSec      float64       `json:"cachedPerSec"`
	CachedP99         time.Duration `json:"cachedP99"`
	UncachedPerSec    float64       `json:"uncachedPerSec"`
	UncachedP99       time.Duration `json:"uncachedP99"`
	RandomClaimPerSec float64       `json:"randomClaimNumbersPerSec"`
	Violations        int           `json:"violations"`
}

// Million measures a 1,000,000-number raffle: the memory of its cached
// availability, availability reads over HTTP from the cache and straight
// from the database, and claims of random numbers.
func Million(ctx context.Context, pool *pgxpool.Pool, c MillionConfig, out io.Writer) (*MillionResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := newTenant(ctx, pool, "million-")
	if err != nil {
		return nil, err
	}
	p, err := newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "m-" + uuid.NewString()[:8],
		Name: "Raffle", Kind: product.KindNumbered, Capacity: c.Numbers, PriceCents: 100, Currency: "EUR"})
	if err != nil {
		return nil, err
	}
	res := &MillionResult{}
	fmt.Fprintf(out, "million: a %d-number raffle\n", c.Numbers)

	// Random claims first, so reads see a non-empty bitmap.
	reqs := make([]reservation.Queued, c.Requests)
	for i := range reqs {
		reqs[i] = reservation.Queued{BuyerID: fmt.Sprintf("r%d", i), Quantity: 2, Mode: reservation.ModeRandom}
	}
	if _, err := reservation.ImportQueued(ctx, pool, t.ID, p.ID, reqs); err != nil {
		return nil, err
	}
	a, err := build(ctx, pool, logger, app.Options{}, nil)
	if err != nil {
		return nil, err
	}
	claimer := a.Claimer
	start := time.Now()
	numbers := 0
	for {
		r, err := claimer.ClaimBatch(ctx, p.ID, 1000)
		if err != nil {
			return nil, err
		}
		if r.Requests == 0 {
			break
		}
		numbers += r.Numbers
	}
	res.RandomClaimPerSec = float64(numbers) / time.Since(start).Seconds()
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		v, err := reservation.Audit(ctx, tx, p.ID)
		res.Violations = len(v)
		return err
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  random claims: %d numbers at %.0f numbers/s (violations %d)\n", numbers, res.RandomClaimPerSec, res.Violations)

	_, base, stop, err := serve(ctx, a)
	if err != nil {
		return nil, err
	}
	defer stop()
	url := base + "/v1/products/" + p.ID.String() + "/availability"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()

	if res.ViewBytes, err = get(ctx, client, url); err != nil {
		return nil, err
	}

	read := func(once func() error) (float64, time.Duration, error) {
		var n atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		deadline := time.Now().Add(c.ReadFor)
		start := time.Now()
		var wg sync.WaitGroup
		errc := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				// At least one read each, however late a loaded machine
				// starts the goroutine: a smoke run reads for milliseconds.
				for first := true; first || time.Now().Before(deadline); first = false {
					t0 := time.Now()
					if err := once(); err != nil {
						errc <- err
						return
					}
					mine = append(mine, time.Since(t0))
					n.Add(1)
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errc)
		if err := <-errc; err != nil {
			return 0, 0, err
		}
		slices.Sort(lat)
		return float64(n.Load()) / time.Since(start).Seconds(), lat[len(lat)*99/100], nil
	}
	if res.CachedPerSec, res.CachedP99, err = read(func() error { _, err := get(ctx, client, url); return err }); err != nil {
		return nil, err
	}
	if res.UncachedPerSec, res.UncachedP99, err = read(func() error { _, err := inventory.Get(ctx, pool, p.ID); return err }); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  availability over HTTP from the cache: %.0f reads/s, p99 %.2fms; straight from the database: %.0f reads/s, p99 %.2fms\n",
		res.CachedPerSec, ms(res.CachedP99), res.UncachedPerSec, ms(res.UncachedP99))
	fmt.Fprintf(out, "  cached availability view: %.0f KiB (bitmap of 125 KB in base64, held once per product)\n", float64(res.ViewBytes)/1024)
	return res, nil
}

func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("availability: status %d", resp.StatusCode)
	}
	return int(n), nil
}
