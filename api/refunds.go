package api

import (
	"bytes"
	"context"
	"net/http"

	"github.com/google/uuid"

	"boxoffice/internal/checkout"
)

// RefundBody asks to refund an order, in full or some of its tickets.
type RefundBody struct {
	TicketIDs []uuid.UUID `json:"ticketIds,omitempty" maxItems:"100" doc:"The tickets to refund; absent: every valid ticket of the order"`
	Reason    string      `json:"reason" minLength:"1" maxLength:"500" pattern:"^[^\\p{Cc}]+$" doc:"Why: shown in the order's timeline and told to the buyer"`
}

// refundOrder serves POST /v1/tenant/orders/{id}/refunds.
func (s *Server) refundOrder(ctx context.Context, in *struct {
	ID             uuid.UUID `path:"id" format:"uuid"`
	IdempotencyKey string    `header:"Idempotency-Key" maxLength:"200" doc:"Required: the same key answers with the same refund"`
	Body           RefundBody
}) (*keyedOutput[*checkout.Refund], error) {
	if in.IdempotencyKey == "" {
		return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
	}
	who := caller(ctx)
	r, replayed, err := s.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: who.TenantID, OrderID: in.ID,
		TicketIDs: in.Body.TicketIDs, Reason: in.Body.Reason, RequestedBy: who.actor(), IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return keyedAnswer(r, "/v1/tenant/refunds/"+r.ID.String(), http.StatusAccepted, replayed), nil
}

// RefundPath names a refund.
type RefundPath struct {
	ID uuid.UUID `path:"id" format:"uuid" doc:"Refund id"`
}

// getRefund serves GET /v1/tenant/refunds/{id}.
func (s *Server) getRefund(ctx context.Context, in *RefundPath) (*struct{ Body *checkout.Refund }, error) {
	r, err := s.Checkout.GetRefund(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Refund }{r}, nil
}

// retryRefund serves POST /v1/tenant/refunds/{id}/retry.
func (s *Server) retryRefund(ctx context.Context, in *RefundPath) (*struct{ Body *checkout.Refund }, error) {
	r, err := s.Checkout.RetryRefund(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Refund }{r}, nil
}

// settleRefund serves POST /v1/tenant/refunds/{id}/settle.
func (s *Server) settleRefund(ctx context.Context, in *struct {
	RefundPath
	Body struct {
		Note string `json:"note" minLength:"1" maxLength:"500" pattern:"^[^\\p{Cc}]+$" doc:"How the money was given back outside the provider"`
	}
}) (*struct{ Body *checkout.Refund }, error) {
	r, err := s.Checkout.SettleRefund(ctx, caller(ctx).TenantID, in.ID, in.Body.Note)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Refund }{r}, nil
}

// resendTickets serves POST /v1/tenant/orders/{id}/tickets/resend.
func (s *Server) resendTickets(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Status int }, error) {
	if err := s.Checkout.ResendTickets(ctx, caller(ctx).TenantID, in.ID); err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Status int }{http.StatusAccepted}, nil
}

// attendeesCSV serves GET /v1/products/{id}/attendees.csv.
func (s *Server) attendeesCSV(ctx context.Context, in *ProductPath) (*download, error) {
	tenantID := caller(ctx).TenantID
	if _, err := s.Products.Get(ctx, tenantID, in.ID); err != nil {
		return nil, s.toProblem(err)
	}
	var b bytes.Buffer
	if err := s.Checkout.ExportAttendees(ctx, tenantID, in.ID, &b); err != nil {
		return nil, s.toProblem(err)
	}
	return attachment("text/csv; charset=utf-8", "attendees-"+in.ID.String()+".csv", b.Bytes()), nil
}

// cancelOrder serves POST /v1/orders/{id}/cancel.
func (s *Server) cancelOrder(ctx context.Context, in *struct {
	ID             uuid.UUID `path:"id" format:"uuid"`
	IdempotencyKey string    `header:"Idempotency-Key" maxLength:"200" doc:"Required: the same key answers with the same cancellation"`
}) (*keyedOutput[*checkout.Refund], error) {
	if in.IdempotencyKey == "" {
		return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
	}
	who := caller(ctx)
	r, replayed, err := s.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: who.TenantID, OrderID: in.ID,
		BuyerID: who.BuyerID, Reason: "cancelled by the buyer", RequestedBy: "buyer " + who.BuyerID,
		IdempotencyKey: "cancel:" + who.BuyerID + ":" + in.IdempotencyKey})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return keyedAnswer(r, "/v1/orders/"+in.ID.String(), http.StatusAccepted, replayed), nil
}

// cancelDate serves POST /v1/products/{id}/cancellation.
func (s *Server) cancelDate(ctx context.Context, in *struct {
	ProductPath
	Body struct {
		Reason string `json:"reason" minLength:"1" maxLength:"500" pattern:"^[^\\p{Cc}]+$" doc:"Why: told to every buyer in the cancellation mail"`
	}
}) (*struct {
	Status int
	Body   *checkout.CancelProgress
}, error) {
	who := caller(ctx)
	p, err := s.Checkout.CancelDate(ctx, who.TenantID, in.ID, in.Body.Reason, who.actor())
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct {
		Status int
		Body   *checkout.CancelProgress
	}{http.StatusAccepted, p}, nil
}

// dateCancellation serves GET /v1/products/{id}/cancellation.
func (s *Server) dateCancellation(ctx context.Context, in *ProductPath) (*struct{ Body *checkout.CancelProgress }, error) {
	p, err := s.Checkout.CancelProgressOf(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.CancelProgress }{p}, nil
}
