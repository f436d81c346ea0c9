package webhook_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/mail"
	"boxoffice/internal/outbox"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/webhook"
)

// receiver is a tenant's endpoint as an integrator would write it: it
// checks each delivery's signature with the Standard Webhooks reference
// library (not BoxOffice's code), answers with the next of its scripted
// statuses (200 once they run out), and applies each webhook-id once.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string // any of them may verify
	script  []int
	got     []http.Header // every request
	applied map[string]map[string]any
	order   []string // ids in the order applied
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{t: t, script: script, applied: map[string]map[string]any{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req.Header.Clone())
	verified := false
	for _, s := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err == nil && wh.Verify(body, req.Header) == nil {
			verified = true
		}
	}
	if !verified {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if len(r.script) > 0 {
		status := r.script[0]
		r.script = r.script[1:]
		if status != http.StatusOK {
			http.Error(w, "receiver down for maintenance", status)
			return
		}
	}
	id := req.Header.Get("webhook-id")
	if _, seen := r.applied[id]; !seen {
		var env map[string]any
		if json.Unmarshal(body, &env) == nil {
			r.applied[id] = env
			r.order = append(r.order, id)
		}
	}
	_, _ = io.WriteString(w, `{"ok":true}`)
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) events() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]map[string]any, len(r.order))
	for i, id := range r.order {
		out[i] = r.applied[id]
	}
	return out
}

func (r *receiver) trust(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, secret)
}

// subscribe makes an endpoint of env's tenant (p's URL is the receiver's
// with p.URL as its path) and trusts its secret.
func (r *receiver) subscribe(t *testing.T, env *testfix.Env, p webhook.Params) (*webhook.Endpoint, string) {
	t.Helper()
	p.URL = r.srv.URL + p.URL
	e, secret, err := env.Webhooks.Create(context.Background(), env.Tenant.ID, p)
	require.NoError(t, err)
	r.trust(secret)
	return e, secret
}

func (r *receiver) distrust() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = nil
}

func deliveries(t *testing.T, env *testfix.Env, tenantID, endpointID uuid.UUID) []*webhook.Delivery {
	t.Helper()
	ds, err := env.Webhooks.Deliveries(context.Background(), tenantID, endpointID, nil, 100)
	require.NoError(t, err)
	return ds
}

