package checkout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/payment"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/tenant"
)

func (b *testBundle) call(t require.TestingT, method, path, token string, body any, headers ...string) (int, map[string]any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var r io.Reader
	if raw, ok := body.([]byte); ok {
		r = bytes.NewReader(raw)
	} else if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.apiURL+path, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// End to end over HTTP: reserve → HELD → order → CONFIRMED → tickets by mail,
// and each ticket code verifies at the gate.
func TestEndToEndThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	tok, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "carol", time.Hour)
	require.NoError(t, err)

	code, res := b.call(t, http.MethodPost, "/v1/products/"+b.product.ID.String()+"/reservations", tok,
		map[string]any{"quantity": 2}, "Idempotency-Key", "r1")
	require.Equal(t, http.StatusAccepted, code, res)
	var holdID string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, r := b.call(c, http.MethodGet, res["statusUrl"].(string), tok, nil)
		holdID, _ = r["holdId"].(string)
		assert.Equal(c, "HELD", r["status"])
	}, 10*time.Second, 20*time.Millisecond)

	code, order := b.call(t, http.MethodPost, "/v1/orders", tok,
		map[string]any{"holdId": holdID, "paymentMethod": "sim_ok", "email": "carol@example.test"}, "Idempotency-Key", "o1")
	require.Equal(t, http.StatusAccepted, code, order)
	// The answer carries the order as it reads after the commit: the
	// authorize job may have confirmed it already.
	require.Contains(t, []any{"PENDING_PAYMENT", "CONFIRMED"}, order["status"])
	code, again := b.call(t, http.MethodPost, "/v1/orders", tok,
		map[string]any{"holdId": holdID, "paymentMethod": "sim_ok", "email": "carol@example.test"}, "Idempotency-Key", "o1")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, order["id"], again["id"])

	var got map[string]any
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, got = b.call(c, http.MethodGet, "/v1/orders/"+order["id"].(string), tok, nil)
		assert.Equal(c, "CONFIRMED", got["status"])
	}, 10*time.Second, 20*time.Millisecond)
	tickets := got["tickets"].([]any)
	require.Len(t, tickets, 2)

	require.Eventually(t, func() bool { return len(b.sink.Messages()) == 1 }, 10*time.Second, 20*time.Millisecond)
	m := b.sink.Messages()[0]
	require.Equal(t, "carol@example.test", m.To)
	for _, tk := range tickets {
		c := tk.(map[string]any)["code"].(string)
		require.Contains(t, m.Data, c)
		code, v := b.call(t, http.MethodGet, "/v1/tickets/verify?code="+c, b.env.Tenant.APIKey, nil)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, true, v["valid"])
	}
	_, v := b.call(t, http.MethodGet, "/v1/tickets/verify?code=forged"+strings.Repeat("A", 30), b.env.Tenant.APIKey, nil)
	require.Equal(t, map[string]any{"valid": false}, v, "an invalid code shows no zero ids")

	// At the gate: the first scan checks in, the next says when.
	c := tickets[0].(map[string]any)["code"].(string)
	code, in := b.call(t, http.MethodPost, "/v1/tickets/check-in", b.env.Tenant.APIKey, map[string]any{"code": c})
	require.Equal(t, http.StatusOK, code, in)
	require.Equal(t, "CHECKED_IN", in["result"])
	first := in["checkedInAt"]
	require.NotEmpty(t, first)
	_, in = b.call(t, http.MethodPost, "/v1/tickets/check-in", b.env.Tenant.APIKey, map[string]any{"code": c})
	require.Equal(t, "ALREADY_CHECKED_IN", in["result"])
	require.Equal(t, first, in["checkedInAt"])
	_, v = b.call(t, http.MethodGet, "/v1/tickets/verify?code="+c, b.env.Tenant.APIKey, nil)
	require.Equal(t, first, v["checkedInAt"])
	_, in = b.call(t, http.MethodPost, "/v1/tickets/check-in", b.env.Tenant.APIKey, map[string]any{"code": "forged" + strings.Repeat("A", 30)})
	require.Equal(t, map[string]any{"result": "INVALID", "valid": false}, in)
	// Another tenant's key cannot check this tenant's tickets in.
	other := b.env.NewTenant(t)
	_, in = b.call(t, http.MethodPost, "/v1/tickets/check-in", other.APIKey, map[string]any{"code": tickets[1].(map[string]any)["code"]})
	require.Equal(t, "INVALID", in["result"])

	// Checkout pause: operators stop new orders with a clear code.
	_, res = b.call(t, http.MethodPost, "/v1/products/"+b.product.ID.String()+"/reservations", tok,
		map[string]any{"quantity": 1}, "Idempotency-Key", "r2")
	code, _ = b.call(t, http.MethodPost, "/v1/ops/checkout/pause", b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusForbidden, code, "tenant keys may not pause the platform")
	require.NoError(t, b.env.Checkout.SetPaused(t.Context(), true, "maintenance", ""))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, r := b.call(c, http.MethodGet, res["statusUrl"].(string), tok, nil)
		holdID, _ = r["holdId"].(string)
		assert.Equal(c, "HELD", r["status"])
	}, 10*time.Second, 20*time.Millisecond)
	code, p := b.call(t, http.MethodPost, "/v1/orders", tok, map[string]any{"holdId": holdID, "paymentMethod": "sim_ok"}, "Idempotency-Key", "o2")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "CHECKOUT_PAUSED", p["code"])
	require.Equal(t, checkout.DefaultPauseMessage, p["detail"], "the shopper is not told the operators' reason")
	require.NoError(t, b.env.Checkout.SetPaused(t.Context(), true, "PSP incident INC-42", "Back in five minutes."))
	_, p = b.call(t, http.MethodPost, "/v1/orders", tok, map[string]any{"holdId": holdID, "paymentMethod": "sim_ok"}, "Idempotency-Key", "o3")
	require.Equal(t, "Back in five minutes.", p["detail"])
	b.requireSafe(t)
}

