package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/app"
	"boxoffice/internal/checkout"
	"boxoffice/internal/config"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/waitingroom"
)

// OnsaleConfig sizes the stadium on-sale, or the raffle's.
type OnsaleConfig struct {
	// Raffle, when set, sells a numbered raffle of this many numbers whose
	// buyers ask numbers of their choosing (random) instead of the stadium.
	Raffle         int
	PayShare       float64       // share of holders who pay (default 0.6)
	Seats          int           // multiple of 3,000 (default 60,000)
	Buyers         int           // default 200,000
	JoinOver       time.Duration // arrivals spread over this (default 60s)
	PreOpenShare   float64       // share that arrives before opening (default 0.3)
	ActiveShoppers int           // L (default 2,000)
	ShoppingSecs   int           // W (default 10)
	PSPLatency     time.Duration // default 2s
	PaymentWorkers int           // provider calls in flight at most
	Deadline       time.Duration // stop after (default 5m)
}

// OnsaleResult is what the on-sale reports.
type OnsaleResult struct {
	SellOut       time.Duration `json:"sellOut" doc:"from opening until no number was available (0: not sold out)"`
	Accepted      int64         `json:"accepted"`
	AcceptP99     time.Duration `json:"acceptP99"`
	Held          int64         `json:"held"`
	Rejected      int64         `json:"rejected"`
	SeatTaken     int64         `json:"seatTaken"`
	ConflictRate  float64       `json:"conflictRate" doc:"SEAT_TAKEN share of explicit picks"`
	OrdersConfirm int64         `json:"ordersConfirmed"`
	HoldsExpired  int64         `json:"holdsExpired"`
	Oversold      int64         `json:"oversold" doc:"numbers in more than one confirmed order or held twice: must be 0"`
	Violations    int           `json:"violations"`
	PeakRSSKiB    int64         `json:"peakRssKiB"`
	MaxDBConns    int32         `json:"maxDbConns"`
	ClaimsPerSec  float64       `json:"claimNumbersPerSec" doc:"numbers claimed ÷ time from opening to the last claim"`
	AcceptsPerSec float64       `json:"acceptsPerSec"`
	CutShort      *Unfinished   `json:"cutShort,omitempty" doc:"where the deadline found the buyers still at it"`
	Timeline      []Sample      `json:"timeline"`
}

// Unfinished counts the buyers still at each step when the deadline came.
type Unfinished struct {
	InRoom   int64 `json:"inRoom" doc:"in the waiting room"`
	Deciding int64 `json:"deciding" doc:"reserving: accepted or not yet, the decision not learnt"`
	Paying   int64 `json:"paying" doc:"the order's payment not settled"`
}

// Sample is the state once a second.
type Sample struct {
	Second    int   `json:"s"`
	Available int   `json:"available"`
	Queued    int64 `json:"queued"`
	Admitted  int64 `json:"admitted"`
}

