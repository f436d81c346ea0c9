package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
)

// AcceptConfig sizes the SQS accept benchmark.
type AcceptConfig struct {
	Requests    int    // reservation requests accepted per run (default 5,000)
	Concurrency int    // concurrent callers (default 64)
	SQSEndpoint string // the SQS emulator
}

// AcceptRun is one accept run.
type AcceptRun struct {
	Mode       string        `json:"mode"`
	Requests   int           `json:"requests"`
	Errors     int           `json:"errors"`
	Duration   time.Duration `json:"duration"`
	PerSec     float64       `json:"perSec"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Unenqueued int           `json:"unenqueued" doc:"requests left for the repair job"`
}

// AcceptResult compares SendMessageBatch with one SendMessage per request.
type AcceptResult struct {
	Batched AcceptRun `json:"batched"`
	Single  AcceptRun `json:"single"`
	Ratio   float64   `json:"ratio"`
}

// SQSAccept measures the accept path with the SQS backend — record the
// request, commit, publish, mark published — at the given concurrency, with
// the publisher coalescing into SendMessageBatch calls and, in the same run,
// with one SendMessage call per request.
func SQSAccept(ctx context.Context, pool *pgxpool.Pool, c AcceptConfig, out io.Writer) (*AcceptResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := newTenant(ctx, pool, "accept-")
	if err != nil {
		return nil, err
	}
	client, err := sqsqueue.NewClient(ctx, c.SQSEndpoint, "us-east-1")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "sqs-accept: %d requests, %d concurrent callers, service level (no HTTP)\n", c.Requests, c.Concurrency)
	run := func(batch bool) (*AcceptRun, error) {
		mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "accept-"+uuid.NewString()[:8], 5, 30*time.Second)
		if err != nil {
			return nil, err
		}
		p, err := newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "a-" + uuid.NewString()[:8],
			Name: "Accept bench", Kind: product.KindNumbered, Capacity: c.Requests, PriceCents: 100, Currency: "EUR"})
		if err != nil {
			return nil, err
		}
		a, err := build(ctx, pool, logger, app.Options{}, func(cfg *config.Config) {
			cfg.QueueBackend, cfg.SQSEndpoint, cfg.SQSRegion = "sqs", c.SQSEndpoint, "us-east-1"
			cfg.SQSQueueURL, cfg.SQSDLQURL = mainURL, dlqURL
		})
		if err != nil {
			return nil, err
		}
		pubCtx, cancel := context.WithCancel(ctx)
		pub, svc := a.Publisher, a.Reservations
		pub.Batch = batch
		pub.Start(pubCtx)
		defer func() { cancel(); pub.Wait() }()

		r := &AcceptRun{Mode: map[bool]string{true: "SendMessageBatch", false: "SendMessage"}[batch], Requests: c.Requests}
		lat := make([]time.Duration, c.Requests)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for w := range c.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < c.Requests; i += c.Concurrency {
					t0 := time.Now()
					_, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: fmt.Sprintf("b%d", i),
						IdempotencyKey: p.ID.String(), Params: reservation.Params{Quantity: 1}})
					lat[i] = time.Since(t0)
					if err != nil {
						mu.Lock()
						r.Errors++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		r.Duration = time.Since(start)
		r.PerSec = float64(c.Requests) / r.Duration.Seconds()
		slices.Sort(lat)
		r.P50, r.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND enqueued_at IS NULL`,
			p.ID).Scan(&r.Unenqueued); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "  %-16s %6d accepted in %7.3fs = %8.0f/s  p50 %6.2fms  p99 %6.2fms  errors %d  unpublished %d\n",
			r.Mode, c.Requests, r.Duration.Seconds(), r.PerSec, ms(r.P50), ms(r.P99), r.Errors, r.Unenqueued)
		return r, nil
	}
	batched, err := run(true)
	if err != nil {
		return nil, err
	}
	single, err := run(false)
	if err != nil {
		return nil, err
	}
	res := &AcceptResult{Batched: *batched, Single: *single, Ratio: batched.PerSec / single.PerSec}
	fmt.Fprintf(out, "  ratio batched/single: %.2fx\n", res.Ratio)
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
