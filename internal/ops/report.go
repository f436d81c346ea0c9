package ops

import (
	"context"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/waitingroom"
)

// SalesReport is a product's on-sale step by step: the funnel joined →
// admitted → reserved → held → paid, with conflicts, expiries and revenue.
type SalesReport struct {
	ProductID   uuid.UUID    `json:"productId"`
	Name        string       `json:"name"`
	Currency    string       `json:"currency"`
	From        time.Time    `json:"from" doc:"The first step's start: the opening, or the first activity before it"`
	StepSeconds int          `json:"stepSeconds" doc:"60, or longer for sales that ran for days"`
	Steps       []ReportStep `json:"steps"`
	Totals      ReportStep   `json:"totals"`
	// Discounts are what codes took off the confirmed orders' tickets
	// (revenue is after them).
	Discounts Discounts `json:"discounts"`
	// Event and the dates say which show and night the report is of.
	Event *product.Event `json:"event"`
	product.Dates
}

// Discounts are the confirmed orders that used a discount code.
type Discounts struct {
	Orders int   `json:"orders" doc:"Confirmed orders that used a code"`
	Cents  int64 `json:"cents" doc:"What the codes took off their tickets"`
}

// ReportStep is one step (one minute, usually) of the report.
type ReportStep struct {
	At            time.Time `json:"at,omitzero"`
	Joined        int64     `json:"joined" doc:"Entered the waiting room"`
	Admitted      int64     `json:"admitted" doc:"Let out of the waiting room"`
	Reserved      int64     `json:"reserved" doc:"Reservation requests accepted"`
	Held          int64     `json:"held" doc:"Requests that got a hold"`
	Numbers       int64     `json:"numbersHeld"`
	Paid          int64     `json:"paid" doc:"Orders confirmed"`
	Conflicts     int64     `json:"conflicts" doc:"Requests refused because another buyer had the seat"`
	Rejected      int64     `json:"rejected" doc:"All refused requests (conflicts, limits, sold out…)"`
	Expired       int64     `json:"expired" doc:"Holds that ran out unpaid"`
	RevenueCents  int64     `json:"revenueCents" doc:"Paid in this step"`
	Refunds       int64     `json:"refunds" doc:"Refunds made in this step"`
	RefundedCents int64     `json:"refundedCents" doc:"Given back by those refunds"`
}

// maxReportSteps bounds a report: beyond a day of minutes the step grows.
const maxReportSteps = 24 * 60

// Report builds a product's sales report for scope.
func (l *Live) Report(ctx context.Context, scope Scope, productID uuid.UUID) (*SalesReport, error) {
	p, err := l.visible(ctx, scope, productID)
	if err != nil {
		return nil, err
	}
	pool := l.reporter.pool
	// A waiting room gathers people before the opening: start at the first
	// join when it came earlier, but never more than a day before.
	from := p.OnSaleAt
	first, err := waitingroom.FirstJoin(ctx, pool, p.ID)
	if err != nil {
		return nil, err
	}
	if first != nil && first.Before(from) && from.Sub(*first) < 24*time.Hour {
		from = *first
	}
	step := time.Minute
	from = from.Truncate(step)
	now := time.Now()
	if now.Before(from) {
		now = from
	}
	for now.Sub(from)/step >= maxReportSteps {
		step *= 2
	}
	n := int(now.Sub(from)/step) + 1
	req, err := reservation.ReadFlow(ctx, pool, p.ID, from, step, n)
	if err != nil {
		return nil, err
	}
	room, err := waitingroom.ReadFlow(ctx, pool, p.ID, from, step, n)
	if err != nil {
		return nil, err
	}
	orders, err := checkout.ReadFlow(ctx, pool, p.ID, from, step, n)
	if err != nil {
		return nil, err
	}
	r := &SalesReport{ProductID: p.ID, Name: p.Name, Currency: p.Currency, From: from.UTC(), Event: p.Event, Dates: p.Dates,
		StepSeconds: int(step / time.Second), Steps: make([]ReportStep, n)}
	t := &r.Totals
	for i := range n {
		s := ReportStep{At: from.Add(time.Duration(i) * step).UTC(), Joined: room.Joined[i], Admitted: room.Admitted[i],
			Reserved: req.Accepted[i], Held: req.Held[i], Numbers: req.Numbers[i], Paid: orders.Paid[i],
			Conflicts: req.Conflicts[i], Rejected: req.Rejected[i], Expired: req.Expired[i], RevenueCents: orders.RevenueCents[i],
			Refunds: orders.Refunds[i], RefundedCents: orders.RefundedCents[i]}
		r.Steps[i] = s
		t.Joined += s.Joined
		t.Admitted += s.Admitted
		t.Reserved += s.Reserved
		t.Held += s.Held
		t.Numbers += s.Numbers
		t.Paid += s.Paid
		t.Conflicts += s.Conflicts
		t.Rejected += s.Rejected
		t.Expired += s.Expired
		t.RevenueCents += s.RevenueCents
		t.Refunds += s.Refunds
		t.RefundedCents += s.RefundedCents
	}
	if r.Discounts.Orders, r.Discounts.Cents, err = codes.DiscountsOf(ctx, pool, productID); err != nil {
		return nil, err
	}
	return r, nil
}
