package api

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/login"
	"boxoffice/internal/payment"
	"boxoffice/internal/qr"
	"boxoffice/internal/reservation"
)

// OrderBody pays for a hold.
type OrderBody struct {
	HoldID        uuid.UUID `json:"holdId"`
	PaymentMethod string    `json:"paymentMethod" minLength:"1" maxLength:"200" doc:"A provider payment method token; with the simulator sim_ok, sim_decline, sim_timeout_after_auth, sim_error_500, sim_rate_limited, sim_capture_fails, sim_refund_timeout, sim_refund_fails"`
	Email         string    `json:"email,omitempty" format:"email" maxLength:"320" doc:"Where the tickets are sent"`
	DiscountCode  string    `json:"discountCode,omitempty" maxLength:"40" doc:"A discount code: its discount comes off the tickets' prices, one of its uses taken with the order (422 CODE_… when it does not apply)"`
}

// keyedOutput is the answer to a write made once per Idempotency-Key: its
// status the first time (202 or 201), 200 with the same body when the key
// is replayed, and where to read what it made.
type keyedOutput[T any] struct {
	Status   int
	Location string `header:"Location"`
	Body     T
}

// keyedAnswer answers a keyed write that made body, readable at location.
func keyedAnswer[T any](body T, location string, first int, replayed bool) *keyedOutput[T] {
	if replayed {
		first = http.StatusOK
	}
	return &keyedOutput[T]{Status: first, Location: location, Body: body}
}

// createOrder serves POST /v1/orders.
func (s *Server) createOrder(ctx context.Context, in *struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Required; unique per buyer"`
	AccessToken    string `header:"X-Access-Token" maxLength:"2000" doc:"Required when the product's waiting room is on"`
	Body           OrderBody
}) (*keyedOutput[*checkout.Order], error) {
	if in.IdempotencyKey == "" {
		return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
	}
	who := caller(ctx)
	if err := s.checkHoldAccess(ctx, who, in.Body.HoldID, in.AccessToken); err != nil {
		return nil, err
	}
	o, replayed, err := s.Checkout.Create(ctx, checkout.CreateParams{TenantID: who.TenantID, BuyerID: who.BuyerID,
		IdempotencyKey: in.IdempotencyKey, HoldID: in.Body.HoldID, PaymentMethod: in.Body.PaymentMethod, Email: in.Body.Email,
		DiscountCode: in.Body.DiscountCode})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return keyedAnswer(o, "/v1/orders/"+o.ID.String(), http.StatusAccepted, replayed), nil
}

