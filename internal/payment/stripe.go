package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Stripe is the Stripe adapter: PaymentIntents with manual capture, every
// call with an idempotency key, webhooks verified with Stripe's signature.
type Stripe struct {
	client *stripe.Client
}

// metadataKey carries BoxOffice's idempotency key on the PaymentIntent, so
// an unknown outcome can be resolved by searching for it.
const metadataKey = "boxoffice_key"

// NewStripe returns the adapter. apiURL overrides Stripe's address (for
// stripe-mock); empty means api.stripe.com.
func NewStripe(secretKey, apiURL string) *Stripe {
	opts := []stripe.ClientOption{}
	if apiURL != "" {
		opts = append(opts, stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
			URL: stripe.String(apiURL), MaxNetworkRetries: stripe.Int64(0),
		})))
	}
	return &Stripe{client: stripe.NewClient(secretKey, opts...)}
}

// Name is "stripe".
func (*Stripe) Name() string { return "stripe" }

// Authorize creates and confirms a PaymentIntent with manual capture.
func (s *Stripe) Authorize(ctx context.Context, r AuthorizeRequest) (Payment, error) {
	params := &stripe.PaymentIntentCreateParams{
		Amount:        stripe.Int64(r.AmountCents),
		Currency:      stripe.String(strings.ToLower(r.Currency)),
		PaymentMethod: stripe.String(r.PaymentMethod),
		Confirm:       stripe.Bool(true),
		CaptureMethod: stripe.String(string(stripe.PaymentIntentCaptureMethodManual)),
	}
	params.AddMetadata(metadataKey, r.Key)
	params.AddMetadata("order_id", r.OrderID)
	params.SetIdempotencyKey(r.Key)
	pi, err := s.client.V1PaymentIntents.Create(ctx, params)
	return s.result(r.Key, pi, err)
}

// Get finds the PaymentIntent created with key.
func (s *Stripe) Get(ctx context.Context, key string) (Payment, error) {
	params := &stripe.PaymentIntentSearchParams{}
	params.Query = fmt.Sprintf("metadata['%s']:'%s'", metadataKey, key)
	for pi, err := range s.client.V1PaymentIntents.Search(ctx, params) {
		return s.result(key, pi, err)
	}
	return Payment{}, ErrNotFound
}

// Capture captures a PaymentIntent.
func (s *Stripe) Capture(ctx context.Context, paymentID, key string) (Payment, error) {
	params := &stripe.PaymentIntentCaptureParams{}
	params.SetIdempotencyKey(key)
	pi, err := s.client.V1PaymentIntents.Capture(ctx, paymentID, params)
	return s.result(key, pi, err)
}

// Void cancels an uncaptured PaymentIntent.
func (s *Stripe) Void(ctx context.Context, paymentID, key string) (Payment, error) {
	params := &stripe.PaymentIntentCancelParams{}
	params.SetIdempotencyKey(key)
	pi, err := s.client.V1PaymentIntents.Cancel(ctx, paymentID, params)
	return s.result(key, pi, err)
}

// Refund refunds r.AmountCents of a captured PaymentIntent, with BoxOffice's
// key in the refund's metadata so that GetRefund finds it.
func (s *Stripe) Refund(ctx context.Context, r RefundRequest) (Refund, error) {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.PaymentID), Amount: stripe.Int64(r.AmountCents)}
	params.AddMetadata(metadataKey, r.Key)
	params.SetIdempotencyKey(r.Key)
	re, err := s.client.V1Refunds.Create(ctx, params)
	if err != nil {
		return Refund{}, mapStripeError(err)
	}
	return refundOf(r.Key, re)
}

