package payment_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"boxoffice/internal/config"
	"boxoffice/internal/payment"
)

func TestStripeWebhook(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1","object":"event","type":"payment_intent.amount_capturable_updated","api_version":"2025-01-27",
		"data":{"object":{"id":"pi_1","object":"payment_intent","metadata":{"boxoffice_key":"att_1"}}}}`)
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_new", Timestamp: time.Now()})
	h := http.Header{}
	h.Set("Stripe-Signature", signed.Header)
	s := payment.NewStripe("sk_test", "")

	ev, err := s.ParseWebhook(h, body, []string{"whsec_old", "whsec_new"}, time.Now())
	require.NoError(t, err, "any of the rotating secrets")
	require.Equal(t, payment.Event{ID: "evt_1", Type: "payment_intent.amount_capturable_updated", PaymentID: "pi_1", Key: "att_1"}, ev)

	_, err = s.ParseWebhook(h, body, []string{"whsec_other"}, time.Now())
	require.ErrorIs(t, err, payment.ErrBadSignature)
	_, err = s.ParseWebhook(h, append(body, ' '), []string{"whsec_new"}, time.Now())
	require.ErrorIs(t, err, payment.ErrBadSignature, "tampered body")
	stale := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_new", Timestamp: time.Now().Add(-10 * time.Minute)})
	h.Set("Stripe-Signature", stale.Header)
	_, err = s.ParseWebhook(h, body, []string{"whsec_new"}, time.Now())
	require.ErrorIs(t, err, payment.ErrBadSignature, "stale")
}

// TestStripeRequestShape runs the adapter against stripe-mock, which checks
// request shapes against Stripe's OpenAPI spec (it keeps no state). `make
// test` builds the pinned version; outside it, one on PATH is used.
func TestStripeRequestShape(t *testing.T) {
	t.Parallel()
	bin := config.StripeMock()
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("stripe-mock"); err != nil {
			t.Skip("stripe-mock not found (make test builds it; BOXOFFICE_STRIPE_MOCK names one): request shapes not checked")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "-http-port", fmt.Sprint(port))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)

	s := payment.NewStripe("sk_test_123", url)
	ctx := context.Background()
	p, err := s.Authorize(ctx, payment.AuthorizeRequest{Key: "att_1", AmountCents: 1000, Currency: "EUR",
		PaymentMethod: "pm_card_visa", OrderID: "o1"})
	require.NoError(t, err, "stripe-mock accepted the PaymentIntent create")
	require.NotEmpty(t, p.ID)
	_, err = s.Capture(ctx, p.ID, "att_1:capture")
	require.NoError(t, err)
	_, err = s.Void(ctx, p.ID, "att_1:void")
	require.NoError(t, err)
	// stripe-mock keeps no state: it checks that the refund's shape (a
	// partial amount, the key in metadata) is one Stripe accepts.
	_, err = s.Refund(ctx, payment.RefundRequest{PaymentID: p.ID, Key: "ref_1", AmountCents: 400})
	require.NoError(t, err)
}
