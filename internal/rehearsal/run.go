package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"boxoffice/internal/checkout"
	"boxoffice/internal/inventory"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/waitingroom"
)

// Args runs one rehearsal.
type Args struct {
	ID uuid.UUID `json:"id"`
}

func (Args) Kind() string { return "rehearse" }

// QueueRehearsals runs rehearsals, one at a time per work process.
const QueueRehearsals = "rehearsals"

// InsertOpts puts the job on its queue; a run is not retried (it plays
// against the clock), an interrupted one is marked failed.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRehearsals, MaxAttempts: 2}
}

// Runner plays rehearsals with the deployment's services.
type Runner struct {
	Store        *Store
	Pool         *pgxpool.Pool
	Products     *product.Store
	Rooms        *waitingroom.Service // nil: buyers go straight to reserving
	Reservations *reservation.Service
	Checkout     *checkout.Service // nil or without test mode: nobody pays
	Logger       *slog.Logger
}

// Worker is the River worker of Args.
type Worker struct {
	river.WorkerDefaults[Args]
	Runner *Runner
}

// Timeout leaves room for the longest deadline.
func (*Worker) Timeout(*river.Job[Args]) time.Duration { return 35 * time.Minute }

// Work runs the rehearsal once; a retry finds it RUNNING (its process
// stopped) and records the failure.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	r := w.Runner
	begun, err := r.Store.begin(ctx, job.Args.ID)
	if err != nil {
		return err
	}
	if !begun {
		reh, err := r.Store.get(ctx, job.Args.ID)
		if err != nil {
			return err
		}
		if reh.Status == "RUNNING" {
			if err := r.purgeShadow(ctx, reh); err != nil {
				return err
			}
			return r.Store.finish(ctx, reh.ID, nil, errors.New("the process running the rehearsal stopped; start it again"))
		}
		return nil
	}
	reh, err := r.Store.get(ctx, job.Args.ID)
	if err != nil {
		return err
	}
	res, runErr := r.Run(ctx, reh)
	if runErr != nil {
		r.Logger.WarnContext(ctx, "rehearsal failed", "rehearsal", reh.ID, "error", runErr)
	}
	bg := context.WithoutCancel(ctx)
	if reh, err = r.Store.get(bg, reh.ID); err != nil {
		return err
	}
	if err := r.purgeShadow(bg, reh); err != nil {
		return err
	}
	return r.Store.finish(bg, reh.ID, res, runErr)
}

// purgeShadow deletes a rehearsal's shadow and everything of it once the
// rehearsal has ended (its figures are in the result): a shadow left
// behind would hold numbers against the tenant's quota for ever. One
// transaction, so a failure leaves the shadow whole for the retry.
func (r *Runner) purgeShadow(ctx context.Context, reh *Rehearsal) error {
	if reh.ShadowID == nil {
		return nil
	}
	id := *reh.ShadowID
	err := pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		if err := checkout.PurgeProduct(ctx, tx, id); err != nil {
			return err
		}
		if err := reservation.PurgeProduct(ctx, tx, id); err != nil {
			return err
		}
		if err := waitingroom.PurgeProduct(ctx, tx, id); err != nil {
			return err
		}
		if err := inventory.Purge(ctx, tx, id); err != nil {
			return err
		}
		err := product.PurgeShadow(ctx, tx, id)
		if errors.Is(err, product.ErrNotShadow) {
			return nil // purged already (a retry)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("purge the shadow of rehearsal %s: %w", reh.ID, err)
	}
	return nil
}

