package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"boxoffice/internal/checkout"
)

// transferTicket serves POST /v1/tickets/{id}/transfer.
func (s *Server) transferTicket(ctx context.Context, in *struct {
	ID             uuid.UUID `path:"id" format:"uuid" doc:"Ticket id"`
	IdempotencyKey string    `header:"Idempotency-Key" maxLength:"200" doc:"Required: the same key answers with the same transfer"`
	Body           struct {
		Email string `json:"email" format:"email" minLength:"3" maxLength:"254" doc:"Whom to give the ticket to: they sign in to the store with this address to see it"`
	}
}) (*keyedOutput[*checkout.Transfer], error) {
	if in.IdempotencyKey == "" {
		return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
	}
	who := caller(ctx)
	t, replayed, err := s.Checkout.TransferTicket(ctx, checkout.TransferParams{TenantID: who.TenantID, BuyerID: who.BuyerID,
		TicketID: in.ID, Email: in.Body.Email, IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return keyedAnswer(t, "/v1/tickets", http.StatusCreated, replayed), nil
}

// HeldTickets are the tickets a buyer holds.
type HeldTickets struct {
	Tickets []checkout.HeldTicket `json:"tickets"`
}

// listTickets serves GET /v1/tickets.
func (s *Server) listTickets(ctx context.Context, _ *struct{}) (*struct{ Body HeldTickets }, error) {
	who := caller(ctx)
	list, err := s.Checkout.HeldTickets(ctx, who.TenantID, who.BuyerID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body HeldTickets }{HeldTickets{list}}, nil
}