// Onsale plays a stadium on-sale scaled to one machine, at the service
// level: buyers join the waiting room (a share before opening), poll,
// and once admitted reserve two seats (70 % best available, 30 % explicit
// picks in the front sections, so conflicts are real); 60 % of those holding
// seats pay through the simulator (2 s per call, a few declines and
// timeouts). At the end the database is checked for oversold numbers.
func Onsale(ctx context.Context, pool *pgxpool.Pool, c OnsaleConfig, out io.Writer) (*OnsaleResult, error) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, simURL, stopSim := startSimulator(c.PSPLatency)
	defer stopSim()

	t, err := newTenant(ctx, pool, "onsale-")
	if err != nil {
		return nil, err
	}
	openAt := time.Now().Add(3 * time.Second)
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: c.ActiveShoppers, ShoppingSeconds: c.ShoppingSecs}
	var layout *product.Layout
	params := product.CreateParams{TenantID: t.ID, Slug: "raffle-" + uuid.NewString()[:8], Name: "Grand raffle",
		Kind: product.KindNumbered, Capacity: c.Raffle, PriceCents: 500, Currency: "EUR", PerBuyerLimit: 6,
		OnSaleAt: openAt, WaitingRoom: room}
	if c.Raffle == 0 {
		layout = StadiumLayout(c.Seats)
		params = product.CreateParams{TenantID: t.ID, Slug: "stadium-" + uuid.NewString()[:8],
			Name: "Stadium night", Kind: product.KindSeated, Capacity: layout.Number(), Layout: layout, PriceCents: 9000,
			Currency: "EUR", PerBuyerLimit: 2, OnSaleAt: openAt, WaitingRoom: room}
	}
	p, err := newProducts(pool).Create(ctx, params)
	if err != nil {
		return nil, err
	}
	payShare := cmp.Or(c.PayShare, 0.6)
	a, err := build(ctx, pool, logger, app.Options{Work: true, Provider: payment.NewSim(simURL, c.PSPLatency+10*time.Second)},
		func(cfg *config.Config) {
			cfg.Workers, cfg.PaymentWorkers = 4, c.PaymentWorkers
			cfg.SweepInterval, cfg.RepublishAfter, cfg.RequeueAfter = 2*time.Second, 10*time.Second, time.Minute
			cfg.AccessTokenSecret, cfg.TicketSecret = "onsale", "onsale"
			cfg.AcceptLinger = time.Millisecond
		})
	if err != nil {
		return nil, err
	}
	co, rooms, client, svc := a.Checkout, a.Rooms, a.River, a.Reservations
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = client.Stop(stop)
	}()
	defer a.StartAdmission()() // as a work process runs it
	// The status and order reads' waiters, as the API process runs them.
	waiters, orderChanges := reservation.NewWaiters(pool, logger), checkout.NewWaiters(pool, logger)
	listening, stopListening := context.WithCancel(ctx)
	var listeners sync.WaitGroup
	listeners.Go(func() { waiters.Run(listening) })
	listeners.Go(func() { orderChanges.Run(listening) })
	defer func() { stopListening(); listeners.Wait() }()
	what := fmt.Sprintf("onsale: %d seats", c.Seats)
	if c.Raffle > 0 {
		what = fmt.Sprintf("raffle: %d numbers, each buyer asking 1 to 3 of their choosing,", c.Raffle)
	}
	fmt.Fprintf(out, "%s %d buyers over %s (%.0f%% before opening), L=%d W=%ds, %.0f%% of holders pay, %s per provider call\n",
		what, c.Buyers, c.JoinOver, 100*c.PreOpenShare, c.ActiveShoppers, c.ShoppingSecs, 100*payShare, c.PSPLatency)

	res := &OnsaleResult{}
	var accepted, held, rejected, seatTaken, explicit, confirmed atomic.Int64
	// Buyers at each step now, to say where a run cut short by its deadline
	// left them.
	var inRoom, deciding, paying atomic.Int64
	var latMu sync.Mutex
	var acceptLat []time.Duration
	var frontRows []product.Row
	if layout != nil {
		frontRows = layout.Rows()[:min(60, len(layout.Rows()))] // the first sections' rows
	}
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range c.Buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var at time.Time
			if float64(i) < c.PreOpenShare*float64(c.Buyers) {
				at = start.Add(time.Duration(rng.Int64N(int64(openAt.Sub(start)))))
			} else {
				at = openAt.Add(time.Duration(rng.Int64N(int64(c.JoinOver))))
			}
			sleepUntil(ctx, at)
			buyer := "buyer-" + strconv.Itoa(i)
			e, _, err := rooms.Join(ctx, t.ID, p.ID, buyer)
			if err != nil {
				return
			}
			qt := rooms.QueueToken(e)
			var step *atomic.Int64 // the gauge this buyer counts in
			move := func(to *atomic.Int64) {
				if step != nil {
					step.Add(-1)
				}
				if step = to; to != nil {
					to.Add(1)
				}
			}
			defer move(nil)
			move(&inRoom)
			for ctx.Err() == nil {
				st, err := rooms.Poll(ctx, qt)
				if err == nil && st.Status == waitingroom.StatusAdmitted {
					break
				}
				if err != nil || st.Status != waitingroom.StatusWaiting {
					return // sold out, expired, or the turn ended
				}
				// When the room says, as the store does.
				sleep(ctx, time.Duration(st.PollAfter*float64(time.Second)))
			}
			params := reservation.Params{Quantity: 2, Mode: reservation.ModeBest}
			if c.Raffle > 0 {
				// Lucky numbers: 1 to 3 of them, anywhere.
				params = reservation.Params{}
				for range 1 + rng.IntN(3) {
					if n := int32(1 + rng.IntN(c.Raffle)); !slices.Contains(params.Numbers, n) {
						params.Numbers = append(params.Numbers, n)
					}
				}
				explicit.Add(1)
			} else if rng.Float64() < 0.3 {
				row := frontRows[rng.IntN(len(frontRows))]
				first := int32(row.First + rng.IntN(row.Seats-1))
				params = reservation.Params{Numbers: []int32{first, first + 1}}
				explicit.Add(1)
			}
			move(&deciding)
			t0 := time.Now()
			acc, err := svc.Accept(ctx, reservation.AcceptParams{Product: p, BuyerID: buyer, IdempotencyKey: "1", Params: params})
			if err != nil {
				return
			}
			latMu.Lock()
			acceptLat = append(acceptLat, time.Since(t0))
			latMu.Unlock()
			accepted.Add(1)
			// As the store does: a read that waits for the decision, 200 ms
			// apart when this process could not wait.
			await := reservation.Await{ID: acc.Request.ID, Wait: 15 * time.Second,
				Read: func() (*reservation.Request, error) { return svc.Get(ctx, t.ID, acc.Request.ID, buyer) },
				Mine: func(o *reservation.Owned) bool { return o.VisibleTo(t.ID, buyer) }}
			r := settle(ctx, func() (*reservation.Request, bool, error) { return waiters.Await(ctx, await) },
				func(r *reservation.Request) bool { return r.Status != reservation.StatusQueued }, 200*time.Millisecond)
			if r == nil || r.Status != reservation.StatusHeld {
				rejected.Add(1)
				if r != nil && r.Reason == reservation.ReasonSeatTaken {
					seatTaken.Add(1)
				}
				_ = rooms.Leave(ctx, qt)
				return
			}
			held.Add(1)
			if rng.Float64() >= payShare {
				_ = rooms.Leave(ctx, qt)
				return
			}
			method := pspsim.MethodOK
			switch x := rng.Float64(); {
			case x < 0.05:
				method = pspsim.MethodDecline
			case x < 0.07:
				method = pspsim.MethodTimeoutAfterAuth
			}
			move(&paying)
			o, _, err := co.Create(ctx, checkout.CreateParams{TenantID: t.ID, BuyerID: buyer, IdempotencyKey: "1",
				HoldID: *r.HoldID, PaymentMethod: method})
			if err != nil {
				return
			}
			// As the store does: a read that waits for the payment's
			// outcome, 700 ms apart when this process could not wait.
			orderID := o.ID
			read := func() (*checkout.Order, error) { return co.Get(ctx, t.ID, orderID, buyer) }
			o = settle(ctx, func() (*checkout.Order, bool, error) {
				return checkout.AwaitOutcome(ctx, orderChanges, orderID, 15*time.Second, read, nil)
			}, func(o *checkout.Order) bool { return o.Status != checkout.StatusPending }, 700*time.Millisecond)
			if o != nil && o.Status == checkout.StatusConfirmed {
				confirmed.Add(1)
			}
			_ = rooms.Leave(ctx, qt)
		}()
	}

	// Once a second: availability, backlog, admitted.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastClaim time.Time
	var maxConns int32