// Run plays one rehearsal: it makes the shadow, lets the buyers loose and
// samples the shadow sale once a second until it sells out, everyone is
// done, or the deadline passes.
func (r *Runner) Run(ctx context.Context, reh *Rehearsal) (*Result, error) {
	p := reh.Params.withDefaults()
	real, err := r.Products.Get(ctx, reh.TenantID, reh.ProductID)
	if err != nil {
		return nil, err
	}
	res := &Result{Timeline: []Sample{}}
	room := waitingroom.Settings{Enabled: true, ActiveShoppers: 200, ShoppingSeconds: 60}
	if real.WaitingRoom != nil && real.WaitingRoom.Enabled {
		room = *real.WaitingRoom
	}
	if p.ActiveShoppers > 0 {
		room.ActiveShoppers = p.ActiveShoppers
	}
	if p.ShoppingSeconds > 0 {
		room.ShoppingSeconds = p.ShoppingSeconds
	}
	room.ChallengeBits = 0 // synthetic buyers skip the proof of work
	if r.Rooms == nil {
		res.Notes = append(res.Notes, "this deployment runs no waiting rooms: buyers reserve at once")
	}
	pays := r.Checkout != nil && r.Checkout.TestMode()
	if !pays {
		res.Notes = append(res.Notes, "no test-mode payment provider (BOXOFFICE_REHEARSAL_PSP_URL): nobody paid")
	}

	// A third arrives before opening; the opening leaves them time to.
	arrive := time.Duration(p.ArrivalSeconds) * time.Second
	openAt := time.Now().Add(2*time.Second + arrive/3)
	params := product.CreateParams{TenantID: real.TenantID, Slug: "rehearsal-" + reh.ID.String()[:8],
		Name: real.Name + " (rehearsal)", Kind: real.Kind, Capacity: real.Capacity, Layout: real.Layout,
		PriceCents: real.PriceCents, Currency: real.Currency, PerBuyerLimit: real.PerBuyerLimit, HoldSeconds: real.HoldSeconds,
		OnSaleAt: openAt, Publication: product.Published, RehearsalOf: &real.ID}
	if r.Rooms != nil {
		params.WaitingRoom = &room
	}
	shadow, err := r.Products.Create(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("shadow product: %w", err)
	}
	if err := r.Store.setShadow(ctx, reh.ID, shadow.ID); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.DeadlineSeconds)*time.Second)
	defer cancel()
	var c counters
	start := time.Now()
	var rows []product.Row
	if shadow.Layout != nil {
		rows = shadow.Layout.Rows()
		rows = rows[:max(1, len(rows)/5)] // everyone wants the front fifth
	}
	var wg sync.WaitGroup
	for i := range p.Buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			at := start.Add(time.Duration(rng.Int64N(int64(arrive))))
			sleep(ctx, time.Until(at))
			r.buyer(ctx, shadow, "rehearsal-buyer-"+strconv.Itoa(i), rng, rows, pays && rng.Float64() < p.PayShare, &c)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPaid int64
