// Package bench holds the benchmark scenarios `boxoffice bench` runs. Each
// prints its figures beside a baseline measured in the same run, because
// absolute times on shared machines drift.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/config"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/sqsqueue"
)

// ClaimConfig sizes the drain benchmark.
type ClaimConfig struct {
	Seats     int // seats of the product (default 60,000)
	Requests  int // queued requests of 2 seats each (default 30,000)
	BatchSize int // claim batch size of the batched run (default 1000)
	Workers   int // River claim workers (default 8)
	// Baseline runs the batch-size-1 comparison. Default true via the CLI.
	Baseline bool
	// SQSEndpoint, when set, adds a drain through SQS (the emulator at this
	// endpoint) with the same batch size.
	SQSEndpoint string
}

// ClaimRun is one drain.
type ClaimRun struct {
	BatchSize     int           `json:"batchSize"`
	Requests      int           `json:"requests"`
	Numbers       int           `json:"numbers"`
	Duration      time.Duration `json:"duration"`
	NumbersPerSec float64       `json:"numbersPerSec"`
	Violations    int           `json:"violations"`
}

// ClaimResult is the drain benchmark's outcome.
type ClaimResult struct {
	Batched   ClaimRun  `json:"batched"`
	Unbatched *ClaimRun `json:"unbatched,omitempty"`
	Ratio     float64   `json:"ratio,omitempty"`
	// SQS drains the same requests through SQS; SQSRatio is SQS ÷ River.
	SQS      *ClaimRun `json:"sqs,omitempty"`
	SQSRatio float64   `json:"sqsRatio,omitempty"`
}

// Claim runs the drain benchmark in pool's schema (already migrated):
// requests are queued up front, then River's claim worker drains them, once
// with the configured batch size and once with batch size 1.
func Claim(ctx context.Context, pool *pgxpool.Pool, c ClaimConfig, out io.Writer) (*ClaimResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := newTenant(ctx, pool, "bench-")
	if err != nil {
		return nil, err
	}
	res := &ClaimResult{}
	fmt.Fprintf(out, "claim: %d seats, %d queued requests of 2 seats, %d workers\n", c.Seats, c.Requests, c.Workers)
	run := func(batch int, via string) (*ClaimRun, error) {
		r, err := drainOnce(ctx, pool, t.ID, c, batch, via, logger)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "  %-5s batch %4d: %6d numbers in %8.3fs = %9.0f numbers/s (violations %d)\n",
			via, batch, r.Numbers, r.Duration.Seconds(), r.NumbersPerSec, r.Violations)
		return r, nil
	}
	batched, err := run(c.BatchSize, "river")
	if err != nil {
		return nil, err
	}
	res.Batched = *batched
	if c.Baseline {
		if res.Unbatched, err = run(1, "river"); err != nil {
			return nil, err
		}
		res.Ratio = res.Batched.NumbersPerSec / res.Unbatched.NumbersPerSec
		fmt.Fprintf(out, "  ratio batched/unbatched: %.1fx\n", res.Ratio)
	}
	if c.SQSEndpoint != "" {
		if res.SQS, err = run(c.BatchSize, "sqs"); err != nil {
			return nil, err
		}
		res.SQSRatio = res.SQS.NumbersPerSec / res.Batched.NumbersPerSec
		fmt.Fprintf(out, "  ratio sqs/river (batch %d): %.2fx\n", c.BatchSize, res.SQSRatio)
	}
	return res, nil
}

// StadiumLayout is sections of 30 rows of 100 seats adding up to seats
// (a multiple of 3,000).
func StadiumLayout(seats int) *product.Layout {
	l := &product.Layout{}
	for s := 0; s < seats/3000; s++ {
		sec := product.Section{Name: fmt.Sprintf("S%02d", s+1)}
		for r := 1; r <= 30; r++ {
			sec.Rows = append(sec.Rows, product.Row{Name: fmt.Sprint(r), Seats: 100})
		}
		l.Sections = append(l.Sections, sec)
	}
	return l
}