// getOrder serves GET /v1/orders/{id}. With Prefer: wait=N a
// PENDING_PAYMENT order's read waits up to N seconds for the payment's
// outcome, woken by the commit that changed the order's status
// (checkout.AwaitOutcome), and answers with the order as it is then.
func (s *Server) getOrder(ctx context.Context, in *struct {
	ID     uuid.UUID `path:"id" format:"uuid"`
	Prefer string    `header:"Prefer" doc:"wait=N (RFC 7240): answer as soon as the order leaves PENDING_PAYMENT, or after N seconds (at most 20) with the order then"`
}) (*orderOutput, error) {
	who := caller(ctx)
	wait := preferredWait(in.Prefer)
	if wait <= 0 {
		o, err := s.Checkout.Get(ctx, who.TenantID, in.ID, who.BuyerID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &orderOutput{Body: o}, nil
	}
	ctx, cancel := waitContext(ctx, wait)
	defer cancel()
	read := func() (*checkout.Order, error) { return s.Checkout.Get(ctx, who.TenantID, in.ID, who.BuyerID) }
	o, applied, err := checkout.AwaitOutcome(ctx, s.orderChanges, in.ID, wait, read, s.stopping)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &orderOutput{Body: o}
	if applied {
		out.PreferenceApplied = preferenceApplied(wait)
	}
	return out, nil
}

type orderOutput struct {
	PreferenceApplied string `header:"Preference-Applied"`
	Body              *checkout.Order
}

// paymentWebhook serves POST /v1/webhooks/payments/{provider}.
func (s *Server) paymentWebhook(ctx context.Context, in *struct {
	Provider        string `path:"provider"`
	Signature       string `header:"BoxOffice-Signature" doc:"The simulator's signature"`
	StripeSignature string `header:"Stripe-Signature" doc:"Stripe's signature"`
	RawBody         []byte
}) (*struct{ Body WebhookReceived }, error) {
	parser, ok := payment.Unwrap(s.Checkout.Provider()).(payment.WebhookParser)
	if in.Provider != s.Checkout.Provider().Name() || !ok {
		return nil, problem(http.StatusNotFound, "NOT_FOUND", "no such payment provider")
	}
	h := http.Header{}
	h.Set(payment.SignatureHeader, in.Signature)
	h.Set("Stripe-Signature", in.StripeSignature)
	ev, err := parser.ParseWebhook(h, in.RawBody, s.WebhookSecrets, time.Now())
	if errors.Is(err, payment.ErrMalformedEvent) {
		return nil, problem(http.StatusBadRequest, "MALFORMED_EVENT", err.Error())
	}
	if err != nil {
		// Why it failed (clock skew, which secret) would coach a forger:
		// the operator reads it in the log, the sender gets the code.
		s.Metrics.Webhook("bad_signature")
		s.Logger.WarnContext(ctx, "webhook signature refused", "provider", in.Provider, "reason", err)
		return nil, problem(http.StatusUnauthorized, "BAD_SIGNATURE", "signature verification failed")
	}
	stored, err := s.Checkout.RecordWebhook(ctx, checkout.WebhookEvent{Provider: in.Provider, ID: ev.ID, Type: ev.Type,
		PaymentID: ev.PaymentID, Key: ev.Key, Payload: in.RawBody})
	if err != nil {
		return nil, s.toProblem(err)
	}
	s.Metrics.Webhook(map[bool]string{true: "accepted", false: "duplicate"}[stored])
	return &struct{ Body WebhookReceived }{WebhookReceived{Received: true, Duplicate: !stored}}, nil
}

// WebhookReceived acknowledges a provider's event.
type WebhookReceived struct {
	Received  bool `json:"received"`
	Duplicate bool `json:"duplicate" doc:"The event was recorded before: nothing done again"`
}

// verifyTicket serves GET /v1/tickets/verify.
func (s *Server) verifyTicket(ctx context.Context, in *struct {
	Code string `query:"code" maxLength:"100"`
}) (*struct{ Body checkout.VerifiedTicket }, error) {
	v, err := s.Checkout.VerifyTicket(ctx, caller(ctx).TenantID, in.Code)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body checkout.VerifiedTicket }{v}, nil
}

// checkInTicket serves POST /v1/tickets/check-in.
func (s *Server) checkInTicket(ctx context.Context, in *struct {
	Body struct {
		Code string `json:"code" minLength:"1" maxLength:"100"`
	}
}) (*struct{ Body checkout.CheckInResult }, error) {
	who := caller(ctx)
	res, err := s.Checkout.CheckIn(ctx, who.TenantID, in.Body.Code, who.Role)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body checkout.CheckInResult }{res}, nil
}

// opsCheckout serves GET /v1/ops/checkout.
func (s *Server) opsCheckout(ctx context.Context, _ *struct{}) (*checkoutState, error) {
	return s.checkoutPaused(ctx)
}

// opsCheckoutPause serves POST /v1/ops/checkout/pause.
func (s *Server) opsCheckoutPause(ctx context.Context, in *struct {
	Body *struct {
		Reason         string `json:"reason,omitempty" maxLength:"200" pattern:"^[^\\p{Cc}]*$" doc:"Why; shown to operators and in GET /v1/ops/checkout, never to shoppers"`
		ShopperMessage string `json:"shopperMessage,omitempty" maxLength:"300" pattern:"^[^\\p{Cc}]*$" doc:"What shoppers are told when an order is refused meanwhile; default: a short note that payments are paused and their seats stay held"`
	}
}) (*checkoutState, error) {
	reason, message := "", ""
	if in.Body != nil {
		reason, message = strings.TrimSpace(in.Body.Reason), strings.TrimSpace(in.Body.ShopperMessage)
	}
	return s.setCheckoutPaused(ctx, true, cmp.Or(reason, "paused by an operator"), message)
}

