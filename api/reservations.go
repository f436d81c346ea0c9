package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// ReservationBody asks for explicit numbers or for a quantity.
type ReservationBody struct {
	Numbers     []int32    `json:"numbers,omitempty" maxItems:"100" doc:"Exact numbers (seats) wanted; or give quantity"`
	Quantity    int        `json:"quantity,omitempty" doc:"How many numbers, picked by mode; at most the per-buyer limit"`
	Mode        string     `json:"mode,omitempty" enum:"best,random" doc:"best (default): adjacent seats in the best row, or the lowest numbers; random: uniformly among free numbers"`
	AcceptFewer bool       `json:"acceptFewer,omitempty" doc:"Take what is left instead of all-or-nothing"`
	PresaleCode string     `json:"presaleCode,omitempty" maxLength:"40" doc:"Before the general sale, in a presale window: the code that lets the buyer in (once let in, later requests need none)"`
	Offer       *uuid.UUID `json:"offer,omitempty" doc:"A waiting-list offer to spend (GET /v1/products/{id}/waitlist): its numbers are for its holder only, up to its quantity"`
}

// ReservationView is a reservation request's state.
type ReservationView struct {
	*reservation.Request
	Seats     []string   `json:"seats,omitempty" doc:"The held numbers' seats as people read them: North · Row A · Seat 7"`
	Quote     *QuoteView `json:"quote,omitempty" doc:"What the held numbers cost: each seat's price, the booking fees and the total an order of them charges"`
	StatusURL string     `json:"statusUrl" doc:"Poll this until the status is no longer QUEUED"`
}

// QuoteView is the price of some numbers, as checkout shows it.
type QuoteView struct {
	Lines      []QuoteLine `json:"lines"`
	FeeCents   int64       `json:"feeCents" doc:"Booking fee per ticket"`
	FeesCents  int64       `json:"feesCents" doc:"The booking fees of all the lines"`
	TotalCents int64       `json:"totalCents" doc:"Prices and fees: what the order charges"`
	Currency   string      `json:"currency"`
}

// QuoteLine is one number at its price.
type QuoteLine struct {
	Number     int32  `json:"number"`
	Seat       string `json:"seat"`
	PriceCents int64  `json:"priceCents" doc:"The seat's price level's price, or the product's"`
}

// view is a request as a shopper sees it, its seats named from the
// product's (cached) seat map, which cannot change once a number is held.
func (s *Server) view(ctx context.Context, r *reservation.Request) ReservationView {
	v := ReservationView{Request: r, StatusURL: "/v1/reservations/" + r.ID.String()}
	if len(r.Numbers) > 0 {
		if p, err := s.productCache.Get(ctx, r.ProductID); err == nil {
			quote := p.Quote(r.Numbers)
			v.Seats = quote.Seats
			v.Quote = &QuoteView{FeeCents: quote.Fee, FeesCents: quote.FeeCents, TotalCents: quote.Cents, Currency: quote.Currency}
			for i, n := range r.Numbers {
				v.Quote.Lines = append(v.Quote.Lines, QuoteLine{Number: n, Seat: quote.Seats[i], PriceCents: quote.Each[i]})
			}
		}
	}
	return v
}

type reservationOutput struct {
	Status            int
	Location          string `header:"Location"`
	PreferenceApplied string `header:"Preference-Applied"`
	Body              ReservationView
}

// pollOutput lets browsers and proxies reuse a status for a second.
type pollOutput struct {
	CacheControl      string `header:"Cache-Control"`
	PreferenceApplied string `header:"Preference-Applied"`
	Body              ReservationView
}

// HoldView is a hold with its seats named.
type HoldView struct {
	*reservation.Hold
	Seats []string `json:"seats" doc:"North · Row A · Seat 7"`
}

