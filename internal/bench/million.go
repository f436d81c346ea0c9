package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"boxoffice/api"
	"boxoffice/internal/app"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// MillionConfig sizes the large-raffle benchmark: the same claims on
// products of each size, side by side, then the API's cache of large
// products.
type MillionConfig struct {
	Sizes   []int         // product sizes (default 10,000, 1,000,000 and 10,000,000)
	Rounds  int           // rounds of every kind of claim on every size, interleaved (default 3)
	Batches int           // claim batches a round (default 4)
	Batch   int           // requests of one number each a claim batch (default 1,000)
	Cached  int           // 10,000,000-number products the API caches for the memory figure (default 10)
	ReadFor time.Duration // each availability read run (default 2s)
}

// ClaimKind is one way of asking for numbers, measured on every size.
type ClaimKind struct {
	Name string
	// Ask returns the requests of one round on a product of size numbers.
	Ask func(size, n int, rng *mrand.Rand) []reservation.Queued
}

// claimKinds are the claims compared across sizes: numbers the buyers
// chose at random (distinct, so every size holds them all), the server's
// random pick, and best available (consecutive numbers).
var claimKinds = []ClaimKind{
	{"asked", func(size, n int, rng *mrand.Rand) []reservation.Queued {
		chosen := map[int32]bool{}
		out := make([]reservation.Queued, 0, n)
		for len(out) < n {
			x := int32(rng.IntN(size)) + 1
			if !chosen[x] {
				chosen[x] = true
				out = append(out, reservation.Queued{BuyerID: fmt.Sprintf("a%d", len(out)), Numbers: []int32{x}})
			}
		}
		return out
	}},
	{"random", func(_, n int, _ *mrand.Rand) []reservation.Queued {
		return quantityOfOne(n, reservation.ModeRandom)
	}},
	{"clustered", func(_, n int, _ *mrand.Rand) []reservation.Queued {
		return quantityOfOne(n, reservation.ModeBest)
	}},
}

func quantityOfOne(n int, mode string) []reservation.Queued {
	out := make([]reservation.Queued, n)
	for i := range out {
		out[i] = reservation.Queued{BuyerID: fmt.Sprintf("q%d", i), Quantity: 1, Mode: mode}
	}
	return out
}

// ClaimFigures are one kind of claim on one size, over every round.
type ClaimFigures struct {
	Size        int     `json:"size"`
	Kind        string  `json:"kind"`
	Numbers     int     `json:"numbers"`
	PerSec      float64 `json:"numbersPerSec"`
	WALPerBatch float64 `json:"walBytesPerBatch" doc:"WAL written per claim batch (pg_current_wal_lsn deltas)"`
}

// MillionResult is the large-raffle benchmark's outcome.
type MillionResult struct {
	Claims []ClaimFigures `json:"claims"`
	// The ratios of the largest size to the smallest.
	AskedRatio        float64       `json:"askedRatio" doc:"numbers/s asked at random, largest ÷ smallest product"`
	RandomRatio       float64       `json:"randomRatio" doc:"numbers/s of random picks, largest ÷ smallest product"`
	ClusteredWALRatio float64       `json:"clusteredWalRatio" doc:"WAL per best-available batch, largest ÷ smallest product"`
	CacheBytes        int64         `json:"cacheBytes" doc:"the API process's heap for the cached large products"`
	CacheHeld         int           `json:"cacheHeld" doc:"the availability caches' own count of the bytes they hold"`
	ViewBytes         int           `json:"viewBytes" doc:"size of the cached availability response of the 1,000,000-number product, as sent (gzipped)"`
	CachedPerSec      float64       `json:"cachedPerSec"`
	CachedP99         time.Duration `json:"cachedP99"`
	UncachedPerSec    float64       `json:"uncachedPerSec"`
	UncachedP99       time.Duration `json:"uncachedP99"`
	PageReadsPerSec   float64       `json:"pageReadsPerSec" doc:"page reads of the cached large products over HTTP"`
	PageReadP99       time.Duration `json:"pageReadP99"`
	Violations        int           `json:"violations"`
}