// TestDeliveriesSignedRetriedDeduplicated: the outbox's events reach a
// subscribed endpoint signed; a 500 is retried under the same webhook-id;
// a redelivery is dropped by the receiver as seen; only subscribed types
// arrive, in sequence; a rotated secret signs beside the new one.
func TestDeliveriesSignedRetriedDeduplicated(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true})
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError)
	e, secret := rcv.subscribe(t, env, webhook.Params{URL: "/hooks", EventTypes: []string{"product.sold_out", "hold.released"},
		AlertEmail: "ops@tenant.test"})
	require.True(t, strings.HasPrefix(secret, "whsec_"))

	// Two numbers of two: a sold-out product, then a released hold.
	p := env.Product(t, testfix.ProductOpts{Capacity: 2, PerBuyerLimit: 2})
	req := env.Reserve(t, p, "ana", reservation.Params{Quantity: 2})
	env.Drain(t, p, 100)
	held := env.Get(t, p, req.ID)
	require.Equal(t, reservation.StatusHeld, held.Status)
	_, err := env.Service.Release(ctx, p.TenantID, "ana", *held.HoldID)
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, rcv.events(), 2)
	}, 20*time.Second, 50*time.Millisecond)
	// Sent at once, they may arrive in either order: the sequence orders them.
	got := rcv.events()
	slices.SortFunc(got, func(a, b map[string]any) int { return cmp.Compare(a["sequence"].(float64), b["sequence"].(float64)) })
	assert.Equal(t, "product.sold_out", got[0]["type"])
	assert.Equal(t, p.ID.String(), got[0]["data"].(map[string]any)["productId"])
	assert.Equal(t, "hold.released", got[1]["type"])
	assert.Equal(t, []any{1.0, 2.0}, got[1]["data"].(map[string]any)["numbers"])

	// One of the two met the 500 and was retried under its webhook-id (its
	// attempt is recorded once the receiver has answered).
	var retried *webhook.Delivery
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ds := deliveries(t, env, env.Tenant.ID, e.ID)
		if !assert.Len(c, ds, 2, "holds.created, which the endpoint did not subscribe to, is not sent") {
			return
		}
		for _, d := range ds {
			assert.Equal(c, "DELIVERED", d.Status)
			if d.Attempts == 2 {
				retried = d
			}
		}
		assert.NotNil(c, retried, "the 500 was retried")
	}, 10*time.Second, 20*time.Millisecond)
	rcv.mu.Lock()
	var ids []string
	for _, h := range rcv.got {
		ids = append(ids, h.Get("webhook-id"))
	}
	rcv.mu.Unlock()
	assert.Len(t, ids, 3)
	n := 0
	for _, id := range ids {
		if id == retried.MessageID {
			n++
		}
	}
	assert.Equal(t, 2, n, "a retry keeps its webhook-id")
	detail, err := env.Webhooks.DeliveryOf(ctx, env.Tenant.ID, e.ID, retried.ID)
	require.NoError(t, err)
	require.Len(t, detail.AttemptsList, 2)
	assert.Equal(t, 500, *detail.AttemptsList[0].StatusCode)
	assert.Contains(t, detail.AttemptsList[0].Excerpt, "receiver down for maintenance")
	assert.Equal(t, 200, *detail.AttemptsList[1].StatusCode)
	first := retried

	// A redelivery comes again under the same id: the receiver drops it.
	before := rcv.requests()
	require.NoError(t, env.Webhooks.Redeliver(ctx, env.Tenant.ID, e.ID, first.ID))
	require.Eventually(t, func() bool { return rcv.requests() == before+1 }, 10*time.Second, 20*time.Millisecond)
	assert.Len(t, rcv.events(), 2, "applied once")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := env.Webhooks.DeliveryOf(ctx, env.Tenant.ID, e.ID, first.ID)
		if assert.NoError(c, err) && assert.Len(c, d.AttemptsList, 3) {
			assert.True(c, d.AttemptsList[2].Manual)
		}
	}, 10*time.Second, 20*time.Millisecond)

	// Rotation: during the overlap, a receiver with either secret verifies.
	newSecret, until, err := env.Webhooks.RotateSecret(ctx, env.Tenant.ID, e.ID, time.Hour)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), until, time.Minute)
	for _, s := range []string{secret, newSecret} {
		rcv.distrust()
		rcv.trust(s)
		n := len(rcv.events())
		_, err := env.Webhooks.SendTest(ctx, env.Tenant.ID, e.ID)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(rcv.events()) == n+1 }, 10*time.Second, 20*time.Millisecond)
	}
	rcv.mu.Lock()
	sig := rcv.got[len(rcv.got)-1].Get("webhook-signature")
	rcv.mu.Unlock()
	assert.Len(t, strings.Fields(sig), 2, "two signatures during the overlap")
}

