package bench

import (
	"bytes"
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
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/product"
	"boxoffice/internal/tenant"
)

// HTTPAcceptConfig sizes the accept benchmark.
type HTTPAcceptConfig struct {
	Concurrency []int         // connection counts to step through (default 16, 64, 256)
	Duration    time.Duration // per step (default 3s)
	Linger      time.Duration // accept micro-batching linger of the batched mode (default 1ms)
	// Transactions bounds the batched mode's accept transactions at once
	// (BOXOFFICE_ACCEPT_TRANSACTIONS; 0 is no limit).
	Transactions int
}

// HTTPAcceptStep is one concurrency level of one mode.
type HTTPAcceptStep struct {
	Mode        string        `json:"mode"`
	Concurrency int           `json:"concurrency"`
	Accepted    int64         `json:"accepted"`
	Errors      int64         `json:"errors"`
	PerSec      float64       `json:"perSec"`
	P50         time.Duration `json:"p50"`
	P99         time.Duration `json:"p99"`
	P999        time.Duration `json:"p999"`
}

// HTTPAccept drives POST /v1/products/{id}/reservations over loopback HTTP
// at rising concurrency, with accept micro-batching and with one
// transaction per request, and prints accepted requests per second and
// latency percentiles. The load generator shares the machine's cores.
func HTTPAccept(ctx context.Context, pool *pgxpool.Pool, c HTTPAcceptConfig, out io.Writer) ([]HTTPAcceptStep, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := newTenant(ctx, pool, "accept-http-")
	if err != nil {
		return nil, err
	}
	p, err := newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "ah-" + uuid.NewString()[:8],
		Name: "Accept bench", Kind: product.KindNumbered, Capacity: 10_000_000, PriceCents: 100, Currency: "EUR"})
	if err != nil {
		return nil, err
	}
	maxC := slices.Max(c.Concurrency)
	tokens := make([]string, maxC)
	for i := range tokens {
		if tokens[i], err = tenant.SignBuyerToken([]byte(t.BuyerTokenSecret), t.ID, fmt.Sprintf("b%d", i), time.Hour); err != nil {
			return nil, err
		}
	}
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxC, MaxConnsPerHost: maxC}, Timeout: 10 * time.Second}
	defer httpClient.CloseIdleConnections()
	body := []byte(`{"quantity":1}`)
	var seq atomic.Int64

	fmt.Fprintf(out, "accept: POST reservations over loopback HTTP, %s per step\n", c.Duration)
	var steps []HTTPAcceptStep
	for _, mode := range []string{"batched", "one-tx"} {
		// An API of its own for each mode, as a process configured so would
		// be; without workers: the benchmark measures accepting, not
		// claiming.
		linger := map[string]time.Duration{"batched": c.Linger, "one-tx": 0}[mode]
		a, err := build(ctx, pool, logger, app.Options{}, func(cfg *config.Config) {
			cfg.AcceptLinger, cfg.AcceptTransactions = linger, c.Transactions
		})
		if err != nil {
			return nil, err
		}
		_, base, stop, err := serve(ctx, a)
		if err != nil {
			return nil, err
		}
		url := base + "/v1/products/" + p.ID.String() + "/reservations"
		for _, conc := range c.Concurrency {
			st := HTTPAcceptStep{Mode: mode, Concurrency: conc}
			var mu sync.Mutex
			var lat []time.Duration
			var accepted, errs atomic.Int64
			deadline := time.Now().Add(c.Duration)
			var wg sync.WaitGroup
			start := time.Now()
			for w := range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for time.Now().Before(deadline) {
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Authorization", "Bearer "+tokens[w])
						req.Header.Set("Idempotency-Key", fmt.Sprint(seq.Add(1)))
						t0 := time.Now()
						resp, err := httpClient.Do(req)
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							_ = resp.Body.Close()
						}
						// 201: recorded and refused at once.
						if err != nil || (resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusCreated) {
							errs.Add(1)
							continue
						}
						mine = append(mine, time.Since(t0))
						accepted.Add(1)
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			st.Accepted, st.Errors = accepted.Load(), errs.Load()
			st.PerSec = float64(st.Accepted) / time.Since(start).Seconds()
			if len(lat) > 0 {
				slices.Sort(lat)
				st.P50, st.P99, st.P999 = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)*999/1000]
			}
			fmt.Fprintf(out, "  %-7s %3d conns: %7.0f accepted/s  p50 %6.2fms  p99 %6.2fms  p999 %6.2fms  errors %d\n",
				mode, conc, st.PerSec, ms(st.P50), ms(st.P99), ms(st.P999), st.Errors)
			steps = append(steps, st)
		}
		stop()
	}
	best := func(mode string) float64 {
		v := 0.0
		for _, s := range steps {
			if s.Mode == mode {
				v = max(v, s.PerSec)
			}
		}
		return v
	}
	fmt.Fprintf(out, "  ratio batched/one-tx (best of each): %.2fx\n", best("batched")/best("one-tx"))
	return steps, nil
}
