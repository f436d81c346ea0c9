// Package bench holds the benchmark scenarios `boxoffice bench` runs. Each
// prints its figures beside a baseline measured in the same run, because
// absolute times on shared machines drift.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/jobs"
	"boxoffice/workers"
)

// ClaimConfig sizes the drain benchmark.
type ClaimConfig struct {
	Seats     int // seats of the product (default 60,000)
	Requests  int // queued requests of 2 seats each (default 30,000)
	BatchSize int // claim batch size of the batched run (default 1000)
	Workers   int // River claim workers (default 8)
	// Baseline runs the batch-size-1 comparison. Default true via the CLI.
	Baseline bool
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
}

// Claim runs the drain benchmark in pool's schema (already migrated):
// requests are queued up front, then River's claim worker drains them, once
// with the configured batch size and once with batch size 1.
func Claim(ctx context.Context, pool *pgxpool.Pool, schema string, c ClaimConfig, out io.Writer) (*ClaimResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	t, err := tenant.NewStore(pool).Create(ctx, tenant.CreateParams{Slug: "bench-" + uuid.NewString()[:8], Name: "Bench"})
	if err != nil {
		return nil, err
	}
	res := &ClaimResult{}
	fmt.Fprintf(out, "claim: %d seats, %d queued requests of 2 seats, %d workers\n", c.Seats, c.Requests, c.Workers)
	run := func(batch int) (*ClaimRun, error) {
		r, err := drainOnce(ctx, pool, schema, t.ID, c, batch, logger)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "  batch %4d: %6d numbers in %8.3fs = %9.0f numbers/s (violations %d)\n",
			batch, r.Numbers, r.Duration.Seconds(), r.NumbersPerSec, r.Violations)
		return r, nil
	}
	batched, err := run(c.BatchSize)
	if err != nil {
		return nil, err
	}
	res.Batched = *batched
	if c.Baseline {
		if res.Unbatched, err = run(1); err != nil {
			return nil, err
		}
		res.Ratio = res.Batched.NumbersPerSec / res.Unbatched.NumbersPerSec
		fmt.Fprintf(out, "  ratio batched/unbatched: %.1fx\n", res.Ratio)
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

func drainOnce(ctx context.Context, pool *pgxpool.Pool, schema string, tenantID uuid.UUID, c ClaimConfig, batch int, logger *slog.Logger) (*ClaimRun, error) {
	layout := StadiumLayout(c.Seats)
	p, err := product.NewStore(pool).Create(ctx, product.CreateParams{
		TenantID: tenantID, Slug: "claim-" + uuid.NewString()[:8], Name: "Claim bench", Kind: product.KindSeated,
		Capacity: layout.Number(), Layout: layout, PriceCents: 1000, Currency: "EUR",
	})
	if err != nil {
		return nil, err
	}
	if err := queueRequests(ctx, pool, p, c.Requests); err != nil {
		return nil, err
	}

	claimer := reservation.NewClaimer(pool, logger, nil)
	client, err := workers.NewRiverClient(pool, workers.RiverOptions{
		Work: true, Workers: c.Workers, BatchSize: batch, Schema: schema,
		Jobs:    jobs.Config{SweepInterval: time.Hour, AuditInterval: time.Hour, RepairInterval: time.Hour, RepublishAfter: time.Hour, RedeliveryWindow: time.Hour},
		Claimer: claimer, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	start := time.Now()
	if _, err := client.Insert(ctx, reservation.ClaimArgs{ProductID: p.ID}, nil); err != nil {
		return nil, err
	}
	for {
		var queued int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`,
			p.ID).Scan(&queued); err != nil {
			return nil, err
		}
		if queued == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)

	r := &ClaimRun{BatchSize: batch, Requests: c.Requests, Duration: elapsed}
	if err := pool.QueryRow(ctx, `SELECT held + sold FROM inventory WHERE product_id = $1`, p.ID).Scan(&r.Numbers); err != nil {
		return nil, err
	}
	r.NumbersPerSec = float64(r.Numbers) / elapsed.Seconds()
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		v, err := inventory.Audit(ctx, tx, p.ID)
		r.Violations = len(v)
		return err
	})
	return r, err
}

// queueRequests records n QUEUED best-available requests of 2 seats from n
// buyers, as the API would have, without enqueuing jobs: the benchmark
// starts the drain itself.
func queueRequests(ctx context.Context, pool *pgxpool.Pool, p *product.Product, n int) error {
	rows := make([][]any, n)
	base := time.Now().Add(-time.Minute)
	for i := range rows {
		rows[i] = []any{db.NewID(), p.TenantID, p.ID, fmt.Sprintf("buyer-%d", i), uuid.NewString(),
			[]byte{0}, int32(2), reservation.ModeBest, base.Add(time.Duration(i) * time.Microsecond)}
	}
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"reservation_requests"},
		[]string{"id", "tenant_id", "product_id", "buyer_id", "idempotency_key", "request_hash", "quantity", "mode", "created_at"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("queue bench requests: %w", err)
	}
	return nil
}
