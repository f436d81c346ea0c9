// Package payment talks to payment providers: the Provider interface the
// checkout calls, the client of BoxOffice's provider simulator, and the
// verification of signed webhooks.
package payment

import (
	"context"
	"errors"
)

// Payment states at the provider.
const (
	StatusAuthorized = "authorized"
	StatusDeclined   = "declined"
	StatusCaptured   = "captured"
	StatusVoided     = "voided"
	StatusRefunded   = "refunded"
)

var (
	// ErrUnknown means the outcome is not known: a timeout, a 5xx or a broken
	// connection. The call may or may not have taken effect; ask with Get
	// (same idempotency key) before anything else.
	ErrUnknown = errors.New("payment outcome unknown")
	// ErrRateLimited means the provider refused the call without acting on
	// it; the same call may be retried later.
	ErrRateLimited = errors.New("payment provider rate limited the call")
	// ErrNotFound means the provider has no payment for the key or id.
	ErrNotFound = errors.New("payment not found at provider")
	// ErrRejected means the provider refused the call as invalid (a state
	// rule, an idempotency key reused with other parameters).
	ErrRejected = errors.New("payment call rejected by provider")
)

// Payment is a payment as the provider reports it.
type Payment struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotencyKey"`
	Status         string `json:"status"`
	AmountCents    int64  `json:"amount"`
	Currency       string `json:"currency"`
	DeclineReason  string `json:"declineReason,omitempty"`
}

// AuthorizeRequest asks to hold funds without capturing them.
type AuthorizeRequest struct {
	// Key is the idempotency key: the same key always means the same
	// authorization.
	Key           string
	AmountCents   int64
	Currency      string
	PaymentMethod string
	OrderID       string
}

// Refund outcomes at the provider.
const (
	RefundSucceeded = "succeeded"
	RefundFailed    = "failed"
)

// Refund is a refund as the provider reports it.
type Refund struct {
	ID             string `json:"id"`
	PaymentID      string `json:"paymentId"`
	IdempotencyKey string `json:"idempotencyKey"`
	AmountCents    int64  `json:"amount"`
	Currency       string `json:"currency"`
	Status         string `json:"status"`
	FailureReason  string `json:"failureReason,omitempty"`
}

// RefundRequest gives back some or all of a captured payment.
type RefundRequest struct {
	PaymentID string
	// Key is the refund's own idempotency key: the same key always means
	// the same refund, so an unknown outcome is asked about with GetRefund,
	// never refunded again under another key.
	Key         string
	AmountCents int64
}

// Provider is a payment provider with authorize-then-capture. Every call is
// idempotent under its key.
type Provider interface {
	Name() string
	Authorize(ctx context.Context, r AuthorizeRequest) (Payment, error)
	// Get finds the authorization made with key (ErrNotFound if none).
	Get(ctx context.Context, key string) (Payment, error)
	Capture(ctx context.Context, paymentID, key string) (Payment, error)
	Void(ctx context.Context, paymentID, key string) (Payment, error)
	// Refund refunds r.AmountCents of a captured payment; a refusal that
	// took no money back is a Refund with status failed, not an error.
	Refund(ctx context.Context, r RefundRequest) (Refund, error)
	// GetRefund finds the refund made with key (ErrNotFound if none).
	GetRefund(ctx context.Context, key string) (Refund, error)
}
