package payment

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Event is a verified webhook event, reduced to what checkout needs: it
// names the payment; what happened is re-read from the provider.
type Event struct {
	ID        string
	Type      string
	PaymentID string
	// Key is the authorization's idempotency key when the event carries it.
	Key string
}

// ErrMalformedEvent is a correctly signed body that is not an event.
var ErrMalformedEvent = errors.New("malformed webhook event")

// WebhookParser verifies and decodes a provider's webhooks.
type WebhookParser interface {
	ParseWebhook(h http.Header, body []byte, secrets []string, now time.Time) (Event, error)
}

// ParseWebhook verifies the simulator's signature and decodes the event.
func (*Sim) ParseWebhook(h http.Header, body []byte, secrets []string, now time.Time) (Event, error) {
	if err := Verify(h.Get(SignatureHeader), body, secrets, DefaultTolerance, now); err != nil {
		return Event{}, err
	}
	ev, err := ParseSimEvent(body)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformedEvent, err)
	}
	return Event{ID: ev.ID, Type: ev.Type, PaymentID: ev.Payment.ID, Key: ev.Payment.IdempotencyKey}, nil
}