sample:
	for {
		select {
		case <-done:
			break sample
		case <-ctx.Done():
			res.CutShort = &Unfinished{InRoom: inRoom.Load(), Deciding: deciding.Load(), Paying: paying.Load()}
			break sample
		case now := <-tick.C:
			var s Sample
			s.Second = int(now.Sub(openAt).Round(time.Second).Seconds())
			err := pool.QueryRow(ctx, `
				SELECT i.available, r.admitted_through,
				       (SELECT count(*) FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED')
				FROM inventory i, waiting_rooms r WHERE i.product_id = $1 AND r.product_id = $1`, p.ID).
				Scan(&s.Available, &s.Admitted, &s.Queued)
			if err != nil {
				continue // the deadline, most likely: no sample rather than a false sell-out
			}
			res.Timeline = append(res.Timeline, s)
			if s.Available == 0 && res.SellOut == 0 && now.After(openAt) {
				res.SellOut = now.Sub(openAt)
			}
			maxConns = max(maxConns, pool.Stat().AcquiredConns())
		}
	}
	_ = pool.QueryRow(context.WithoutCancel(ctx), `SELECT max(processed_at) FROM reservation_requests WHERE product_id = $1`, p.ID).Scan(&lastClaim)

	bg := context.WithoutCancel(ctx)
	res.Accepted, res.Held, res.Rejected, res.SeatTaken, res.OrdersConfirm = accepted.Load(), held.Load(), rejected.Load(), seatTaken.Load(), confirmed.Load()
	if n := explicit.Load(); n > 0 {
		res.ConflictRate = float64(res.SeatTaken) / float64(n)
	}
	slices.Sort(acceptLat)
	if len(acceptLat) > 0 {
		res.AcceptP99 = acceptLat[len(acceptLat)*99/100]
	}
	if d := lastClaim.Sub(openAt); d > 0 {
		var claimed int64
		_ = pool.QueryRow(bg, `SELECT held + sold FROM inventory WHERE product_id = $1`, p.ID).Scan(&claimed)
		res.ClaimsPerSec = float64(claimed) / d.Seconds()
		res.AcceptsPerSec = float64(res.Accepted) / d.Seconds()
	}
	_ = pool.QueryRow(bg, `SELECT count(*) FROM holds WHERE product_id = $1 AND state = 'EXPIRED'`, p.ID).Scan(&res.HoldsExpired)
	// Oversold: a number sold in two confirmed orders, or sold and held by another hold.
	_ = pool.QueryRow(bg, `
		SELECT count(*) FROM (
			SELECT n FROM orders o JOIN holds h ON h.id = o.hold_id, unnest(h.numbers) n
			WHERE o.product_id = $1 AND o.status = 'CONFIRMED' GROUP BY n HAVING count(*) > 1) x`, p.ID).Scan(&res.Oversold)
	err = pgx.BeginTxFunc(bg, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		v, err := reservation.Audit(bg, tx, p.ID)
		res.Violations = len(v)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.PeakRSSKiB = peakRSS()
	res.MaxDBConns = maxConns

	soldOut := "not sold out"
	if res.SellOut > 0 {
		soldOut = "sold out " + res.SellOut.Round(time.Second).String() + " after opening"
	}
	fmt.Fprintf(out, "  %s; accepted %d (%.0f/s, p99 %.1fms), held %d, rejected %d (seat taken %d, conflict rate %.0f%% of explicit picks)\n",
		soldOut, res.Accepted, res.AcceptsPerSec, ms(res.AcceptP99), res.Held, res.Rejected, res.SeatTaken, 100*res.ConflictRate)
	fmt.Fprintf(out, "  claims %.0f numbers/s; orders confirmed %d; holds expired %d; OVERSOLD %d; invariant violations %d\n",
		res.ClaimsPerSec, res.OrdersConfirm, res.HoldsExpired, res.Oversold, res.Violations)
	if u := res.CutShort; u != nil {
		fmt.Fprintf(out, "  cut short by the %s deadline: %d buyers in the room, %d reserving, %d paying\n",
			c.Deadline, u.InRoom, u.Deciding, u.Paying)
	}
	fmt.Fprintf(out, "  peak RSS %d MiB (benchmark and service in one process); database connections used at most %d\n",
		res.PeakRSSKiB/1024, res.MaxDBConns)
	if res.Oversold > 0 || res.Violations > 0 {
		return res, fmt.Errorf("onsale: oversold %d, violations %d", res.Oversold, res.Violations)
	}
	return res, nil
}

// settle repeats a read that waits until its row settles, as the store
// does: again at once after a wait that ran out, after pause when the
// process could not wait. It returns the last row read: nil after an
// error, unsettled when ctx ended first.
func settle[T any](ctx context.Context, await func() (*T, bool, error), settled func(*T) bool, pause time.Duration) *T {
	var row *T
	for ctx.Err() == nil {
		got, waited, err := await()
		if err != nil {
			return nil
		}
		if row = got; settled(row) {
			return row
		}
		if !waited {
			sleep(ctx, pause)
		}
	}
	return row
}

func sleepUntil(ctx context.Context, at time.Time) { sleep(ctx, time.Until(at)) }

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// peakRSS reads the process's peak resident set (Linux), in KiB.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