// GetRefund finds the refund created with key among the refunds of the
// most recent payments (Stripe has no search over refunds): a refund is
// looked up soon after it was asked for.
func (s *Stripe) GetRefund(ctx context.Context, key string) (Refund, error) {
	params := &stripe.RefundListParams{}
	params.Limit = stripe.Int64(100)
	n := 0
	for re, err := range s.client.V1Refunds.List(ctx, params) {
		if err != nil {
			return Refund{}, mapStripeError(err)
		}
		if re.Metadata[metadataKey] == key {
			return refundOf(key, re)
		}
		if n++; n >= 1000 {
			break
		}
	}
	return Refund{}, ErrNotFound
}

func refundOf(key string, re *stripe.Refund) (Refund, error) {
	r := Refund{ID: re.ID, IdempotencyKey: key, AmountCents: re.Amount, Currency: strings.ToUpper(string(re.Currency))}
	if re.PaymentIntent != nil {
		r.PaymentID = re.PaymentIntent.ID
	}
	switch re.Status {
	case stripe.RefundStatusSucceeded:
		r.Status = RefundSucceeded
	case stripe.RefundStatusFailed, stripe.RefundStatusCanceled:
		r.Status, r.FailureReason = RefundFailed, string(re.FailureReason)
	default: // pending, requires_action: not decided yet
		return Refund{}, fmt.Errorf("%w: refund %s is %s", ErrUnknown, re.ID, re.Status)
	}
	return r, nil
}

func (s *Stripe) result(key string, pi *stripe.PaymentIntent, err error) (Payment, error) {
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.Type == stripe.ErrorTypeCard {
			return Payment{IdempotencyKey: key, Status: StatusDeclined, DeclineReason: string(se.Code)}, nil
		}
		return Payment{}, mapStripeError(err)
	}
	p := Payment{ID: pi.ID, IdempotencyKey: key, AmountCents: pi.Amount, Currency: string(pi.Currency)}
	switch pi.Status {
	case stripe.PaymentIntentStatusRequiresCapture:
		p.Status = StatusAuthorized
	case stripe.PaymentIntentStatusSucceeded:
		p.Status = StatusCaptured
	case stripe.PaymentIntentStatusCanceled:
		p.Status = StatusVoided
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		p.Status = StatusDeclined
	default: // processing, requires_action, requires_confirmation: not decided yet
		return Payment{}, fmt.Errorf("%w: payment intent %s is %s", ErrUnknown, pi.ID, pi.Status)
	}
	return p, nil
}

// mapStripeError sorts Stripe's errors into the Provider contract.
func mapStripeError(err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("%w: %w", ErrUnknown, err) // network: the call may have happened
	}
	switch {
	case se.HTTPStatusCode == http.StatusTooManyRequests:
		return ErrRateLimited
	case se.HTTPStatusCode == http.StatusNotFound:
		return ErrNotFound
	case se.HTTPStatusCode >= 500 || se.HTTPStatusCode == 0:
		return fmt.Errorf("%w: %w", ErrUnknown, err)
	default:
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
}

// ParseWebhook verifies the Stripe-Signature header with any of the secrets
// (Stripe's own scheme: timestamp tolerance 5 minutes, checked by Stripe's
// library against the clock) and decodes the PaymentIntent the event is
// about.
func (*Stripe) ParseWebhook(h http.Header, body []byte, secrets []string, _ time.Time) (Event, error) {
	var ev stripe.Event
	err := ErrBadSignature
	for _, secret := range secrets {
		ev, err = webhook.ConstructEventWithOptions(body, h.Get("Stripe-Signature"), secret,
			webhook.ConstructEventOptions{Tolerance: DefaultTolerance, IgnoreAPIVersionMismatch: true})
		if err == nil {
			break
		}
	}
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	var pi struct {
		ID       string            `json:"id"`
		Object   string            `json:"object"`
		Metadata map[string]string `json:"metadata"`
	}
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &pi) != nil || pi.Object != "payment_intent" {
		return Event{}, fmt.Errorf("%w: not a payment intent event", ErrMalformedEvent)
	}
	return Event{ID: ev.ID, Type: string(ev.Type), PaymentID: pi.ID, Key: pi.Metadata[metadataKey]}, nil
}