func drainOnce(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, c ClaimConfig, batch int, via string, logger *slog.Logger) (*ClaimRun, error) {
	layout := StadiumLayout(c.Seats)
	p, err := newProducts(pool).Create(ctx, product.CreateParams{
		TenantID: tenantID, Slug: "claim-" + uuid.NewString()[:8], Name: "Claim bench", Kind: product.KindSeated,
		Capacity: layout.Number(), Layout: layout, PriceCents: 1000, Currency: "EUR",
	})
	if err != nil {
		return nil, err
	}
	refs, err := queueRequests(ctx, pool, p, c.Requests)
	if err != nil {
		return nil, err
	}
	var start time.Time
	if via == "sqs" {
		stop, err := startSQSDrain(ctx, pool, c, batch, refs, logger)
		if err != nil {
			return nil, err
		}
		defer stop()
		start = time.Now()
	} else {
		stop, err := startRiverDrain(ctx, pool, c, batch, p.ID, logger)
		if err != nil {
			return nil, err
		}
		defer stop()
		start = time.Now()
	}
	if err := waitDrained(ctx, pool, p.ID); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)

	r := &ClaimRun{BatchSize: batch, Requests: c.Requests, Duration: elapsed}
	if err := pool.QueryRow(ctx, `SELECT held + sold FROM inventory WHERE product_id = $1`, p.ID).Scan(&r.Numbers); err != nil {
		return nil, err
	}
	r.NumbersPerSec = float64(r.Numbers) / elapsed.Seconds()
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		v, err := reservation.Audit(ctx, tx, p.ID)
		r.Violations = len(v)
		return err
	})
	return r, err
}

// startRiverDrain starts River's claim worker and enqueues the product's
// claim job: the clock starts with the job.
func startRiverDrain(ctx context.Context, pool *pgxpool.Pool, c ClaimConfig, batch int, productID uuid.UUID, logger *slog.Logger) (stop func(), err error) {
	a, err := build(ctx, pool, logger, app.Options{Work: true}, func(cfg *config.Config) {
		cfg.Workers, cfg.ClaimBatchSize = c.Workers, batch
	})
	if err != nil {
		return nil, err
	}
	client := a.River
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	stop = func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}
	if _, err := client.Insert(ctx, reservation.ClaimArgs{ProductID: productID}, nil); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// startSQSDrain publishes every request to a fresh queue first (the
// requests are "already queued"), then starts the consumer: the clock
// starts with the consumer.
func startSQSDrain(ctx context.Context, pool *pgxpool.Pool, c ClaimConfig, batch int, refs []reservation.Ref, logger *slog.Logger) (stop func(), err error) {
	client, err := sqsqueue.NewClient(ctx, c.SQSEndpoint, "us-east-1")
	if err != nil {
		return nil, err
	}
	mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "bench-"+uuid.NewString()[:8], 5, 30*time.Second)
	if err != nil {
		return nil, err
	}
	a, err := build(ctx, pool, logger, app.Options{Work: true}, func(cfg *config.Config) {
		cfg.QueueBackend, cfg.SQSEndpoint, cfg.SQSRegion = "sqs", c.SQSEndpoint, "us-east-1"
		cfg.SQSQueueURL, cfg.SQSDLQURL, cfg.SQSWaitTime, cfg.SQSPollers = mainURL, dlqURL, time.Second, 8
		cfg.Workers, cfg.ClaimBatchSize = c.Workers, batch
	})
	if err != nil {
		return nil, err
	}
	pubCtx, cancelPub := context.WithCancel(ctx)
	pub := a.Publisher
	pub.Start(pubCtx)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(refs); i += 16 {
				if err := pub.Publish(ctx, refs[i:i+1]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	cancelPub()
	pub.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("publish bench requests: %w", err)
	}
	consumerCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Consumer.Run(consumerCtx) }()
	return func() { cancel(); <-done }, nil
}

// waitDrained polls until the product has no QUEUED request.
func waitDrained(ctx context.Context, pool *pgxpool.Pool, productID uuid.UUID) error {
	for {
		var queued int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`,
			productID).Scan(&queued); err != nil {
			return err
		}
		if queued == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// queueRequests records n QUEUED best-available requests of 2 seats from n
// buyers, as the API would have, without enqueuing them: the benchmark
// starts the drain itself.
func queueRequests(ctx context.Context, pool *pgxpool.Pool, p *product.Product, n int) ([]reservation.Ref, error) {
	reqs := make([]reservation.Queued, n)
	for i := range reqs {
		reqs[i] = reservation.Queued{BuyerID: fmt.Sprintf("buyer-%d", i), Quantity: 2, Mode: reservation.ModeBest}
	}
	refs, err := reservation.ImportQueued(ctx, pool, p.TenantID, p.ID, reqs)
	if err != nil {
		return nil, fmt.Errorf("queue bench requests: %w", err)
	}
	return refs, nil
}

// startSimulator runs the payment simulator on a loopback port.
func startSimulator(latency time.Duration) (sim *pspsim.Server, url string, stop func()) {
	sim = pspsim.New(pspsim.Config{Latency: latency})
	srv := httptest.NewServer(sim.Handler())
	return sim, srv.URL, func() { srv.Close(); sim.Close() }
}
