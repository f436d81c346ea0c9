package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/cache"
	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/waitingroom"
	"boxoffice/internal/waitlist"
)

// SaleView is the console's live view of one product's on-sale, computed
// from the database so that every API process shows the same figures.
type SaleView struct {
	At        time.Time        `json:"at"`
	Product   SaleProduct      `json:"product"`
	Room      *RoomView        `json:"room,omitempty" doc:"Absent when the product has no waiting room"`
	Requests  RequestsView     `json:"requests"`
	Holds     HoldsView        `json:"holds"`
	Payments  PaymentsView     `json:"payments"`
	Checkout  CheckoutView     `json:"checkout"`
	Waitlist  waitlist.Summary `json:"waitlist" doc:"The waiting list: its length, offers out and how offers ended"`
	OutboxLag float64          `json:"outboxLagSeconds" doc:"Age of the oldest unpublished event (all tenants)"`
	River     []RiverQueue     `json:"river" doc:"River's queues (a tenant sees its own products' claim jobs)"`
	SQS       *SQS             `json:"sqs,omitempty" doc:"Platform admin only: the queues are shared"`
	Invariant InvariantView    `json:"invariant"`
	History   History          `json:"history" doc:"The last 15 minutes in 15-second steps"`
}

// SaleProduct is what the view shows of the product.
type SaleProduct struct {
	ID          uuid.UUID  `json:"id"`
	TenantID    uuid.UUID  `json:"tenantId"`
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Capacity    int        `json:"capacity"`
	Available   int        `json:"available"`
	Held        int        `json:"held"`
	Sold        int        `json:"sold"`
	OnSaleAt    time.Time  `json:"onSaleAt"`
	StartsAt    *time.Time `json:"startsAt,omitempty" doc:"When the date begins (what tells apart the dates of one event, which share its name); absent while it is to be announced"`
	Currency    string     `json:"currency"`
	PriceCents  int64      `json:"priceCents"`
	Publication string     `json:"publication"`
}

// SaleProductOf is what the view shows of p with its counters.
func SaleProductOf(p *product.Product, c inventory.Counts) SaleProduct {
	return SaleProduct{ID: p.ID, TenantID: p.TenantID, Name: p.Name, Kind: p.Kind, Capacity: p.Capacity,
		Available: c.Available, Held: c.Held, Sold: c.Sold, OnSaleAt: p.OnSaleAt, StartsAt: p.StartsAt, Currency: p.Currency,
		PriceCents: p.PriceCents, Publication: p.Publication}
}

// RoomView is the waiting room: depth, the waits, λ and why.
type RoomView struct {
	ActiveShoppers  int     `json:"configuredActiveShoppers" doc:"L"`
	ShoppingSeconds int     `json:"configuredShoppingSeconds" doc:"W"`
	ConfiguredRate  float64 `json:"configuredRate" doc:"L ÷ W per second"`
	Rate            float64 `json:"rate" doc:"λ now, after feedback"`
	Reason          string  `json:"reason,omitempty" doc:"Why λ is below L ÷ W, or admission holds"`
	Waiting         int64   `json:"waiting"`
	AdmittedThrough int64   `json:"admittedThrough"`
	Joined          int64   `json:"joined"`
	Admitted        int64   `json:"admitted"`
	Active          int64   `json:"activeShoppers" doc:"Admitted, within their access window, still in"`
	WaitP50         float64 `json:"waitP50Seconds" doc:"How long those waiting have waited so far"`
	WaitP90         float64 `json:"waitP90Seconds"`
	WaitMax         float64 `json:"waitMaxSeconds"`
	AdmittedWaitP50 float64 `json:"admittedWaitP50Seconds" doc:"Joining to admission, last 15 minutes"`
	AdmittedWaitP90 float64 `json:"admittedWaitP90Seconds"`
	SoldOut         bool    `json:"soldOut"`
}

// RequestsView is the claim pipeline.
type RequestsView struct {
	ByStatus         map[string]int64 `json:"byStatus"`
	Rejections       map[string]int64 `json:"rejections" doc:"REJECTED requests by reason"`
	Queued           int64            `json:"queued"`
	OldestQueuedAge  float64          `json:"oldestQueuedAgeSeconds"`
	DeadLettered     int64            `json:"deadLettered"`
	DecidedPerSecond float64          `json:"decidedPerSecond" doc:"Requests held or rejected per second (last 10 s)"`
	HeldPerSecond    float64          `json:"numbersHeldPerSecond" doc:"Last 10 s"`
	BatchSize        float64          `json:"batchSize" doc:"Holds per claim transaction (last minute)"`
	LatencyP50       float64          `json:"latencyP50Seconds" doc:"Accept to decision (last minute)"`
	LatencyP99       float64          `json:"latencyP99Seconds"`
}