func TestWebhookSignatures(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	body := []byte(`{"id":"evt_manual","type":"payment.authorized","created":1,"payment":{"id":"pay_x","idempotencyKey":"att_x","status":"authorized"}}`)
	post := func(sig string, raw []byte) (int, map[string]any) {
		return b.call(t, http.MethodPost, "/v1/webhooks/payments/sim", "", raw, payment.SignatureHeader, sig)
	}
	now := time.Now()
	code, res := post(payment.Sign(webhookSecret, now, body), body)
	require.Equal(t, http.StatusOK, code, res)
	require.Equal(t, false, res["duplicate"])
	code, res = post(payment.Sign(webhookSecret, now, body), body)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, true, res["duplicate"], "a replayed event id is acknowledged and ignored")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_events`))

	tampered := bytes.Replace(body, []byte("pay_x"), []byte("pay_y"), 1)
	code, res = post(payment.Sign(webhookSecret, now, body), tampered)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "BAD_SIGNATURE", res["code"])
	code, _ = post(payment.Sign("not-the-secret", now, body), body)
	require.Equal(t, http.StatusUnauthorized, code)
	code, res = post(payment.Sign(webhookSecret, now.Add(-10*time.Minute), body), body)
	require.Equal(t, http.StatusUnauthorized, code, "stale timestamp")
	// The answer does not coach a forger: every refusal reads the same.
	require.Equal(t, "signature verification failed", res["detail"])
	code, _ = post("", body)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = b.call(t, http.MethodPost, "/v1/webhooks/payments/stripe", "", body, payment.SignatureHeader, payment.Sign(webhookSecret, now, body))
	require.Equal(t, http.StatusNotFound, code)
	signed := func(raw []byte) (int, map[string]any) { return post(payment.Sign(webhookSecret, now, raw), raw) }
	code, res = signed([]byte(`{"id":"evt_2"}`))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "MALFORMED_EVENT", res["code"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_events`), "nothing stored from refused webhooks")
}
