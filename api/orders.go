package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"boxoffice/internal/checkout"
	"boxoffice/internal/payment"
)

// OrderBody pays for a hold.
type OrderBody struct {
	HoldID        uuid.UUID `json:"holdId"`
	PaymentMethod string    `json:"paymentMethod" minLength:"1" maxLength:"200" doc:"A provider payment method token; with the simulator sim_ok, sim_decline, sim_timeout_after_auth, sim_error_500, sim_rate_limited, sim_capture_fails"`
	Email         string    `json:"email,omitempty" format:"email" maxLength:"320" doc:"Where the tickets are sent"`
}

type orderOutput struct {
	Status   int
	Location string `header:"Location"`
	Body     *checkout.Order
}

func (s *Server) registerOrders() {
	if s.Checkout == nil {
		return
	}
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-order",
		Method:        http.MethodPost,
		Path:          "/v1/orders",
		Summary:       "Pay for a hold: authorize, then confirm",
		Description:   "Answers 202 with the order PENDING_PAYMENT; poll GET /v1/orders/{id} until CONFIRMED, FAILED or EXPIRED. The same Idempotency-Key returns the same order (200). After a decline, a new key starts a new attempt with another payment method.",
		Tags:          []string{"Checkout"},
		DefaultStatus: http.StatusAccepted,
		Security:      security(schemeBuyer),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{400, 401, 404, 409, 422, 503},
	}, func(ctx context.Context, in *struct {
		IdempotencyKey string `header:"Idempotency-Key" maxLength:"200" doc:"Required; unique per buyer"`
		AccessToken    string `header:"X-Access-Token" maxLength:"2000" doc:"Required when the product's waiting room is on"`
		Body           OrderBody
	}) (*orderOutput, error) {
		if in.IdempotencyKey == "" {
			return nil, problem(http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED", "send an Idempotency-Key header")
		}
		who := caller(ctx)
		if err := s.checkHoldAccess(ctx, who, in.Body.HoldID, in.AccessToken); err != nil {
			return nil, err
		}
		o, replayed, err := s.Checkout.Create(ctx, checkout.CreateParams{TenantID: who.TenantID, BuyerID: who.BuyerID,
			IdempotencyKey: in.IdempotencyKey, HoldID: in.Body.HoldID, PaymentMethod: in.Body.PaymentMethod, Email: in.Body.Email})
		if err != nil {
			return nil, s.toProblem(err)
		}
		out := &orderOutput{Status: http.StatusAccepted, Location: "/v1/orders/" + o.ID.String(), Body: o}
		if replayed {
			out.Status = http.StatusOK
		}
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-order",
		Method:      http.MethodGet,
		Path:        "/v1/orders/{id}",
		Summary:     "An order with its numbers, payment state and, once confirmed, tickets",
		Tags:        []string{"Checkout"},
		Security:    security(schemeBuyer, schemeAPI),
		Errors:      []int{401, 403, 404},
	}, func(ctx context.Context, in *struct {
		ID uuid.UUID `path:"id"`
	}) (*struct{ Body *checkout.Order }, error) {
		who := caller(ctx)
		o, err := s.Checkout.Get(ctx, who.TenantID, in.ID, who.BuyerID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body *checkout.Order }{o}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID:  "payment-webhook",
		Method:       http.MethodPost,
		Path:         "/v1/webhooks/payments/{provider}",
		Summary:      "Receive a signed payment provider event",
		Description:  "The signature is checked over the raw body (HMAC-SHA256, timestamp within 5 minutes, any of the configured secrets). The event is stored and acknowledged, then processed in a job; duplicates are acknowledged and do nothing.",
		Tags:         []string{"Checkout"},
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{400, 401, 404},
	}, func(ctx context.Context, in *struct {
		Provider        string `path:"provider"`
		Signature       string `header:"BoxOffice-Signature" doc:"The simulator's signature"`
		StripeSignature string `header:"Stripe-Signature" doc:"Stripe's signature"`
		RawBody         []byte
	}) (*struct {
		Body struct {
			Received  bool `json:"received"`
			Duplicate bool `json:"duplicate"`
		}
	}, error) {
		parser, ok := s.Checkout.Provider().(payment.WebhookParser)
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
		out := &struct {
			Body struct {
				Received  bool `json:"received"`
				Duplicate bool `json:"duplicate"`
			}
		}{}
		out.Body.Received, out.Body.Duplicate = true, !stored
		s.Metrics.Webhook(map[bool]string{true: "accepted", false: "duplicate"}[stored])
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "verify-ticket",
		Method:      http.MethodGet,
		Path:        "/v1/tickets/verify",
		Summary:     "Check a ticket code (at the gate)",
		Description: "Valid when the code is signed by BoxOffice, was issued for one of the tenant's orders, and that order is still confirmed.",
		Tags:        []string{"Checkout"},
		Security:    security(schemeAPI, schemeOperator),
		Errors:      []int{401, 403},
	}, func(ctx context.Context, in *struct {
		Code string `query:"code" maxLength:"100"`
	}) (*struct{ Body checkout.VerifiedTicket }, error) {
		v, err := s.Checkout.VerifyTicket(ctx, caller(ctx).TenantID, in.Code)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body checkout.VerifiedTicket }{v}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "check-in-ticket",
		Method:      http.MethodPost,
		Path:        "/v1/tickets/check-in",
		Summary:     "Check a ticket in at the gate",
		Description: "The first scan of a valid ticket answers CHECKED_IN; later scans answer ALREADY_CHECKED_IN with the time of the first. Invalid, forged or cancelled tickets answer INVALID.",
		Tags:        []string{"Checkout"},
		Security:    security(schemeAPI, schemeOperator),
		Errors:      []int{401, 403, 422},
	}, func(ctx context.Context, in *struct {
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
	})

	type checkoutState struct {
		Body struct {
			Paused bool   `json:"paused"`
			Reason string `json:"reason,omitempty"`
		}
	}
	state := func(ctx context.Context) (*checkoutState, error) {
		paused, reason, err := s.Checkout.Paused(ctx)
		if err != nil {
			return nil, s.toProblem(err)
		}
		out := &checkoutState{}
		out.Body.Paused, out.Body.Reason = paused, reason
		return out, nil
	}
	huma.Register(s.api, huma.Operation{
		OperationID: "ops-checkout", Method: http.MethodGet, Path: "/v1/ops/checkout",
		Summary: "Whether new checkouts are paused", Tags: []string{"Operations"},
		Security: security(schemeAdmin, schemeOperator), Errors: []int{401, 403},
	}, func(ctx context.Context, _ *struct{}) (*checkoutState, error) { return state(ctx) })
	for _, action := range []string{"pause", "resume"} {
		huma.Register(s.api, huma.Operation{
			OperationID: "ops-checkout-" + action, Method: http.MethodPost, Path: "/v1/ops/checkout/" + action,
			Summary:     strings.ToUpper(action[:1]) + action[1:] + " new checkouts (platform admin)",
			Description: "Paused, POST /v1/orders answers 503 CHECKOUT_PAUSED; orders already started go on.",
			Tags:        []string{"Operations"}, Security: security(schemeAdmin, schemeOperator), Errors: []int{401, 403},
		}, func(ctx context.Context, _ *struct{}) (*checkoutState, error) {
			if !caller(ctx).Admin {
				return nil, errAdminOnly
			}
			reason := ""
			if action == "pause" {
				reason = "paused by an operator"
			}
			if err := s.Checkout.SetPaused(ctx, action == "pause", reason); err != nil {
				return nil, s.toProblem(err)
			}
			return state(ctx)
		})
	}
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
	}
	return nil
}

// checkHoldAccess enforces the waiting room of the hold's product on checkout.
func (s *Server) checkHoldAccess(ctx context.Context, who principal, holdID uuid.UUID, token string) error {
	var productID uuid.UUID
	err := s.Pool.QueryRow(ctx, `SELECT product_id FROM holds WHERE id = $1 AND tenant_id = $2 AND buyer_id = $3`,
		holdID, who.TenantID, who.BuyerID).Scan(&productID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // unknown hold: checkout answers 404 itself
	}
	if err != nil {
		// Any other failure must not wave the buyer past the room's check.
		return s.toProblem(fmt.Errorf("read hold %s: %w", holdID, err))
	}
	p, err := s.productCache.Get(ctx, productID)
	if err != nil {
		return s.toProblem(err)
	}
	return s.checkAccess(ctx, p, who, token)
}