// opsCheckoutResume serves POST /v1/ops/checkout/resume.
func (s *Server) opsCheckoutResume(ctx context.Context, _ *struct{}) (*checkoutState, error) {
	return s.setCheckoutPaused(ctx, false, "", "")
}

type checkoutState struct {
	Body struct {
		Paused bool   `json:"paused"`
		Reason string `json:"reason,omitempty"`
	}
}

// checkoutPaused answers whether new checkouts are paused, and why.
func (s *Server) checkoutPaused(ctx context.Context) (*checkoutState, error) {
	paused, reason, err := s.Checkout.Paused(ctx)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &checkoutState{}
	out.Body.Paused, out.Body.Reason = paused, reason
	return out, nil
}

// setCheckoutPaused pauses or resumes new checkouts (platform admin only).
func (s *Server) setCheckoutPaused(ctx context.Context, pause bool, reason, shopperMessage string) (*checkoutState, error) {
	if !caller(ctx).Admin {
		return nil, errAdminOnly
	}
	if err := s.Checkout.SetPaused(ctx, pause, reason, shopperMessage); err != nil {
		return nil, s.toProblem(err)
	}
	return s.checkoutPaused(ctx)
}

// checkoutProblem maps checkout errors; nil when err is not one of them.
func checkoutProblem(err error) *Problem {
	switch {
	case errors.Is(err, checkout.ErrCheckoutPaused):
		return problem(http.StatusServiceUnavailable, "CHECKOUT_PAUSED", err.Error())
	case errors.Is(err, checkout.ErrHoldNotActive):
		return problem(http.StatusConflict, "HOLD_NOT_ACTIVE", err.Error())
	case errors.Is(err, checkout.ErrOrderExists):
		return problem(http.StatusConflict, "ORDER_EXISTS", err.Error())
	case errors.Is(err, checkout.ErrIdempotencyConflict):
		return problem(http.StatusConflict, "IDEMPOTENCY_KEY_REUSED", err.Error())
	case errors.Is(err, checkout.ErrNotRefundable):
		return problem(http.StatusConflict, "ORDER_NOT_REFUNDABLE", err.Error())
	case errors.Is(err, checkout.ErrRefundInProgress):
		return problem(http.StatusConflict, "REFUND_IN_PROGRESS", err.Error())
	case errors.Is(err, checkout.ErrTicketNotRefundable):
		return problem(http.StatusUnprocessableEntity, "TICKET_NOT_REFUNDABLE", err.Error())
	case errors.Is(err, checkout.ErrCancellationClosed):
		return problem(http.StatusConflict, "CANCELLATION_CLOSED", err.Error())
	case errors.Is(err, checkout.ErrNothingToRefund):
		return problem(http.StatusUnprocessableEntity, "NOTHING_TO_REFUND", err.Error())
	case errors.Is(err, checkout.ErrNoTickets):
		return problem(http.StatusConflict, "NO_TICKETS", err.Error())
	case errors.Is(err, checkout.ErrNoDate):
		return problem(http.StatusConflict, "DATE_NOT_SET", err.Error())
	case errors.Is(err, checkout.ErrNoTicketsToSend):
		return problem(http.StatusConflict, "NO_TICKETS_TO_SEND", err.Error())
	case errors.Is(err, checkout.ErrRefundNotFailed):
		return problem(http.StatusConflict, "REFUND_NOT_FAILED", err.Error())
	case errors.Is(err, checkout.ErrTransferClosed):
		return problem(http.StatusConflict, "TRANSFER_CLOSED", err.Error())
	case errors.Is(err, checkout.ErrTransferLimit):
		return problem(http.StatusConflict, "TRANSFER_LIMIT", err.Error())
	case errors.Is(err, checkout.ErrTransferToSelf):
		return problem(http.StatusUnprocessableEntity, "TRANSFER_TO_SELF", err.Error())
	case errors.Is(err, checkout.ErrTicketNotTransferable):
		return problem(http.StatusConflict, "TICKET_NOT_TRANSFERABLE", err.Error())
	case errors.Is(err, reservation.ErrReceiverLimit):
		return problem(http.StatusConflict, "RECEIVER_LIMIT", err.Error())
	case errors.Is(err, login.ErrIdentifier):
		return problem(http.StatusUnprocessableEntity, "INVALID_EMAIL", "give a valid e-mail address")
	}
	return nil
}

