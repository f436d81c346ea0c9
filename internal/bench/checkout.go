package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/checkout"
	"boxoffice/internal/config"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
)

// CheckoutConfig sizes the checkout benchmark.
type CheckoutConfig struct {
	Orders         int           // orders paid (default 400)
	Latency        time.Duration // simulator latency per call (default 2s)
	PaymentWorkers int           // provider calls in flight at most (default 200)
}

// CheckoutResult is the checkout benchmark's outcome.
type CheckoutResult struct {
	Orders           int           `json:"orders"`
	Confirmed        int           `json:"confirmed"`
	ConfirmDuration  time.Duration `json:"confirmDuration"`
	ConfirmedPerSec  float64       `json:"confirmedPerSec"`
	CapturedDuration time.Duration `json:"capturedDuration"`
	MeanInFlight     float64       `json:"meanInFlight" doc:"provider calls in flight, sampled"`
	CallsPerSec      float64       `json:"callsPerSec"`
	LittlesLaw       float64       `json:"littlesLaw" doc:"calls/s × latency: what mean in flight should be"`
}

// Checkout pays for Orders holds at once through the simulator with Latency
// per call and measures confirmed orders per second and the provider calls
// in flight, which Little's law predicts as call rate × latency.
func Checkout(ctx context.Context, pool *pgxpool.Pool, c CheckoutConfig, out io.Writer) (*CheckoutResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sim, simURL, stopSim := startSimulator(c.Latency)
	defer stopSim()

	t, err := newTenant(ctx, pool, "checkout-")
	if err != nil {
		return nil, err
	}
	p, err := newProducts(pool).Create(ctx, product.CreateParams{TenantID: t.ID, Slug: "c-" + uuid.NewString()[:8],
		Name: "Checkout bench", Kind: product.KindNumbered, Capacity: 2 * c.Orders, PriceCents: 1000, Currency: "EUR"})
	if err != nil {
		return nil, err
	}
	a, err := build(ctx, pool, logger, app.Options{Work: true, Provider: payment.NewSim(simURL, c.Latency+10*time.Second)},
		func(cfg *config.Config) { cfg.Workers, cfg.PaymentWorkers = 2, c.PaymentWorkers })
	if err != nil {
		return nil, err
	}
	claimer, co, client, svc := a.Claimer, a.Checkout, a.River, a.Reservations

	// Holds first, directly through the claimer.
	var reqs []uuid.UUID
	for i := range c.Orders {
		acc, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: fmt.Sprintf("b%d", i),
			IdempotencyKey: "h", Params: reservation.Params{Quantity: 2}})
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, acc.Request.ID)
	}
	if _, err := claimer.ClaimBatch(ctx, p.ID, c.Orders); err != nil {
		return nil, err
	}
	holds := make([]uuid.UUID, len(reqs))
	for i, id := range reqs {
		r, err := svc.Get(ctx, t.ID, id, "")
		if err != nil || r.HoldID == nil {
			return nil, fmt.Errorf("bench hold %d: %w", i, err)
		}
		holds[i] = *r.HoldID
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	fmt.Fprintf(out, "checkout: %d orders, simulator latency %s per call, %d payment workers\n", c.Orders, c.Latency, c.PaymentWorkers)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, c.Orders)
	for i, h := range holds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := co.Create(ctx, checkout.CreateParams{TenantID: t.ID, BuyerID: fmt.Sprintf("b%d", i),
				IdempotencyKey: "o", HoldID: h, PaymentMethod: pspsim.MethodOK})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}

	res := &CheckoutResult{Orders: c.Orders}
	var samples, sum int64
	for {
		samples++
		sum += sim.InFlight()
		var confirmed, captured int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'CONFIRMED'), count(*) FILTER (WHERE capture_status = 'CAPTURED')
			FROM orders WHERE product_id = $1`, p.ID).Scan(&confirmed, &captured); err != nil {
			return nil, err
		}
		if confirmed == c.Orders && res.ConfirmDuration == 0 {
			res.ConfirmDuration = time.Since(start)
		}
		if captured == c.Orders {
			res.CapturedDuration, res.Confirmed = time.Since(start), confirmed
			break
		}
		if time.Since(start) > 10*time.Minute {
			return nil, fmt.Errorf("checkout bench: %d of %d captured after 10 minutes", captured, c.Orders)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.ConfirmedPerSec = float64(c.Orders) / res.ConfirmDuration.Seconds()
	res.MeanInFlight = float64(sum) / float64(samples)
	res.CallsPerSec = float64(2*c.Orders) / res.CapturedDuration.Seconds() // authorize + capture
	res.LittlesLaw = res.CallsPerSec * c.Latency.Seconds()
	fmt.Fprintf(out, "  %d orders confirmed in %.2fs = %.0f orders/s; all captured in %.2fs\n",
		res.Confirmed, res.ConfirmDuration.Seconds(), res.ConfirmedPerSec, res.CapturedDuration.Seconds())
	fmt.Fprintf(out, "  provider calls in flight: mean %.0f sampled; Little's law %.0f calls/s × %s = %.0f\n",
		res.MeanInFlight, res.CallsPerSec, c.Latency, res.LittlesLaw)
	return res, nil
}
