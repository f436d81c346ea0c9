package checkout_test

import (
	"context"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/checkout"
	"boxoffice/internal/mail"
	"boxoffice/internal/payment"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/ticket"
)

const webhookSecret = "whsec_test"

type testBundle struct {
	env     *testfix.Env
	product *product.Product
	apiURL  string // the real API, listening on loopback
	sink    *mail.Sink
	sim     *pspsim.Server
}

// setup wires the simulator (over HTTP), its webhooks into the real API, and
// River's payment workers.
func setup(t *testing.T, sim pspsim.Config, start bool) *testBundle {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	apiURL := "http://" + ln.Addr().String()
	sim.WebhookURL, sim.WebhookSecret = apiURL+"/v1/webhooks/payments/sim", webhookSecret
	s := pspsim.New(sim)
	simSrv := httptest.NewServer(s.Handler())

	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	env := testfix.New(t, testfix.Options{Provider: payment.NewSim(simSrv.URL, 2*time.Second), SMTPAddr: sink.Addr()})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, River: env.River, Checkout: env.Checkout,
		WebhookSecrets: []string{webhookSecret}})
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() {
		simSrv.Close()
		s.Close() // webhooks in flight reach the API before it stops
		_ = srv.App().ShutdownWithTimeout(5 * time.Second)
	})
	if start {
		env.StartWorkers(t)
	}
	return &testBundle{env: env, product: env.Product(t, testfix.ProductOpts{Capacity: 20}), apiURL: apiURL, sink: sink, sim: s}
}

// hold reserves two numbers for buyer and returns the hold id.
func (b *testBundle) hold(t *testing.T, buyer string) uuid.UUID {
	t.Helper()
	r := b.env.Reserve(t, b.product, buyer, reservation.Params{Quantity: 2})
	b.env.Drain(t, b.product, 10)
	got := b.env.Get(t, b.product, r.ID)
	require.Equal(t, reservation.StatusHeld, got.Status)
	return *got.HoldID
}

func (b *testBundle) order(t *testing.T, buyer string, hold uuid.UUID, method string) *checkout.Order {
	t.Helper()
	o, _, err := b.env.Checkout.Create(context.Background(), checkout.CreateParams{TenantID: b.product.TenantID,
		BuyerID: buyer, IdempotencyKey: uuid.NewString(), HoldID: hold, PaymentMethod: method, Email: buyer + "@example.test"})
	require.NoError(t, err)
	// Create answers with the order as it reads it after its commit: the
	// authorize job may have decided it already.
	require.Contains(t, []string{checkout.StatusPending, checkout.StatusConfirmed, checkout.StatusFailed}, o.Status)
	return o
}

func (b *testBundle) wait(t *testing.T, id uuid.UUID, cond func(*checkout.Order) bool) *checkout.Order {
	t.Helper()
	var o *checkout.Order
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		o, err = b.env.Checkout.Get(context.Background(), b.product.TenantID, id, "")
		if assert.NoError(c, err) {
			assert.True(c, cond(o), "order %s is %s", id, o.Status)
		}
	}, 20*time.Second, 20*time.Millisecond, "order %s", id)
	return o
}

func settled(o *checkout.Order) bool {
	return (o.Status == checkout.StatusConfirmed && o.CaptureStatus == "CAPTURED") ||
		o.Status == checkout.StatusFailed || o.Status == checkout.StatusExpired
}

func (b *testBundle) count(t require.TestingT, sql string, args ...any) int {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var n int
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// requireSafe checks the money invariants: at most one capture per order,
// every SOLD claim in exactly one CONFIRMED order, no authorization left
// without a confirmed order or a void, and the inventory invariants.
func (b *testBundle) requireSafe(t *testing.T) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Zero(c, b.count(c, `
			SELECT count(*) FROM payment_attempts a JOIN orders o ON o.id = a.order_id
			WHERE a.status = 'AUTHORIZED' AND o.confirmed_at IS NULL`))
	}, 20*time.Second, 50*time.Millisecond, "an authorization without a confirmed order was not voided")
	require.Zero(t, b.count(t, `SELECT count(*) FROM (SELECT order_id FROM payment_attempts WHERE status IN ('CAPTURED', 'REFUNDED') GROUP BY order_id HAVING count(*) > 1) x`))
	require.Zero(t, b.count(t, `
		SELECT count(*) FROM claims c
		WHERE c.state = 'SOLD' AND (SELECT count(*) FROM orders o WHERE o.hold_id = c.hold_id AND o.confirmed_at IS NOT NULL) <> 1`))
	require.Zero(t, b.count(t, `
		SELECT count(*) FROM orders o WHERE o.status = 'CONFIRMED' AND NOT EXISTS (
			SELECT 1 FROM payment_attempts a WHERE a.order_id = o.id AND a.status IN ('AUTHORIZED', 'CAPTURED', 'REFUNDED'))`))
	b.env.RequireInvariants(t)
}