sample:
	for {
		select {
		case <-done:
			break sample
		case <-ctx.Done():
			break sample
		case now := <-tick.C:
			s, inFlight, err := r.sample(ctx, shadow.ID, int(now.Sub(openAt).Round(time.Second).Seconds()))
			if err != nil {
				continue
			}
			res.Timeline = append(res.Timeline, s)
			res.PeakClaimBacklog = max(res.PeakClaimBacklog, s.Queued)
			res.PeakPaymentsInFlight = max(res.PeakPaymentsInFlight, inFlight)
			res.PaymentsPerSecond = max(res.PaymentsPerSecond, float64(s.Paid-lastPaid))
			lastPaid = s.Paid
			if s.Available == 0 && !res.SoldOut && now.After(openAt) {
				res.SoldOut, res.SellOutSeconds = true, now.Sub(openAt).Seconds()
			}
		}
	}
	if ctx.Err() != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("stopped at the %ds deadline", p.DeadlineSeconds))
	}
	cancel()
	wg.Wait()

	bg := context.WithoutCancel(ctx)
	// The buyers may all be done between two samples: one more look, so a
	// sale that sold out in its last second is not reported as not sold out.
	if !res.SoldOut {
		if s, _, err := r.sample(bg, shadow.ID, int(time.Since(openAt).Round(time.Second).Seconds())); err == nil && s.Available == 0 {
			res.SoldOut, res.SellOutSeconds = true, time.Since(openAt).Seconds()
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Arrived, res.Admitted, res.Reserved = c.arrived.Load(), c.admitted.Load(), c.reserved.Load()
	res.Held, res.Rejected, res.Conflicts = c.held.Load(), c.rejected.Load(), c.conflicts.Load()
	res.Orders, res.Paid = c.orders.Load(), c.paid.Load()
	res.Chosen = c.explicit.Load()
	if res.Chosen > 0 {
		res.ConflictRate = float64(res.Conflicts) / float64(res.Chosen)
	}
	res.AdmissionRate = admissionRate(res.Timeline)
	if live, err := reservation.ReadLive(bg, r.Pool, shadow.ID); err == nil {
		res.ClaimLatencyP99 = live.LatencyP99
	}
	// The shadow is done: closed, so nothing more is claimed on it.
	closed := product.Closed
	if _, err := r.Products.Update(bg, shadow.TenantID, shadow.ID, product.Update{Publication: &closed}); err != nil {
		r.Logger.WarnContext(bg, "closing a rehearsal's shadow", "product", shadow.ID, "error", err)
	}
	return res, nil
}

// admissionRate is shoppers let in per second, from the last sample before
// the first admission to the last sample that admitted more.
func admissionRate(tl []Sample) float64 {
	first, last := -1, -1
	for i, s := range tl {
		if s.Admitted > 0 && first < 0 {
			first = i
		}
		if i > 0 && s.Admitted > tl[i-1].Admitted {
			last = i
		}
	}
	if first < 1 || last < first {
		return 0
	}
	from := tl[first-1]
	secs := tl[last].Second - from.Second
	if secs <= 0 {
		return 0
	}
	return float64(tl[last].Admitted-from.Admitted) / float64(secs)
}

type counters struct {
	arrived, admitted, reserved, held, rejected, conflicts, orders, paid atomic.Int64
	explicit                                                             atomic.Int64 // requests for chosen seats
}

// buyer is one synthetic buyer: join, wait to be admitted, ask for two
// seats (the best, or a pair in the front rows), and maybe pay.
func (r *Runner) buyer(ctx context.Context, shadow *product.Product, buyer string, rng *rand.Rand, front []product.Row,
	pay bool, c *counters) {
	c.arrived.Add(1)
	var qt string
	if r.Rooms != nil && shadow.WaitingRoom != nil {
		e, _, err := r.Rooms.Join(ctx, shadow.TenantID, shadow.ID, buyer)
		if err != nil {
			return
		}
		qt = r.Rooms.QueueToken(e)
		defer func() { _ = r.Rooms.Leave(context.WithoutCancel(ctx), qt) }()
		for {
			st, err := r.Rooms.Poll(ctx, qt)
			if err != nil || st.Status == waitingroom.StatusSoldOut || st.Status == waitingroom.StatusExpired {
				return
			}
			if st.Status == waitingroom.StatusAdmitted {
				break
			}
			if !sleep(ctx, time.Duration(300+rng.IntN(400))*time.Millisecond) {
				return
			}
		}
		c.admitted.Add(1)
	}
	want := min(2, shadow.PerBuyerLimit)
	params := reservation.Params{Quantity: want, Mode: reservation.ModeBest}
	if len(front) > 0 && want == 2 && rng.Float64() < 0.3 {
		row := front[rng.IntN(len(front))]
		if row.Seats >= 2 {
			first := int32(row.First + rng.IntN(row.Seats-1))
			params = reservation.Params{Numbers: []int32{first, first + 1}}
			c.explicit.Add(1)
		}
	}
	acc, err := r.Reservations.Accept(ctx, reservation.AcceptParams{Product: shadow, BuyerID: buyer, IdempotencyKey: "rehearsal",
		Params: params})
	if err != nil {
		return
	}
	c.reserved.Add(1)
	var req *reservation.Request
	for {
		if !sleep(ctx, 200*time.Millisecond) {
			return
		}
		if req, err = r.Reservations.Get(ctx, shadow.TenantID, acc.Request.ID, buyer); err != nil || req.Status != reservation.StatusQueued {
			break
		}
	}
	if req == nil || req.Status != reservation.StatusHeld {
		c.rejected.Add(1)
		if req != nil && req.Reason == reservation.ReasonSeatTaken {
			c.conflicts.Add(1)
		}
		return
	}
	c.held.Add(1)
	if !pay {
		return
	}
	method := pspsim.MethodOK
	if rng.Float64() < 0.05 {
		method = pspsim.MethodDecline
	}
	o, _, err := r.Checkout.Create(ctx, checkout.CreateParams{TenantID: shadow.TenantID, BuyerID: buyer,
		IdempotencyKey: "rehearsal", HoldID: *req.HoldID, PaymentMethod: method})
	if err != nil {
		return
	}
	c.orders.Add(1)
	for o.Status == checkout.StatusPending {
		if !sleep(ctx, 300*time.Millisecond) {
			return
		}
		if o, err = r.Checkout.Get(ctx, shadow.TenantID, o.ID, buyer); err != nil {
			return
		}
	}
	if o.Status == checkout.StatusConfirmed {
		c.paid.Add(1)
	}
}

// sample reads the shadow sale through the tables' owners.
func (r *Runner) sample(ctx context.Context, id uuid.UUID, second int) (Sample, int64, error) {
	s := Sample{Second: second}
	counts, err := inventory.CountsOf(ctx, r.Pool, []uuid.UUID{id})
	if err != nil {
		return s, 0, err
	}
	s.Available = counts[id].Available
	req, err := reservation.ReadLive(ctx, r.Pool, id)
	if err != nil {
		return s, 0, err
	}
	s.Queued = req.Queued
	if room, err := waitingroom.ReadLive(ctx, r.Pool, id); err == nil {
		s.Waiting, s.Admitted = room.Waiting, room.AdmittedThrough
	}
	pay, err := checkout.ReadLive(ctx, r.Pool, id)
	if err != nil {
		return s, 0, err
	}
	s.Paid = pay.OrdersByStatus[checkout.StatusConfirmed]
	return s, pay.PaymentsInFlight + pay.PaymentsUnknown, nil
}

// sleep waits d or until ctx ends; false when it ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