// checkHoldAccess enforces the waiting room of the hold's product on checkout.
func (s *Server) checkHoldAccess(ctx context.Context, who principal, holdID uuid.UUID, token string) error {
	productID, offered, err := reservation.HoldProduct(ctx, s.Pool, who.TenantID, who.BuyerID, holdID)
	if errors.Is(err, db.ErrNotFound) {
		return nil // unknown hold: checkout answers 404 itself
	}
	if err != nil {
		// Any other failure must not wave the buyer past the room's check.
		return s.toProblem(err)
	}
	if offered {
		return nil // a waiting-list offer admitted the hold, as a room's token would
	}
	p, err := s.productCache.Get(ctx, productID)
	if err != nil {
		return s.toProblem(err)
	}
	return s.checkAccess(ctx, p, who, token)
}

// OrderList is a buyer's orders.
type OrderList struct {
	Orders []*checkout.Order `json:"orders"`
}

// listOrders serves GET /v1/orders.
func (s *Server) listOrders(ctx context.Context, in *struct {
	Limit int `query:"limit" minimum:"1" maximum:"100" default:"50"`
}) (*struct {
	CacheControl string `header:"Cache-Control"`
	Body         OrderList
}, error) {
	who := caller(ctx)
	list, err := s.Checkout.ListForBuyer(ctx, who.TenantID, who.BuyerID, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct {
		CacheControl string `header:"Cache-Control"`
		Body         OrderList
	}{CacheControl: "private, no-cache", Body: OrderList{Orders: list}}, nil
}

// ticketQR serves GET /v1/tickets/{id}/qr.svg.
func (s *Server) ticketQR(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid" doc:"Ticket id"`
}) (*struct {
	ContentType  string `header:"Content-Type"`
	CacheControl string `header:"Cache-Control"`
	Body         []byte
}, error) {
	who := caller(ctx)
	code, err := s.Checkout.TicketCode(ctx, who.TenantID, who.BuyerID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	svg, err := qr.SVG(code)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct {
		ContentType  string `header:"Content-Type"`
		CacheControl string `header:"Cache-Control"`
		Body         []byte
	}{ContentType: "image/svg+xml", CacheControl: "private, max-age=3600", Body: svg}, nil
}

// searchOrders serves GET /v1/tenant/orders.
func (s *Server) searchOrders(ctx context.Context, in *struct {
	Query string `query:"q" maxLength:"200" doc:"An order's reference (ref, as its e-mails print it) or id, an e-mail, buyer id, number or seat; empty lists the newest"`
	Limit int    `query:"limit" minimum:"1" maximum:"200" default:"50"`
}) (*struct{ Body []checkout.OrderSummary }, error) {
	list, err := s.Checkout.Search(ctx, caller(ctx).TenantID, in.Query, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	for i := range list {
		if err := s.nameOrder(ctx, &list[i]); err != nil {
			return nil, s.toProblem(err)
		}
	}
	return &struct{ Body []checkout.OrderSummary }{list}, nil
}

// nameOrder says what an order is for: its product's name and start, read
// through the product cache (an order's list names few products).
func (s *Server) nameOrder(ctx context.Context, o *checkout.OrderSummary) error {
	p, err := s.productCache.Get(ctx, o.ProductID)
	if errors.Is(err, db.ErrNotFound) {
		return nil // the order stays findable, nameless
	}
	if err != nil {
		return err
	}
	o.Product, o.StartsAt = p.Name, p.StartsAt
	return nil
}

// orderTimeline serves GET /v1/tenant/orders/{id}.
func (s *Server) orderTimeline(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body *checkout.Timeline }, error) {
	t, err := s.Checkout.OrderTimeline(ctx, caller(ctx).TenantID, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	if err := s.nameOrder(ctx, &t.Order); err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *checkout.Timeline }{t}, nil
}