// confirmed pays buyer's two-number hold with sim_ok and returns the
// settled order, confirmed with its two tickets, and the hold.
func (b *testBundle) confirmed(t *testing.T, buyer string) (*checkout.Order, uuid.UUID) {
	t.Helper()
	hold := b.hold(t, buyer)
	o := b.wait(t, b.order(t, buyer, hold, pspsim.MethodOK).ID, settled)
	require.Equal(t, checkout.StatusConfirmed, o.Status)
	require.Len(t, o.Tickets, 2)
	return o, hold
}

func TestSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o, hold := b.confirmed(t, "alice")
	require.Equal(t, int64(2*5000), o.AmountCents)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM claims WHERE hold_id = $1 AND state = 'SOLD'`, hold))
	require.Equal(t, 2, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, b.product.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE topic = 'order.confirmed'`))
	require.Equal(t, o.Ref, b.status(t, `SELECT payload ->> 'orderRef' FROM outbox WHERE topic = 'order.confirmed'`),
		"integrators get the reference the buyer's e-mails print")
	require.Equal(t, "CONVERTED", b.status(t, `SELECT state FROM holds WHERE id = $1`, hold))
	b.requireSafe(t)

	// A SOLD number never returns to stock, even past the hold's time.
	b.env.Exec(t, `UPDATE holds SET expires_at = now() - interval '1 hour' WHERE id = $1`, hold)
	_, err := b.env.Claimer.ExpireHolds(context.Background(), 100)
	require.NoError(t, err)
	require.Equal(t, 2, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, b.product.ID))
	b.requireSafe(t)
}

func (b *testBundle) status(t require.TestingT, sql string, args ...any) string {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var s string
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), sql, args...).Scan(&s))
	return s
}

func TestDeclineThenRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	hold := b.hold(t, "alice")
	first := b.wait(t, b.order(t, "alice", hold, pspsim.MethodDecline).ID, settled)
	require.Equal(t, checkout.StatusFailed, first.Status)
	require.Equal(t, "DECLINED", first.Reason)
	require.Equal(t, "ACTIVE", b.status(t, `SELECT state FROM holds WHERE id = $1`, hold), "the hold stays")

	again := b.wait(t, b.order(t, "alice", hold, pspsim.MethodOK).ID, settled)
	require.Equal(t, first.ID, again.ID, "the same order, a new attempt")
	require.Equal(t, checkout.StatusConfirmed, again.Status)
	require.Equal(t, 2, b.count(t, `SELECT count(DISTINCT provider_key) FROM payment_attempts WHERE order_id = $1`, first.ID))
	b.requireSafe(t)
}

func TestTimeoutAfterAuthorization(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	hold := b.hold(t, "alice")
	o := b.wait(t, b.order(t, "alice", hold, pspsim.MethodTimeoutAfterAuth).ID, settled)
	require.Equal(t, checkout.StatusConfirmed, o.Status, "resolved by asking with the same key")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM payment_attempts WHERE order_id = $1`, o.ID), "no second authorization")
	b.requireSafe(t)
}

func TestServerErrorAndRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	for _, m := range []string{pspsim.MethodError500, pspsim.MethodRateLimited} {
		buyer := "buyer-" + m
		o := b.wait(t, b.order(t, buyer, b.hold(t, buyer), m).ID, settled)
		require.Equal(t, checkout.StatusConfirmed, o.Status, m)
	}
	b.requireSafe(t)
}

func TestWebhookBeforeResponse(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{ResponseDelay: 700 * time.Millisecond}, true)
	hold := b.hold(t, "alice")
	o := b.order(t, "alice", hold, pspsim.MethodOK)
	// The webhook overtakes the authorize response and confirms first.
	b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusConfirmed })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, b.count(c, `SELECT count(*) FROM webhook_events WHERE processed_at IS NOT NULL`), 1)
	}, 10*time.Second, 20*time.Millisecond)
	b.wait(t, o.ID, settled)
	b.requireSafe(t)
}

func TestDuplicateAndOutOfOrderWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{WebhookDuplicates: 3, WebhookDelay: 400 * time.Millisecond}, true)
	var ids []uuid.UUID
	for _, buyer := range []string{"a", "b", "c"} {
		ids = append(ids, b.order(t, buyer, b.hold(t, buyer), pspsim.MethodOK).ID)
	}
	for _, id := range ids {
		require.Equal(t, checkout.StatusConfirmed, b.wait(t, id, settled).Status)
	}
	// authorized + captured events, each four times, for three orders.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 6, b.count(c, `SELECT count(*) FROM webhook_events WHERE processed_at IS NOT NULL`))
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM orders WHERE status = 'CONFIRMED'`))
	require.Equal(t, 6, b.count(t, `SELECT count(*) FROM tickets`))
	b.requireSafe(t)
}

