package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Sim is the client of BoxOffice's payment provider simulator
// (internal/pspsim), spoken to over HTTP like a real provider.
type Sim struct {
	base   string
	client *http.Client
}

// NewSim returns a client of the simulator at base (e.g. http://127.0.0.1:8090).
// timeout bounds each call; a call that runs out is ErrUnknown.
func NewSim(base string, timeout time.Duration) *Sim {
	return &Sim{base: base, client: &http.Client{Timeout: timeout}}
}

// Name is "sim".
func (*Sim) Name() string { return "sim" }

// Authorize asks for an authorization; a decline is a Payment with status
// declined, not an error.
func (s *Sim) Authorize(ctx context.Context, r AuthorizeRequest) (Payment, error) {
	body, _ := json.Marshal(map[string]any{"amount": r.AmountCents, "currency": r.Currency,
		"paymentMethod": r.PaymentMethod, "orderId": r.OrderID})
	return s.call(ctx, http.MethodPost, "/v1/authorizations", r.Key, body)
}

// Get finds the authorization made with key.
func (s *Sim) Get(ctx context.Context, key string) (Payment, error) {
	return s.call(ctx, http.MethodGet, "/v1/authorizations?idempotency_key="+url.QueryEscape(key), "", nil)
}

// Capture captures an authorization.
func (s *Sim) Capture(ctx context.Context, paymentID, key string) (Payment, error) {
	return s.call(ctx, http.MethodPost, "/v1/payments/"+url.PathEscape(paymentID)+"/capture", key, nil)
}

// Void releases an authorization.
func (s *Sim) Void(ctx context.Context, paymentID, key string) (Payment, error) {
	return s.call(ctx, http.MethodPost, "/v1/payments/"+url.PathEscape(paymentID)+"/void", key, nil)
}

// Refund refunds some or all of a capture; a refusal is a Refund with
// status failed.
func (s *Sim) Refund(ctx context.Context, r RefundRequest) (Refund, error) {
	body, _ := json.Marshal(map[string]any{"amount": r.AmountCents})
	return simCall[Refund](ctx, s, http.MethodPost, "/v1/payments/"+url.PathEscape(r.PaymentID)+"/refunds", r.Key, body)
}

// GetRefund finds the refund made with key.
func (s *Sim) GetRefund(ctx context.Context, key string) (Refund, error) {
	return simCall[Refund](ctx, s, http.MethodGet, "/v1/refunds?idempotency_key="+url.QueryEscape(key), "", nil)
}

func (s *Sim) call(ctx context.Context, method, path, key string, body []byte) (Payment, error) {
	return simCall[Payment](ctx, s, method, path, key, body)
}

// simCall makes one call and decodes its answer: a payment or a refund. 402
// carries a declined payment or a failed refund.
func simCall[T any](ctx context.Context, s *Sim, method, path, key string, body []byte) (T, error) {
	var zero T
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return zero, fmt.Errorf("payment request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// Timeout, refused or cut connection: the call may have happened.
		return zero, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return zero, fmt.Errorf("%w: reading response: %w", ErrUnknown, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK, resp.StatusCode == http.StatusCreated, resp.StatusCode == http.StatusPaymentRequired:
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, fmt.Errorf("%w: decoding response: %w", ErrUnknown, err)
		}
		return v, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return zero, ErrRateLimited
	case resp.StatusCode == http.StatusNotFound:
		return zero, ErrNotFound
	case resp.StatusCode >= 500:
		return zero, fmt.Errorf("%w: status %d", ErrUnknown, resp.StatusCode)
	default:
		return zero, fmt.Errorf("%w: status %d: %s", ErrRejected, resp.StatusCode, bytes.TrimSpace(raw))
	}
}

// IsDefinitive reports whether err leaves no doubt that the call did not
// take effect (so a new attempt is safe).
func IsDefinitive(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrRejected) || errors.Is(err, ErrNotFound)
}

// SimEvent is a webhook body of the simulator.
type SimEvent struct {
	ID      string  `json:"id"`
	Type    string  `json:"type"`
	Created int64   `json:"created"`
	Payment Payment `json:"payment"`
}

// ParseSimEvent decodes a simulator webhook body.
func ParseSimEvent(body []byte) (SimEvent, error) {
	var ev SimEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, fmt.Errorf("webhook body: %w", err)
	}
	if ev.ID == "" || ev.Type == "" || ev.Payment.ID == "" {
		return ev, errors.New("webhook body: id, type and payment.id are required")
	}
	return ev, nil
}