// Million measures products of 10,000 to 10,000,000 numbers side by side:
// the same claims on each (throughput, WAL and pages per batch), the
// memory of the API's cache of ten of the largest, page reads from it, and
// the whole availability of a 1,000,000-number product, cached and not.
func Million(ctx context.Context, pool *pgxpool.Pool, c MillionConfig, out io.Writer) (*MillionResult, error) {
	if len(c.Sizes) == 0 {
		c.Sizes = []int{10_000, 1_000_000, 10_000_000}
	}
	c.Rounds, c.Batches, c.Batch, c.Cached = cmp.Or(c.Rounds, 3), cmp.Or(c.Batches, 4), cmp.Or(c.Batch, 1000), cmp.Or(c.Cached, 10)
	c.ReadFor = cmp.Or(c.ReadFor, 2*time.Second)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := build(ctx, pool, logger, app.Options{}, nil)
	if err != nil {
		return nil, err
	}
	res := &MillionResult{}
	fmt.Fprintf(out, "million: the same claims on products of %v numbers, %d rounds of %d batches of %d requests\n",
		c.Sizes, c.Rounds, c.Batches, c.Batch)

	// Every kind on every size in each round, so that drift over the run
	// falls on all of them alike.
	figures := make([]ClaimFigures, len(claimKinds)*len(c.Sizes))
	took := make([]time.Duration, len(figures))
	batches := make([]int, len(figures))
	rng := mrand.New(mrand.NewPCG(1, 2))
	var whole *product.Product // served whole: the availability reads' product
	for range c.Rounds {
		for k, kind := range claimKinds {
			for s, size := range c.Sizes {
				f := &figures[k*len(c.Sizes)+s]
				f.Size, f.Kind = size, kind.Name
				p, err := millionProduct(ctx, pool, size)
				if err != nil {
					return nil, err
				}
				if size <= inventory.WholeBitmapUpTo && kind.Name == "asked" {
					whole = p
				}
				if _, err := reservation.ImportQueued(ctx, pool, p.TenantID, p.ID, kind.Ask(size, c.Batches*c.Batch, rng)); err != nil {
					return nil, err
				}
				wal, err := walLSN(ctx, pool)
				if err != nil {
					return nil, err
				}
				start := time.Now()
				for {
					r, err := a.Claimer.ClaimBatch(ctx, p.ID, c.Batch)
					if err != nil {
						return nil, err
					}
					if r.Requests == 0 {
						break
					}
					f.Numbers += r.Numbers
					batches[k*len(c.Sizes)+s]++
				}
				took[k*len(c.Sizes)+s] += time.Since(start)
				written, err := walSince(ctx, pool, wal)
				if err != nil {
					return nil, err
				}
				f.WALPerBatch += written
				violations, err := audit(ctx, pool, p.ID)
				if err != nil {
					return nil, err
				}
				res.Violations += violations
			}
		}
	}
	for i := range figures {
		f := &figures[i]
		f.PerSec = float64(f.Numbers) / took[i].Seconds()
		f.WALPerBatch /= float64(max(batches[i], 1))
		fmt.Fprintf(out, "  %-9s on %8d numbers: %6d numbers at %7.0f numbers/s, %7.0f KiB WAL a batch\n",
			f.Kind, f.Size, f.Numbers, f.PerSec, f.WALPerBatch/1024)
	}
	res.Claims = figures
	ratio := func(kind int, of func(ClaimFigures) float64) float64 {
		return of(figures[kind*len(c.Sizes)+len(c.Sizes)-1]) / of(figures[kind*len(c.Sizes)])
	}
	perSec := func(f ClaimFigures) float64 { return f.PerSec }
	res.AskedRatio, res.RandomRatio = ratio(0, perSec), ratio(1, perSec)
	res.ClusteredWALRatio = ratio(2, func(f ClaimFigures) float64 { return f.WALPerBatch })
	largest, smallest := c.Sizes[len(c.Sizes)-1], c.Sizes[0]
	fmt.Fprintf(out, "  numbers asked at random, %d ÷ %d: %.2fx (target ≥ 0.8x); random picks %.2fx\n",
		largest, smallest, res.AskedRatio, res.RandomRatio)
	fmt.Fprintf(out, "  batches of %d on %d: %.0f numbers/s asked, %.0f picked (target ≥ 100,000 where %d reaches it: %.0f, %.0f)\n",
		c.Batch, largest, figures[len(c.Sizes)-1].PerSec, figures[2*len(c.Sizes)-1].PerSec, smallest,
		figures[0].PerSec, figures[len(c.Sizes)].PerSec)
	fmt.Fprintf(out, "  WAL per best-available batch, %d ÷ %d: %.2fx (target ≤ 2x)\n", largest, smallest, res.ClusteredWALRatio)
	fmt.Fprintf(out, "  violations %d\n", res.Violations)

	srv, base, stop, err := serve(ctx, a)
	if err != nil {
		return nil, err
	}
	defer stop()
	// The readers stand in for browsers and CDNs on other machines: they
	// take the gzipped answers as sent. Decompressing them here put a gzip
	// reader per response on the API's two cores and into the latency
	// measured. They use fasthttp's client, as the burst's load does:
	// net/http's allocates several KB a read, here in the API's own
	// process, and the collections that brought on held up the reads.
	client := &fasthttp.HostClient{Addr: strings.TrimPrefix(base, "http://"), MaxConns: 16}
	defer client.CloseIdleConnections()
	if err := cachedPages(ctx, pool, srv, client, base, c, res, out); err != nil {
		return nil, err
	}
	if whole == nil {
		return res, nil
	}
	url := base + "/v1/products/" + whole.ID.String() + "/availability"
	if res.ViewBytes, err = get(client, url); err != nil {
		return nil, err
	}
	if res.CachedPerSec, res.CachedP99, err = readFor(c.ReadFor, 8, func(int) error { _, err := get(client, url); return err }); err != nil {
		return nil, err
	}
	if res.UncachedPerSec, res.UncachedP99, err = readFor(c.ReadFor, 8, func(int) error { _, err := inventory.Get(ctx, pool, whole.ID); return err }); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  whole availability of %d numbers over HTTP from the cache: %.0f reads/s, p99 %.2fms; straight from the database: %.0f reads/s, p99 %.2fms (view %.0f KiB gzipped)\n",
		whole.Capacity, res.CachedPerSec, ms(res.CachedP99), res.UncachedPerSec, ms(res.UncachedP99), float64(res.ViewBytes)/1024)
	return res, nil
}