func TestLateAuthorizationIsVoided(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	hold := b.hold(t, "alice")
	o := b.order(t, "alice", hold, pspsim.MethodOK)
	// The hold (grace included) runs out before the authorization arrives.
	b.env.Exec(t, `UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1`, hold)
	b.env.Exec(t, `UPDATE claims SET expires_at = now() - interval '1 second' WHERE hold_id = $1`, hold)
	b.env.StartWorkers(t)

	got := b.wait(t, o.ID, settled)
	require.Equal(t, checkout.StatusExpired, got.Status)
	require.Equal(t, "HOLD_EXPIRED", got.Reason)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "VOIDED", b.status(c, `SELECT status FROM payment_attempts WHERE order_id = $1`, o.ID))
	}, 20*time.Second, 20*time.Millisecond)
	require.Zero(t, b.count(t, `SELECT count(*) FROM claims WHERE state = 'SOLD'`))

	// The numbers are for sale again.
	_, err := b.env.Claimer.ExpireHolds(context.Background(), 100)
	require.NoError(t, err)
	r := b.env.Reserve(t, b.product, "bob", reservation.Params{Numbers: b.numbersOf(t, hold)})
	b.env.Drain(t, b.product, 10)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, b.product, r.ID).Status)
	b.requireSafe(t)
}

func (b *testBundle) numbersOf(t *testing.T, hold uuid.UUID) []int32 {
	t.Helper()
	var n []int32
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), `SELECT numbers FROM holds WHERE id = $1`, hold).Scan(&n))
	return n
}

func TestCaptureFailureIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o := b.order(t, "alice", b.hold(t, "alice"), pspsim.MethodCaptureFails)
	b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusConfirmed })
	got := b.wait(t, o.ID, func(o *checkout.Order) bool { return o.CaptureStatus == "CAPTURED" })
	require.Equal(t, "CAPTURED", got.Payment)
	b.requireSafe(t)
}

func TestReconcilerResolvesWhatJobsLeft(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	hold := b.hold(t, "alice")
	o := b.order(t, "alice", hold, pspsim.MethodOK)
	// The authorize job is lost; the reconciler finds the stale attempt.
	b.env.Exec(t, `DELETE FROM river_job`)
	b.env.Exec(t, `UPDATE payment_attempts SET updated_at = now() - interval '1 hour'`)
	res, err := b.env.Checkout.Reconcile(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, res.Resolved)
	b.env.StartWorkers(t) // the reconciler re-authorized with the same key; capture follows
	require.Equal(t, checkout.StatusConfirmed, b.wait(t, o.ID, settled).Status)
	b.requireSafe(t)
}

// An authorize job whose completion River lost (its batch completer gave up
// during a failover) stays running until River's rescuer, minutes later. The
// reconciler must not wait for it: the attempt is authorized by the
// reconciler itself, not by a new job the stuck one would swallow.
func TestReconcilerPassesAStuckAuthorizeJob(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	o := b.order(t, "alice", b.hold(t, "alice"), pspsim.MethodOK)
	b.env.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = '{gone}'
		WHERE kind = 'payment_authorize'`)
	b.env.Exec(t, `UPDATE payment_attempts SET updated_at = now() - interval '1 hour'`)
	res, err := b.env.Checkout.Reconcile(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, res.Resolved)
	got, err := b.env.Checkout.Get(context.Background(), b.product.TenantID, o.ID, "")
	require.NoError(t, err)
	require.Equal(t, checkout.StatusConfirmed, got.Status, "confirmed by the reconciler, the stuck job still running")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'payment_authorize' AND state = 'running'`))
	b.env.StartWorkers(t)
	require.Equal(t, checkout.StatusConfirmed, b.wait(t, o.ID, settled).Status)
	b.requireSafe(t)
}

