package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/testfix"
)

// webhookReceiver is a tenant's endpoint in the tests: it verifies each
// delivery with the Standard Webhooks library (not BoxOffice's code) and
// notes its webhook-id.
type webhookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	ids    []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	r := &webhookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(r.secret)
		if err != nil || wh.Verify(body, req.Header) != nil {
			http.Error(w, "signature does not verify", http.StatusUnauthorized)
			return
		}
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *webhookReceiver) trust(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

// received are the webhook-ids of the deliveries verified, in order.
func (r *webhookReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// TestWebhookEndpoints drives the webhook API as a tenant's integrator: the
// event types, an endpoint made with its secret shown once, refusals, a
// test event verified with the Standard Webhooks library, the delivery log,
// a redelivery under the same webhook-id, disabling, rotation, deletion.
func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	rcv := newWebhookReceiver(t)
	received := rcv.received

	b := setup(t, testfix.Options{Work: true})
	key := b.env.Tenant.APIKey
	base := "/v1/tenants/" + b.env.Tenant.ID.String() + "/webhooks"

	r := b.do(t, http.MethodGet, "/v1/webhook-event-types", key, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), `"order.confirmed"`)
	require.Contains(t, string(r.raw), `"ticket.checked_in"`)

	good := map[string]any{"url": rcv.srv.URL + "/boxoffice", "eventTypes": []string{"order.confirmed"}, "alertEmail": "dev@tenant.test",
		"description": "Our CRM"}
	for code, body := range map[string]map[string]any{
		"INVALID_WEBHOOK_URL": {"url": "ftp://files.tenant.test/", "alertEmail": "dev@tenant.test"},
		"UNKNOWN_EVENT_TYPE":  {"url": rcv.srv.URL, "eventTypes": []string{"order.exploded"}, "alertEmail": "dev@tenant.test"},
		"INVALID_EMAIL":       {"url": rcv.srv.URL, "alertEmail": "dev at tenant"},
	} {
		requireProblem(t, b.do(t, http.MethodPost, base, key, body), http.StatusUnprocessableEntity, code)
	}
	other := b.env.NewTenant(t)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants/"+other.ID.String()+"/webhooks", key, good), http.StatusNotFound, "NOT_FOUND")

	r = b.do(t, http.MethodPost, base, key, good)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	secret := r.body["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	rcv.trust(secret)
	endpoint := base + "/" + r.body["id"].(string)
	r = b.do(t, http.MethodGet, base, key, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["endpoints"], 1)
	require.NotContains(t, string(r.raw), secret, "the secret is shown once")

	r = b.do(t, http.MethodPost, endpoint+"/test", key, nil)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	delivery := endpoint + "/deliveries/" + r.body["deliveryId"].(string)
	require.Eventually(t, func() bool { return len(received()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := b.do(c, http.MethodGet, endpoint+"/deliveries", key, nil)
		if assert.Equal(c, http.StatusOK, r.status) && assert.Len(c, r.body["deliveries"], 1) {
			d := r.body["deliveries"].([]any)[0].(map[string]any)
			assert.Equal(c, "DELIVERED", d["status"])
			assert.Equal(c, received()[0], d["messageId"])
			if last, ok := d["lastAttempt"].(map[string]any); assert.True(c, ok, "an attempt is logged") {
				assert.Equal(c, 200.0, last["statusCode"])
				assert.Equal(c, `{"received":true}`, last["excerpt"])
			}
		}
	}, 10*time.Second, 20*time.Millisecond)
	r = b.do(t, http.MethodGet, delivery, key, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "webhook.test", r.body["body"].(map[string]any)["type"])

	r = b.do(t, http.MethodPost, delivery+"/redeliver", key, nil)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Eventually(t, func() bool { return len(received()) == 2 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, received()[0], received()[1], "a redelivery keeps the webhook-id")

	r = b.do(t, http.MethodPatch, endpoint, key, map[string]any{"enabled": false})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "disabled by the tenant", r.body["disabledReason"])
	requireProblem(t, b.do(t, http.MethodPost, endpoint+"/test", key, nil), http.StatusConflict, "ENDPOINT_DISABLED")
	requireProblem(t, b.do(t, http.MethodPost, delivery+"/redeliver", key, nil), http.StatusConflict, "ENDPOINT_DISABLED")
	requireProblem(t, b.do(t, http.MethodPatch, endpoint, key, map[string]any{"eventTypes": []string{"nope"}}),
		http.StatusUnprocessableEntity, "UNKNOWN_EVENT_TYPE")

	r = b.do(t, http.MethodPost, endpoint+"/secret/rotate", key, map[string]any{"overlapSeconds": 60})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.NotEqual(t, secret, r.body["secret"])
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, endpoint, key, nil).status)
	requireProblem(t, b.do(t, http.MethodGet, endpoint, key, nil), http.StatusNotFound, "NOT_FOUND")
}
