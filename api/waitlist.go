package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/waitlist"
)

// WaitlistBody is how a shopper joins a sold-out product's line.
type WaitlistBody struct {
	Quantity int    `json:"quantity" minimum:"1" maximum:"100" doc:"How many numbers wanted, at most the per-buyer limit"`
	Email    string `json:"email" format:"email" maxLength:"254" doc:"Where the offer is mailed"`
}

// WaitlistEntry is a shopper's place in a waiting list.
type WaitlistEntry struct {
	*waitlist.Entry
}

type waitlistOutput struct {
	Status int
	Body   WaitlistEntry
}

// joinWaitlist serves POST /v1/products/{id}/waitlist.
func (s *Server) joinWaitlist(ctx context.Context, in *struct {
	ProductPath
	Body WaitlistBody
}) (*waitlistOutput, error) {
	p, err := s.buyersProduct(ctx, in.ProductPath)
	if err != nil {
		return nil, err
	}
	e, created, err := s.Reservations.JoinWaitlist(ctx, p, caller(ctx).BuyerID, in.Body.Email, in.Body.Quantity)
	if errors.Is(err, reservation.ErrNotSoldOut) {
		return nil, problem(http.StatusConflict, "NOT_SOLD_OUT", "numbers are still on sale: reserve them instead")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return &waitlistOutput{Status: status, Body: WaitlistEntry{e}}, nil
}

// getWaitlist serves GET /v1/products/{id}/waitlist.
func (s *Server) getWaitlist(ctx context.Context, in *struct{ ProductPath }) (*struct{ Body WaitlistEntry }, error) {
	p, err := s.buyersProduct(ctx, in.ProductPath)
	if err != nil {
		return nil, err
	}
	e, err := s.Reservations.Waitlist(ctx, p.ID, caller(ctx).BuyerID)
	if errors.Is(err, waitlist.ErrNotOnList) {
		return nil, problem(http.StatusNotFound, "NOT_ON_WAITLIST", "you have not joined this waiting list")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body WaitlistEntry }{WaitlistEntry{e}}, nil
}

// leaveWaitlist serves DELETE /v1/products/{id}/waitlist.
func (s *Server) leaveWaitlist(ctx context.Context, in *struct{ ProductPath }) (*struct{}, error) {
	p, err := s.buyersProduct(ctx, in.ProductPath)
	if err != nil {
		return nil, err
	}
	err = s.Reservations.LeaveWaitlist(ctx, p.ID, caller(ctx).BuyerID)
	if errors.Is(err, waitlist.ErrNotOnList) {
		return nil, problem(http.StatusNotFound, "NOT_ON_WAITLIST", "you are not waiting, nor holding an offer, for this product")
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	return nil, nil
}

// waitlistSummary serves GET /v1/products/{id}/waitlist/summary.
func (s *Server) waitlistSummary(ctx context.Context, in *struct{ ProductPath }) (*struct{ Body WaitlistSummary }, error) {
	p, err := s.Products.Get(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	sum, err := s.Reservations.WaitlistSummary(ctx, p.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body WaitlistSummary }{WaitlistSummary{sum}}, nil
}

// WaitlistSummary is a product's waiting list in figures.
type WaitlistSummary struct {
	waitlist.Summary
}

// checkOffer refuses a reservation that names an offer the buyer does not
// hold, or no longer: 409 OFFER_INVALID.
func (s *Server) checkOffer(ctx context.Context, p *product.Product, buyerID string, offer uuid.UUID) error {
	e, err := s.Reservations.Waitlist(ctx, p.ID, buyerID)
	if err != nil && !errors.Is(err, waitlist.ErrNotOnList) {
		return s.toProblem(err)
	}
	if e == nil || e.ID != offer || e.State != waitlist.Offered || !time.Now().Before(e.Offer.ExpiresAt) {
		return problem(http.StatusConflict, reservation.ReasonOfferInvalid, "this offer is not yours, has run out or was spent")
	}
	return nil
}