// HoldsView is the holds.
type HoldsView struct {
	Active        int64   `json:"active"`
	Expiring      int64   `json:"expiringWithinMinute"`
	ExpiryLag     float64 `json:"expiryLagSeconds" doc:"How long the longest-expired ACTIVE hold is past its expiry"`
	BuyersHolding int64   `json:"buyersHolding"`
	Expired       int64   `json:"expiredLastMinute"`
}

// PaymentsView is checkout.
type PaymentsView struct {
	OrdersByStatus   map[string]int64 `json:"ordersByStatus"`
	InFlight         int64            `json:"inFlight" doc:"Attempts PENDING at the provider"`
	Unknown          int64            `json:"unknown" doc:"Attempts whose outcome is not known yet"`
	OldestUnresolved float64          `json:"oldestUnresolvedSeconds"`
	CapturesFailing  int64            `json:"capturesFailing"`
	RevenueCents     int64            `json:"revenueCents"`
	PaidLastMinute   int64            `json:"paidLastMinute"`
}

// CheckoutView is the platform's checkout switch.
type CheckoutView struct {
	Paused bool   `json:"paused"`
	Reason string `json:"reason,omitempty"`
}

// InvariantView is the last audit of the product's inventory: any
// violation is the red banner.
type InvariantView struct {
	CheckedAt  time.Time `json:"checkedAt"`
	Violations []string  `json:"violations"`
}

// History is the last minutes, one value per step, oldest first.
type History struct {
	From        time.Time `json:"from"`
	StepSeconds int       `json:"stepSeconds"`
	Accepted    []int64   `json:"accepted"`
	Decided     []int64   `json:"decided"`
	Rejected    []int64   `json:"rejected"`
	Queued      []int64   `json:"queued" doc:"Requests waiting at each step's end"`
	Joined      []int64   `json:"joined"`
	Admitted    []int64   `json:"admitted"`
	Waiting     []int64   `json:"waiting" doc:"Waiting room depth at each step's end"`
	Paid        []int64   `json:"paid"`
	Expired     []int64   `json:"expired"`
}

const (
	historySteps = 60
	historyStep  = 15 * time.Second
)

// Live builds views, each at most once a second per product (figures),
// every five seconds (history) and every ten (invariant audit), whoever
// watches.
type Live struct {
	reporter  *Reporter
	products  *product.Store
	views     *cache.Cache[viewKey, *SaleView]
	histories *cache.Cache[uuid.UUID, *History]
	audits    *cache.Cache[uuid.UUID, *InvariantView]
}

type viewKey struct {
	product  uuid.UUID
	platform bool
}

// ErrNotVisible is a product the scope may not see (or none).
var ErrNotVisible = errors.New("no such product")

// NewLive returns the live view builder.
func NewLive(r *Reporter, products *product.Store) *Live {
	l := &Live{reporter: r, products: products}
	l.views = cache.New(time.Second, 1000, l.build)
	l.histories = cache.New(5*time.Second, 1000, l.history)
	l.audits = cache.New(10*time.Second, 1000, l.audit)
	return l
}

// View returns a product's live view for scope.
// The view names its product's tenant: a stream's second-by-second calls
// check it against the scope without reading the product again.
func (l *Live) View(ctx context.Context, scope Scope, productID uuid.UUID) (*SaleView, error) {
	v, err := l.views.Get(ctx, viewKey{product: productID, platform: scope.platform()})
	if errors.Is(err, db.ErrNotFound) || err == nil && !scope.platform() && v.Product.TenantID != scope.TenantID {
		return nil, ErrNotVisible
	}
	return v, err
}

// visible returns a product scope may see: its tenant's, or any for the
// platform; ErrNotVisible otherwise.
func (l *Live) visible(ctx context.Context, scope Scope, productID uuid.UUID) (*product.Product, error) {
	p, err := l.products.GetAny(ctx, productID)
	if errors.Is(err, db.ErrNotFound) || err == nil && !scope.platform() && p.TenantID != scope.TenantID {
		return nil, ErrNotVisible
	}
	return p, err
}