// createReservation serves POST /v1/products/{id}/reservations.
func (s *Server) createReservation(ctx context.Context, in *createInput) (*reservationOutput, error) {
	buyer := caller(ctx)
	if in.IdempotencyKey == "" {
		return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
	}
	p, err := s.productCache.Get(ctx, in.ID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && p.TenantID != buyer.TenantID) {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such product")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	// Drafts and rehearsals' shadows are invisible to buyers; a closed sale
	// says so. Confirmed with a fresh read, as the cached product may
	// predate the change.
	if p.RehearsalOf != nil {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such product")
	}
	if p.Publication != product.Published {
		if p, err = s.Products.GetAny(ctx, p.ID); err != nil {
			return nil, s.toProblem(err)
		}
		switch p.Publication {
		case product.Draft:
			return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such product")
		case product.Closed:
			return nil, problem(http.StatusConflict, "SALE_CLOSED", "this sale is closed")
		case product.Cancelled:
			return nil, problem(http.StatusConflict, "EVENT_CANCELLED", "this date is cancelled: "+p.CancelReason)
		}
	}
	if p.OffSaleAt != nil && !time.Now().Before(*p.OffSaleAt) {
		return nil, problem(http.StatusConflict, "SALE_CLOSED", "this sale ended at "+p.OffSaleAt.UTC().Format(time.RFC3339))
	}
	if in.Body.Offer != nil {
		// A live waiting-list offer admits its holder as an admission
		// token would; the claim spends it.
		if err := s.checkOffer(ctx, p, buyer.BuyerID, *in.Body.Offer); err != nil {
			return nil, err
		}
	} else if err := s.checkAccess(ctx, p, buyer, in.AccessToken); err != nil {
		return nil, err
	}
	// Known not to be on sale yet: say so now, with the opening time,
	// instead of queueing a request the claim would reject. (The claim
	// stays the authority; this reads a product cached for seconds.)
	// The cached product may predate a change of the opening time, so
	// a refusal is confirmed with a fresh read (one key lookup, cheaper
	// than the accept it saves).
	if time.Now().Before(p.OnSaleAt) {
		fresh, err := s.Products.GetAny(ctx, p.ID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		if time.Now().Before(fresh.OnSaleAt) {
			if err := s.letIntoPresale(ctx, fresh, buyer.BuyerID, in.Body.PresaleCode); err != nil {
				return nil, err
			}
		}
	}
	// The key is cloned: Fiber's header strings alias a buffer the next
	// request reuses, and an accept batch may still hold the row after this
	// request has given up waiting for it (its deadline).
	acc, err := s.Reservations.Accept(ctx, reservation.AcceptParams{
		Product: p, BuyerID: buyer.BuyerID, IdempotencyKey: strings.Clone(in.IdempotencyKey),
		Params: reservation.Params{Numbers: in.Body.Numbers, Quantity: in.Body.Quantity, Mode: in.Body.Mode,
			AcceptFewer: in.Body.AcceptFewer, Offer: in.Body.Offer},
	})
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &reservationOutput{Status: http.StatusAccepted}
	r := acc.Request
	// Asked to, the answer waits for the decision as a status read would:
	// the shopper learns it in one exchange instead of two.
	wait := preferredWait(in.Prefer)
	if wait > 0 && r.Status == reservation.StatusQueued {
		decided, applied, err := s.awaitDecision(ctx, r.ID, wait)
		if err != nil {
			return nil, s.toProblem(err)
		}
		r = decided
		if applied {
			out.PreferenceApplied = preferenceApplied(wait)
		}
	}
	out.Body = s.view(ctx, r)
	out.Location = out.Body.StatusURL
	switch {
	case acc.Replayed:
		out.Status = http.StatusOK
	case r.Status != reservation.StatusQueued:
		// Decided within the wait, or refused as it was recorded.
		out.Status = http.StatusCreated
	}
	return out, nil
}

// maxDecisionWait caps Prefer: wait on a status or order read.
const maxDecisionWait = 20 * time.Second

// getReservation serves GET /v1/reservations/{id}. With Prefer: wait=N a
// QUEUED request's read waits up to N seconds for the decision, woken by
// the claim's commit (reservation.Waiters), and answers with the status
// it has then.
func (s *Server) getReservation(ctx context.Context, in *struct {
	ID     uuid.UUID `path:"id" format:"uuid"`
	Prefer string    `header:"Prefer" doc:"wait=N (RFC 7240): answer as soon as the request is decided, or after N seconds (at most 20) with its status then"`
}) (*pollOutput, error) {
	wait := preferredWait(in.Prefer)
	if wait <= 0 {
		who := caller(ctx)
		r, err := s.Reservations.Get(ctx, who.TenantID, in.ID, who.BuyerID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &pollOutput{CacheControl: "private, max-age=1", Body: s.view(ctx, r)}, nil
	}
	r, applied, err := s.awaitDecision(ctx, in.ID, wait)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &pollOutput{CacheControl: "private, max-age=1", Body: s.view(ctx, r)}
	if applied {
		out.PreferenceApplied = preferenceApplied(wait)
	}
	return out, nil
}

// awaitDecision reads the caller's request id and, while it is QUEUED,
// waits up to wait for its decision, woken by the claim's commit
// (reservation.Waiters). applied is false when the process could not wait.
func (s *Server) awaitDecision(ctx context.Context, id uuid.UUID, wait time.Duration) (*reservation.Request, bool, error) {
	ctx, cancel := waitContext(ctx, wait)
	defer cancel()
	who := caller(ctx)
	read := func() (*reservation.Request, error) { return s.Reservations.Get(ctx, who.TenantID, id, who.BuyerID) }
	mine := func(o *reservation.Owned) bool { return o.VisibleTo(who.TenantID, who.BuyerID) }
	return s.decisions.Await(ctx, reservation.Await{ID: id, Wait: wait, Read: read, Mine: mine, Stop: s.stopping})
}

// waitContext is the context of a read that waits (Prefer: wait=N). The
// wait is not database work: it may outlast the operation's deadline
// (requestTimeout), which bounds the reads after it instead. A server
// shutting down ends it sooner (Server.stopping).
func waitContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), wait+requestTimeout)
}

// preferenceApplied says, in Preference-Applied, that a read waited as
// asked (RFC 7240).
func preferenceApplied(wait time.Duration) string {
	return fmt.Sprintf("wait=%d", int(wait/time.Second))
}

// preferredWait reads wait=N from a Prefer header (RFC 7240: preferences
// separated by commas, parameters by semicolons), capped at
// maxDecisionWait; 0 when absent or malformed.
func preferredWait(header string) time.Duration {
	for _, pref := range strings.Split(header, ",") {
		token, _, _ := strings.Cut(pref, ";")
		name, value, ok := strings.Cut(strings.TrimSpace(token), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
		if err != nil || n <= 0 {
			return 0
		}
		return min(time.Duration(n)*time.Second, maxDecisionWait)
	}
	return 0
}

// releaseHold serves DELETE /v1/holds/{id}.
func (s *Server) releaseHold(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body HoldView }, error) {
	buyer := caller(ctx)
	h, err := s.Reservations.Release(ctx, buyer.TenantID, buyer.BuyerID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	v := HoldView{Hold: h}
	if p, err := s.productCache.Get(ctx, h.ProductID); err == nil {
		v.Seats = p.Layout.LabelsIn(h.Numbers, product.SeatWordsIn(p.Language))
	}
	return &struct{ Body HoldView }{v}, nil
}