func TestPause(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	hold := b.hold(t, "alice")
	ctx := context.Background()
	require.NoError(t, b.env.Checkout.SetPaused(ctx, true, "maintenance", ""))
	_, _, err := b.env.Checkout.Create(ctx, checkout.CreateParams{TenantID: b.product.TenantID, BuyerID: "alice",
		IdempotencyKey: "k", HoldID: hold, PaymentMethod: pspsim.MethodOK})
	require.ErrorIs(t, err, checkout.ErrCheckoutPaused)
	require.NoError(t, b.env.Checkout.SetPaused(ctx, false, "", ""))
	b.order(t, "alice", hold, pspsim.MethodOK)
}

// Zero is a value: a grace of 0 extends no hold (it once became the 2-minute
// default without a word).
func TestZeroGraceExtendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, false)
	hold := b.hold(t, "zed")
	expiresAt := func() time.Time {
		var at time.Time
		require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), `SELECT expires_at FROM holds WHERE id = $1`, hold).Scan(&at))
		return at
	}
	before := expiresAt()
	cfg := checkout.DefaultConfig()
	cfg.Grace = 0
	svc := checkout.NewService(b.env.Schema.Pool, b.env.River, b.env.Checkout.Provider(), ticket.NewSigner([]byte("t")), nil, b.env.Logger, cfg)
	_, _, err := svc.Create(context.Background(), checkout.CreateParams{TenantID: b.product.TenantID, BuyerID: "zed",
		IdempotencyKey: "zero-grace", HoldID: hold, PaymentMethod: "sim_ok"})
	require.NoError(t, err)
	require.True(t, expiresAt().Equal(before), "no extension with Grace 0")
}

// A backup holds no ticket a gate would accept: codes are derived from the
// ticket when shown (id and HMAC under the ticket secret) and appear in no
// row of any table, yet the shown codes verify and check in.
func TestNoTicketCodeAtRest(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o, _ := b.confirmed(t, "alice")
	ctx := context.Background()
	// The tickets mailed, so that every job and event about them has run.
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM orders WHERE id = $1 AND tickets_sent_at IS NOT NULL`, o.ID) == 1
	}, 20*time.Second, 20*time.Millisecond)

	rows, err := b.env.Schema.Pool.Query(ctx,
		`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, b.env.Schema.Name)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "tickets")
	for _, tk := range o.Tickets {
		for _, table := range tables {
			require.Zero(t, b.count(t, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` x WHERE strpos(x::text, $1) > 0`, tk.Code),
				"ticket %d's code is stored in %s", tk.Number, table)
		}
		v, err := b.env.Checkout.VerifyTicket(ctx, b.product.TenantID, tk.Code)
		require.NoError(t, err)
		require.True(t, v.Valid)
		require.Equal(t, tk.Number, v.Number)
	}
	res, err := b.env.Checkout.CheckIn(ctx, b.product.TenantID, o.Tickets[0].Code, "gate 1")
	require.NoError(t, err)
	require.Equal(t, checkout.CheckedIn, res.Result)
	res, err = b.env.Checkout.CheckIn(ctx, b.product.TenantID, o.Tickets[0].Code, "gate 2")
	require.NoError(t, err)
	require.Equal(t, checkout.AlreadyCheckedIn, res.Result)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE topic = 'ticket.checked_in' AND payload ->> 'orderId' = $1`,
		o.ID.String()), "one ticket.checked_in event, for the first scan")

	// The same ticket id under another MAC, or another ticket's, is no ticket.
	forged := ticket.NewSigner([]byte("not our secret")).Code(o.Tickets[1].ID, b.product.ID, o.Tickets[1].Number)
	for _, code := range []string{forged, o.Tickets[1].Code[:22] + o.Tickets[0].Code[22:], "", "not-a-code"} {
		v, err := b.env.Checkout.VerifyTicket(ctx, b.product.TenantID, code)
		require.NoError(t, err)
		require.False(t, v.Valid, code)
	}
}