func (l *Live) build(ctx context.Context, k viewKey) (*SaleView, error) {
	pool := l.reporter.pool
	p, err := l.products.GetAny(ctx, k.product)
	if err != nil {
		return nil, err
	}
	counts, err := inventory.CountsOf(ctx, pool, []uuid.UUID{p.ID})
	if err != nil {
		return nil, err
	}
	v := &SaleView{At: time.Now().UTC(), Product: SaleProductOf(p, counts[p.ID])}

	room, err := waitingroom.ReadLive(ctx, pool, p.ID)
	switch {
	case errors.Is(err, db.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		v.Room = &RoomView{ActiveShoppers: room.Settings.ActiveShoppers, ShoppingSeconds: room.Settings.ShoppingSeconds,
			ConfiguredRate: room.Settings.Rate(), Rate: room.Rate, Reason: room.Reason, Waiting: room.Waiting,
			AdmittedThrough: room.AdmittedThrough, Joined: room.Joined, Admitted: room.Admitted, Active: room.Active,
			WaitP50: room.WaitP50, WaitP90: room.WaitP90, WaitMax: room.WaitMax,
			AdmittedWaitP50: room.AdmittedWaitP50, AdmittedWaitP90: room.AdmittedWaitP90, SoldOut: room.SoldOut}
	}

	req, err := reservation.ReadLive(ctx, pool, p.ID)
	if err != nil {
		return nil, err
	}
	v.Requests = RequestsView{ByStatus: req.ByStatus, Rejections: req.Rejections, Queued: req.Queued,
		DeadLettered: req.DeadLettered, DecidedPerSecond: req.DecidedPerSec, HeldPerSecond: req.HeldPerSec,
		BatchSize: req.BatchSize, LatencyP50: req.LatencyP50, LatencyP99: req.LatencyP99}
	if req.OldestQueued != nil {
		v.Requests.OldestQueuedAge = time.Since(*req.OldestQueued).Seconds()
	}
	v.Holds = HoldsView{Active: req.HoldsActive, Expiring: req.HoldsExpiring, ExpiryLag: req.ExpiryLag,
		BuyersHolding: req.BuyersHolding, Expired: req.ExpiredRecently}

	pay, err := checkout.ReadLive(ctx, pool, p.ID)
	if err != nil {
		return nil, err
	}
	v.Payments = PaymentsView{OrdersByStatus: pay.OrdersByStatus, InFlight: pay.PaymentsInFlight,
		Unknown: pay.PaymentsUnknown, OldestUnresolved: pay.OldestUnresolved, CapturesFailing: pay.CapturesFailing,
		RevenueCents: pay.RevenueCents, PaidLastMinute: pay.PaidPerMinute}
	if v.Checkout.Paused, v.Checkout.Reason, err = checkout.Paused(ctx, pool); err != nil {
		return nil, err
	}
	if v.Waitlist, err = waitlist.SummaryOf(ctx, pool, p.ID); err != nil {
		return nil, err
	}
	if v.OutboxLag, err = outbox.Lag(ctx, pool); err != nil {
		return nil, err
	}
	scope := Scope{TenantID: p.TenantID}
	if k.platform {
		scope = Scope{}
	}
	if v.River, err = l.reporter.riverQueues(ctx, scope); err != nil {
		return nil, err
	}
	if l.reporter.sqs != nil && k.platform {
		mainQ, dlq, err := l.reporter.sqs.Stats(ctx)
		if err != nil {
			return nil, err
		}
		v.SQS = &SQS{Main: mainQ, DLQ: dlq}
	}
	inv, err := l.audits.Get(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	v.Invariant = *inv
	h, err := l.histories.Get(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	v.History = *h
	return v, nil
}

// audit checks the product's inventory invariants in one snapshot.
func (l *Live) audit(ctx context.Context, productID uuid.UUID) (*InvariantView, error) {
	out := &InvariantView{CheckedAt: time.Now().UTC(), Violations: []string{}}
	err := pgx.BeginTxFunc(ctx, l.reporter.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			vs, err := reservation.Audit(ctx, tx, productID)
			for _, v := range vs {
				out.Violations = append(out.Violations, v.String())
			}
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("audit %s: %w", productID, err)
	}
	return out, nil
}

// history reads the last 15 minutes of a product's sale.
func (l *Live) history(ctx context.Context, productID uuid.UUID) (*History, error) {
	pool := l.reporter.pool
	// Steps end on a multiple of the step, so two processes agree.
	from := time.Now().Truncate(historyStep).Add(historyStep - historySteps*historyStep)
	h := &History{From: from.UTC(), StepSeconds: int(historyStep / time.Second)}
	req, err := reservation.ReadFlow(ctx, pool, productID, from, historyStep, historySteps)
	if err != nil {
		return nil, err
	}
	room, err := waitingroom.ReadFlow(ctx, pool, productID, from, historyStep, historySteps)
	if err != nil {
		return nil, err
	}
	orders, err := checkout.ReadFlow(ctx, pool, productID, from, historyStep, historySteps)
	if err != nil {
		return nil, err
	}
	h.Accepted, h.Rejected, h.Queued, h.Expired = req.Accepted, req.Rejected, req.Queued, req.Expired
	h.Decided = make([]int64, historySteps)
	for i := range h.Decided {
		h.Decided[i] = req.Held[i] + req.Rejected[i]
	}
	h.Joined, h.Admitted, h.Waiting = room.Joined, room.Admitted, room.Waiting
	h.Paid = orders.Paid
	return h, nil
}
