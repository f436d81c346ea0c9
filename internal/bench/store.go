package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os/exec"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/devs3"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/storefront"
)

// StoreResult is the store's budgets as measured in headless Chromium.
type StoreResult struct {
	HomeBytes     int64   `json:"homeBytesTransferred"`
	MapSeats      int     `json:"mapSeats"`
	MapFirstDraw  float64 `json:"mapFirstDrawMs" doc:"from opening the product to the whole plan drawn with availability"`
	DeltaApplyP50 float64 `json:"deltaApplyP50Ms"`
	DeltaApplyMax float64 `json:"deltaApplyMaxMs"`
	Deltas        int     `json:"deltas"`
}

// Store measures the store's budgets in headless Chromium (BOXOFFICE_CHROMIUM
// or a chromium on PATH): the bytes the home page transfers, the time the
// stadium's 60,000-seat plan takes to draw with its availability, and the
// time a delta from the live stream takes to reach the drawn map, while
// claims run.
func Store(ctx context.Context, pool *pgxpool.Pool, seats int, out io.Writer) (*StoreResult, error) {
	path := config.ChromiumPath()
	if path == "" {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		}
	}
	if path == "" {
		return nil, errors.New("store bench: no Chromium (infra/dev/chromium.sh installs one; make bench runs it)")
	}
	fmt.Fprintf(out, "store: budgets in headless Chromium (home page; the %d-seat plan; live deltas)\n", seats)
	logger := slog.New(slog.DiscardHandler)
	t, err := newTenant(ctx, pool, "store-")
	if err != nil {
		return nil, err
	}
	layout := StadiumLayout(seats)
	products := newProducts(pool)
	stadium, err := products.Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "stadium-" + uuid.NewString()[:8],
		Name: "Stadium", Kind: product.KindSeated, Capacity: layout.Number(), Layout: layout, PriceCents: 4500, Currency: "EUR"})
	if err != nil {
		return nil, err
	}
	for i := range 5 {
		if _, err := products.Create(ctx, product.CreateParams{TenantID: t.ID, Slug: fmt.Sprintf("show-%d-%s", i, uuid.NewString()[:6]),
			Name: fmt.Sprintf("Show %d", i+1), Description: "An evening of numbered seats.", Kind: product.KindNumbered,
			Capacity: 5000, PriceCents: 2500, Currency: "EUR"}); err != nil {
			return nil, err
		}
	}

	s3srv, err := devs3.Start()
	if err != nil {
		return nil, err
	}
	defer s3srv.Close()
	client, err := storefront.NewS3(ctx, s3srv.URL, "us-east-1", s3srv.Provider())
	if err != nil {
		return nil, err
	}
	bucket := storefront.Bucket{Client: client, Name: "stores"}
	if err := bucket.Ensure(ctx); err != nil {
		return nil, err
	}
	// The store on an origin of its own, calling the API's, as in
	// production.
	a, err := build(ctx, pool, logger, app.Options{}, func(c *config.Config) { c.DevOrigins = true })
	if err != nil {
		return nil, err
	}
	_, base, stop, err := serve(ctx, a)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := (&storefront.Publisher{Tenants: a.Tenants, Bucket: bucket, APIBase: base}).Publish(ctx, t.Slug); err != nil {
		return nil, err
	}
	stores := httptest.NewServer(&storefront.Server{Bucket: bucket})
	defer stores.Close()
	store := stores.URL + "/s/" + t.Slug + "/"

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	res := &StoreResult{MapSeats: layout.Number()}

	// Home: every byte the page and what it loads transferred.
	if err := chromedp.Do(bctx, chromedp.Navigate(store), chromedp.WaitVisible(chromedp.CSS(`ul.cards`))); err != nil {
		return nil, err
	}
	if res.HomeBytes, err = chromedp.Run(bctx, chromedp.Evaluate[int64](
		`performance.getEntries().filter(e => 'transferSize' in e).reduce((n, e) => n + e.transferSize, 0)`)); err != nil {
		return nil, err
	}

	// The stadium: first full draw, then deltas as claims commit.
	if err := chromedp.Do(bctx, chromedp.Navigate(store+"#/p/"+stadium.ID.String()),
		chromedp.Poll[chromedp.Void](`window.__seatMap && window.__seatMap.timing.firstDrawMs !== null`,
			chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		return nil, err
	}
	if res.MapFirstDraw, err = chromedp.Run(bctx, chromedp.Evaluate[float64](`window.__seatMap.timing.firstDrawMs`)); err != nil {
		return nil, err
	}
	for i := range 10 {
		reqs := make([]reservation.Queued, 100)
		for j := range reqs {
			reqs[j] = reservation.Queued{BuyerID: fmt.Sprintf("s%d-%d", i, j), Quantity: 2, Mode: reservation.ModeBest}
		}
		if _, err := reservation.ImportQueued(ctx, pool, t.ID, stadium.ID, reqs); err != nil {
			return nil, err
		}
		if _, err := a.Claimer.ClaimBatch(ctx, stadium.ID, len(reqs)); err != nil {
			return nil, err
		}
		time.Sleep(1200 * time.Millisecond) // one delta a second
	}
	deltas, err := chromedp.Run(bctx, chromedp.Evaluate[[]float64](`window.__seatMap.timing.deltaMs`))
	if err != nil {
		return nil, err
	}
	if len(deltas) == 0 {
		return nil, errors.New("store bench: no delta reached the map")
	}
	res.Deltas = len(deltas)
	sorted := slices.Sorted(slices.Values(deltas))
	res.DeltaApplyP50, res.DeltaApplyMax = sorted[len(sorted)/2], sorted[len(sorted)-1]
	fmt.Fprintf(out, "  home page: %d bytes transferred (budget 100 KB: %s)\n", res.HomeBytes, within(float64(res.HomeBytes), 100_000))
	fmt.Fprintf(out, "  %d-seat plan drawn with its availability in %.0f ms (budget 1,500 ms: %s)\n", res.MapSeats, res.MapFirstDraw,
		within(res.MapFirstDraw, 1500))
	fmt.Fprintf(out, "  live delta to redrawn map: p50 %.1f ms, max %.1f ms over %d deltas (budget 100 ms: %s)\n",
		res.DeltaApplyP50, res.DeltaApplyMax, res.Deltas, within(res.DeltaApplyMax, 100))
	return res, nil
}

// within says whether a figure kept its budget, for the report's reader.
func within(v, budget float64) string {
	if v <= budget {
		return "kept"
	}
	return "OVER BUDGET"
}