// cachedPages fills the API's cache with every page of c.Cached products
// of the largest size, their bits random as a half-sold raffle's (written
// straight into the pages: the figure is the cache's, not the claims'),
// measures the process's heap for them and reads random pages from it.
func cachedPages(ctx context.Context, pool *pgxpool.Pool, srv *api.Server, client *fasthttp.HostClient, base string, c MillionConfig, res *MillionResult, out io.Writer) error {
	size := c.Sizes[len(c.Sizes)-1]
	var urls []string
	for range c.Cached {
		p, err := millionProduct(ctx, pool, size)
		if err != nil {
			return err
		}
		if err := inventory.FillRandom(ctx, pool, p.ID, size); err != nil {
			return err
		}
		for i := range inventory.PageCount(size) {
			urls = append(urls, fmt.Sprintf("%s/v1/products/%s/availability/pages/%d", base, p.ID, i))
		}
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	for i, u := range urls {
		if _, err := get(client, u); err != nil {
			return fmt.Errorf("page %d: %w", i, err)
		}
	}
	// The heap is the process's: the target's figure when the bench runs
	// alone, noise when other work shares the process (the tests).
	res.CacheBytes = heap() - before
	res.CacheHeld = srv.AvailabilityCacheBytes()
	fmt.Fprintf(out, "  the API's heap for %d cached products of %d numbers (%d pages): %.1f MiB (target ≤ 64 MiB; the caches count %.1f MiB)\n",
		c.Cached, size, len(urls), float64(res.CacheBytes)/(1<<20), float64(res.CacheHeld)/(1<<20))
	// As many readers as cores, for the latency of a read rather than of
	// a queue of them (they share the cores with the API they read).
	pageReaders := runtime.NumCPU()
	var err error
	res.PageReadsPerSec, res.PageReadP99, err = readFor(c.ReadFor, pageReaders, func(i int) error {
		_, err := get(client, urls[(i*7919)%len(urls)])
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  page reads from the cache over HTTP, %d readers: %.0f reads/s, p99 %.2fms (target ≤ 1ms)\n",
		pageReaders, res.PageReadsPerSec, ms(res.PageReadP99))
	return nil
}

// millionProduct creates a numbered product of size numbers for a tenant
// of its own (a tenant's quota is 20,000,000 numbers).
func millionProduct(ctx context.Context, pool *pgxpool.Pool, size int) (*product.Product, error) {
	t, err := newTenant(ctx, pool, "million-")
	if err != nil {
		return nil, err
	}
	return newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "m-" + uuid.NewString()[:8],
		Name: "Raffle", Kind: product.KindNumbered, Capacity: size, PriceCents: 100, Currency: "EUR", PerBuyerLimit: 6})
}

func walLSN(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var lsn string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return "", fmt.Errorf("wal position: %w", err)
	}
	return lsn, nil
}

func walSince(ctx context.Context, pool *pgxpool.Pool, lsn string) (float64, error) {
	var n float64
	if err := pool.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - $1::pg_lsn)::float8`, lsn).Scan(&n); err != nil {
		return 0, fmt.Errorf("wal written: %w", err)
	}
	return n, nil
}

func audit(ctx context.Context, pool *pgxpool.Pool, productID uuid.UUID) (int, error) {
	n := 0
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		v, err := reservation.Audit(ctx, tx, productID)
		n = len(v)
		return err
	})
	return n, err
}

// readFor runs once from readers goroutines for d (at least once each) and
// returns the rate and the p99 latency.
func readFor(d time.Duration, readers int, once func(i int) error) (float64, time.Duration, error) {
	var n atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, readers)
	for g := range readers {
		wg.Go(func() {
			var mine []time.Duration
			// At least one read each, however late a loaded machine
			// starts the goroutine: a smoke run reads for milliseconds.
			for i, first := g, true; first || time.Now().Before(deadline); i, first = i+readers, false {
				t0 := time.Now()
				if err := once(i); err != nil {
					errc <- err
					return
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return 0, 0, err
	}
	slices.Sort(lat)
	return float64(n.Load()) / time.Since(start).Seconds(), lat[len(lat)*99/100], nil
}

func get(client *fasthttp.HostClient, url string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.Set("Accept-Encoding", "gzip")
	if err := client.DoTimeout(req, resp, 30*time.Second); err != nil {
		return 0, fmt.Errorf("%s: %w", url, err)
	}
	if resp.StatusCode() != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode())
	}
	return len(resp.Body()), nil
}