// TestFailingEndpointDisabledAndMailed: an endpoint that fails past the
// disable-after is disabled, its alert address mailed, and nothing more
// is sent until it is enabled again.
func TestFailingEndpointDisabledAndMailed(t *testing.T) {
	t.Parallel()
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	env := testfix.New(t, testfix.Options{Work: true, SMTPAddr: sink.Addr(), WebhookDisableAfter: time.Second})
	ctx := context.Background()
	rcv := newReceiver(t, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503)
	e, _ := rcv.subscribe(t, env, webhook.Params{AlertEmail: "ops@tenant.test"})
	id, err := env.Webhooks.SendTest(ctx, env.Tenant.ID, e.ID)
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := env.Webhooks.Get(ctx, env.Tenant.ID, e.ID)
		if assert.NoError(c, err) {
			assert.False(c, got.Enabled)
			assert.Contains(c, got.DisabledReason, "the endpoint answered 503")
		}
	}, 30*time.Second, 50*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := sink.Messages()
		if assert.Len(c, msgs, 1) {
			assert.Equal(c, "ops@tenant.test", msgs[0].To)
			assert.Contains(c, msgs[0].Subject(), "Webhook endpoint disabled")
			assert.Contains(c, msgs[0].Data, rcv.srv.URL)
		}
	}, 10*time.Second, 50*time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := env.Webhooks.DeliveryOf(ctx, env.Tenant.ID, e.ID, id)
		if assert.NoError(c, err) {
			assert.Equal(c, "FAILED", d.Status)
		}
	}, 10*time.Second, 20*time.Millisecond)

	// Disabled: a test or a redelivery is refused, events are not sent.
	_, err = env.Webhooks.SendTest(ctx, env.Tenant.ID, e.ID)
	require.ErrorIs(t, err, webhook.ErrDisabled)
	require.ErrorIs(t, env.Webhooks.Redeliver(ctx, env.Tenant.ID, e.ID, id), webhook.ErrDisabled)

	// Enabled again: the failed delivery is redelivered and arrives.
	rcv.mu.Lock()
	rcv.script = nil
	rcv.mu.Unlock()
	on := true
	got, err := env.Webhooks.Update(ctx, env.Tenant.ID, e.ID, webhook.Change{Enabled: &on})
	require.NoError(t, err)
	assert.True(t, got.Enabled)
	assert.Nil(t, got.FailingSince)
	require.NoError(t, env.Webhooks.Redeliver(ctx, env.Tenant.ID, e.ID, id))
	require.Eventually(t, func() bool { return len(rcv.events()) == 1 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, "webhook.test", rcv.events()[0]["type"])
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := env.Webhooks.DeliveryOf(ctx, env.Tenant.ID, e.ID, id)
		if assert.NoError(c, err) {
			assert.Equal(c, "DELIVERED", d.Status)
		}
	}, 10*time.Second, 20*time.Millisecond)
}

// TestTargetsCheckedAgainstSSRF: in production mode a loopback, private or
// metadata target is refused when named, and a name that resolves to one
// is refused where it is dialled, at send time.
func TestTargetsCheckedAgainstSSRF(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true, PublicTargetsOnly: true})
	ctx := context.Background()
	strict := env.Webhooks
	for _, url := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://10.1.2.3/hook",
		"https://169.254.169.254/latest", "https://[::1]/hook", "not a url"} {
		_, _, err := strict.Create(ctx, env.Tenant.ID, webhook.Params{URL: url, AlertEmail: "ops@tenant.test"})
		require.ErrorIs(t, err, webhook.ErrInvalidURL, url)
	}
	_, _, err := strict.Create(ctx, env.Tenant.ID, webhook.Params{URL: "https://hooks.example.com/x", AlertEmail: "nope"})
	require.ErrorIs(t, err, webhook.ErrInvalidEmail)
	_, _, err = strict.Create(ctx, env.Tenant.ID, webhook.Params{URL: "https://hooks.example.com/x", AlertEmail: "a@b.test",
		EventTypes: []string{"order.exploded"}})
	require.ErrorIs(t, err, webhook.ErrUnknownType)

	// A name passes the check when named, but the address it resolves to
	// is refused when dialled.
	e, _, err := strict.Create(ctx, env.Tenant.ID, webhook.Params{URL: "https://localhost:1/hook", AlertEmail: "ops@tenant.test"})
	require.NoError(t, err)
	id, err := strict.SendTest(ctx, env.Tenant.ID, e.ID)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := strict.DeliveryOf(ctx, env.Tenant.ID, e.ID, id)
		if assert.NoError(c, err) && assert.NotEmpty(c, d.AttemptsList) {
			assert.Nil(c, d.AttemptsList[0].StatusCode)
			assert.Contains(c, d.AttemptsList[0].Error, "not allowed")
		}
	}, 10*time.Second, 20*time.Millisecond)
}

// TestFanoutOncePerEventAndEndpoint: an event relayed twice (the SQS
// path after a crash between the send and the mark) makes one delivery;
// internal topics, disabled endpoints and other tenants' endpoints get none.
func TestFanoutOncePerEventAndEndpoint(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true})
	ctx := context.Background()
	rcv := newReceiver(t)
	mine, _ := rcv.subscribe(t, env, webhook.Params{AlertEmail: "a@tenant.test"})
	off, _, err := env.Webhooks.Create(ctx, env.Tenant.ID, webhook.Params{URL: rcv.srv.URL, AlertEmail: "a@tenant.test"})
	require.NoError(t, err)
	no := false
	_, err = env.Webhooks.Update(ctx, env.Tenant.ID, off.ID, webhook.Change{Enabled: &no})
	require.NoError(t, err)
	other := env.NewTenant(t)
	theirs, _, err := env.Webhooks.Create(ctx, other.ID, webhook.Params{URL: rcv.srv.URL, AlertEmail: "b@tenant.test",
		EventTypes: []string{"order.confirmed"}})
	require.NoError(t, err)

	events := []outbox.Event{
		{ID: 1, TenantID: env.Tenant.ID, Topic: "product.sold_out", Payload: json.RawMessage(`{"productId":"x"}`), CreatedAt: time.Now()},
		{ID: 2, TenantID: env.Tenant.ID, Topic: "holds.created", Payload: json.RawMessage(`{}`), CreatedAt: time.Now()},
		{ID: 3, TenantID: other.ID, Topic: "product.sold_out", Payload: json.RawMessage(`{}`), CreatedAt: time.Now()},
		{ID: 4, TenantID: env.Tenant.ID, Topic: "order.refunded", Payload: json.RawMessage(`{"orderStatus":"CANCELLED"}`), CreatedAt: time.Now()},
	}
	for range 2 {
		require.NoError(t, pgx.BeginFunc(ctx, env.Schema.Pool, func(tx pgx.Tx) error {
			return webhook.Fanout(ctx, tx, env.River, events)
		}))
	}
	got := deliveries(t, env, env.Tenant.ID, mine.ID)
	require.Len(t, got, 2)
	assert.ElementsMatch(t, []string{"product.sold_out", "order.cancelled"}, []string{got[0].EventType, got[1].EventType})
	assert.Empty(t, deliveries(t, env, env.Tenant.ID, off.ID))
	assert.Empty(t, deliveries(t, env, other.ID, theirs.ID), "not subscribed to product.sold_out")
	require.Eventually(t, func() bool { return len(rcv.events()) == 2 }, 10*time.Second, 20*time.Millisecond)
}

// TestPruneKeepsThirtyDays: the log forgets deliveries older than its
// retention, with their attempts, and keeps the rest.
func TestPruneKeepsThirtyDays(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{Work: true})
	ctx := context.Background()
	rcv := newReceiver(t)
	e, _ := rcv.subscribe(t, env, webhook.Params{AlertEmail: "a@tenant.test"})
	old, err := env.Webhooks.SendTest(ctx, env.Tenant.ID, e.ID)
	require.NoError(t, err)
	recent, err := env.Webhooks.SendTest(ctx, env.Tenant.ID, e.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rcv.events()) == 2 }, 10*time.Second, 20*time.Millisecond)
	env.Exec(t, `UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, old)
	n, err := env.Webhooks.Prune(ctx, time.Now().Add(-webhook.LogRetention))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	ds := deliveries(t, env, env.Tenant.ID, e.ID)
	require.Len(t, ds, 1)
	require.Equal(t, recent, ds[0].ID)
	var attempts int
	require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1`, old).Scan(&attempts))
	require.Zero(t, attempts)
}
