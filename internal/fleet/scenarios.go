package fleet

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
	"boxoffice/internal/sqsqueue"
)

// The fault scenarios: each kills a process mid-sale, checks the promises
// (nothing sold twice, every request decided, every order confirmed once)
// and returns how long the sale took to resume. The fault suite runs them
// with generous bounds; `boxoffice bench faults` reports the figures.

// WorkerKill is what RiverWorkerKill measured.
type WorkerKill struct {
	// ResumeAfterKill: a claim worker SIGKILLed mid-drain while another is
	// alive, until the next decision.
	ResumeAfterKill time.Duration `json:"resumeAfterKillNs"`
	// DecidedAfterKill: until the last queued request was decided.
	DecidedAfterKill time.Duration `json:"decidedAfterKillNs"`
	// ResumeAfterStart: the last worker killed, a new one started, until its
	// first decision.
	ResumeAfterStart time.Duration `json:"resumeAfterStartNs"`
	// DecidedAfterStart: until the last queued request was decided.
	DecidedAfterStart time.Duration `json:"decidedAfterStartNs"`
}

// SlowClaims makes workers claim slowly (small batches, 150 numbers a second
// per product), so that a fault lands mid-drain.
var SlowClaims = proctest.Env{"BOXOFFICE_CLAIM_BATCH": "20", "BOXOFFICE_CLAIM_RATE_PER_PRODUCT": "150"}

// RiverWorkerKill SIGKILLs the River worker draining a product while
// another is alive, then the other one too, and starts a third.
func RiverWorkerKill(t T) WorkerKill {
	t.Helper()
	var out WorkerKill
	f, p, victim, survivor := midDrain(t, 1200)
	killedAt := time.Now()
	victim.Kill()
	f.WaitDecided(60 * time.Second)
	out.DecidedAfterKill = time.Since(killedAt)
	out.ResumeAfterKill = f.FirstDecisionAfter(killedAt)
	f.RequireSound()

	f.Load(p, 800, 16)
	require.Equal(t, survivor.ClientID, f.RunningClaimOwner(30*time.Second))
	survivor.Kill()
	time.Sleep(500 * time.Millisecond)
	started := time.Now()
	f.Work("work-c", nil)
	f.WaitDecided(60 * time.Second)
	out.DecidedAfterStart = time.Since(started)
	out.ResumeAfterStart = f.FirstDecisionAfter(started)
	f.RequireSound()
	return out
}

// midDrain is a fleet of one serve and two work processes claiming slowly
// (SlowClaims) with requests queued for one product: it returns the
// product, the worker draining it and the other.
func midDrain(t T, requests int) (f *Fleet, p uuid.UUID, draining, other *Worker) {
	t.Helper()
	f = New(t, SlowClaims)
	f.Serve("serve")
	a, b := f.Work("work-a", nil), f.Work("work-b", nil)
	f.Tenant()
	p = f.Product(5000)
	seen := f.Load(p, requests, 16)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	owner := f.RunningClaimOwner(30 * time.Second)
	draining, other = a, b
	if owner == b.ClientID {
		draining, other = b, a
	}
	require.Equal(t, draining.ClientID, owner)
	return f, p, draining, other
}

// NewSQS is a fleet on the SQS backend, its queues on a kumo emulator in the
// calling process that every process of the fleet talks to.
func NewSQS(t T, more proctest.Env) *Fleet {
	t.Helper()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client, err := sqsqueue.NewClient(ctx, srv.URL, "us-east-1")
	require.NoError(t, err)
	mainURL, dlqURL, err := sqsqueue.EnsureQueues(ctx, client, "claims", 5, 30*time.Second)
	require.NoError(t, err)
	env := proctest.Env{"BOXOFFICE_QUEUE_BACKEND": "sqs", "BOXOFFICE_SQS_ENDPOINT": srv.URL, "BOXOFFICE_SQS_QUEUE_URL": mainURL, "BOXOFFICE_SQS_DLQ_URL": dlqURL,
		"BOXOFFICE_SQS_WAIT_TIME": "1s"}
	for k, v := range more {
		env[k] = v
	}
	return New(t, env)
}

// ConsumerKill is what SQSConsumerKill measured.
type ConsumerKill struct {
	// SlowestNoFault is the slowest decision of 1,500 requests without a
	// fault (requests once waited 30–50 s for a visibility timeout).
	SlowestNoFault time.Duration `json:"slowestNoFaultNs"`
	// ResumeAfterKill: one of two consumers SIGKILLed with messages in
	// flight, until the next decision.
	ResumeAfterKill time.Duration `json:"resumeAfterKillNs"`
	// DecidedAfterKill: until the dead consumer's messages, back after the
	// visibility timeout (10 s here), were decided.
	DecidedAfterKill time.Duration `json:"decidedAfterKillNs"`
}

// SQSConsumerKill measures decisions without a fault, then SIGKILLs one of
// two rate-limited consumers with a backlog.
func SQSConsumerKill(t T) ConsumerKill {
	t.Helper()
	var out ConsumerKill
	f := NewSQS(t, nil)
	f.Serve("serve")
	a, b := f.Work("work-a", nil), f.Work("work-b", nil)
	f.Tenant()
	p := f.Product(5000)

	seen := f.Load(p, 1500, 16)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	f.WaitDecided(60 * time.Second)
	require.NoError(t, f.Pool.QueryRow(context.Background(),
		`SELECT coalesce(max(processed_at - created_at), '0') FROM reservation_requests`).Scan(&out.SlowestNoFault))
	// Generous against a noisy machine, far below a visibility timeout.
	require.Less(t, out.SlowestNoFault, 15*time.Second)
	f.RequireSound()

	// Slow consumers now, so that the kill lands with messages in flight; a
	// shorter visibility timeout brings the dead one's messages back sooner
	// (the live consumer keeps extending its own).
	require.NoError(t, a.Stop(30*time.Second))
	require.NoError(t, b.Stop(30*time.Second))
	slow := proctest.Env{"BOXOFFICE_CLAIM_RATE_PER_PRODUCT": "100", "BOXOFFICE_SQS_VISIBILITY_TIMEOUT": "10s"}
	c := f.Work("work-c", slow)
	f.Work("work-d", slow)
	f.Load(p, 600, 16)
	require.Positive(t, f.Count(`SELECT count(*) FROM reservation_requests WHERE status = 'QUEUED'`))
	killedAt := time.Now()
	c.Kill()
	f.WaitDecided(90 * time.Second)
	out.DecidedAfterKill = time.Since(killedAt)
	out.ResumeAfterKill = f.FirstDecisionAfter(killedAt)
	f.RequireSound()
	return out
}

// PaymentKill is what PaymentWorkerKill measured.
type PaymentKill struct {
	Orders int `json:"orders"`
	// ConfirmedAfterKill: a worker SIGKILLed while waiting on the provider
	// (3 s a call), until every order was confirmed.
	ConfirmedAfterKill time.Duration `json:"confirmedAfterKillNs"`
}

// PaymentWorkerKill SIGKILLs the worker waiting on the payment provider
// with authorizations in flight, webhooks off (the provider's answer dies
// with the worker), and waits for every order to be confirmed.
func PaymentWorkerKill(t T) PaymentKill {
	t.Helper()
	const secret = "whsec_fault"
	const buyers = 20
	pspPort := proctest.FreePort(t)
	f := New(t, checkoutEnv(pspPort, secret))
	// No webhooks: only the rescued job (or, a minute later, the
	// reconciler) can move these orders on.
	f.startPSP(pspPort, secret, "-webhook-url", "", "-latency", "3s")
	f.Serve("serve")
	a, b := f.Work("work-a", nil), f.Work("work-b", nil)
	f.Tenant()
	out := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "pay", "name": "Pay Night", "kind": "numbered", "capacity": 100, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 60})
	product := out["id"].(string)

	holds := make([]string, buyers)
	tokens := make([]string, buyers)
	for i := range buyers {
		tokens[i] = f.BuyerToken(fmt.Sprintf("payer-%d", i))
		r := f.MustCall(http.StatusAccepted, http.MethodPost, "/v1/products/"+product+"/reservations", tokens[i],
			map[string]any{"quantity": 1}, "Idempotency-Key", fmt.Sprintf("r-%d", i))
		status := r["statusUrl"].(string)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			code, st, err := f.Call(http.MethodGet, status, tokens[i], nil)
			assert.NoError(c, err)
			assert.Equal(c, http.StatusOK, code)
			assert.Equal(c, "HELD", st["status"])
			holds[i], _ = st["holdId"].(string)
		}, 30*time.Second, 50*time.Millisecond)
	}
	orders := make([]string, buyers)
	for i := range buyers {
		o := f.MustCall(http.StatusAccepted, http.MethodPost, "/v1/orders", tokens[i],
			map[string]any{"holdId": holds[i], "paymentMethod": "sim_ok"}, "Idempotency-Key", fmt.Sprintf("o-%d", i))
		orders[i] = o["id"].(string)
	}

	// Kill whichever worker is waiting on the provider.
	var owner string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, f.Pool.QueryRow(context.Background(), `
			SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'payment_authorize' AND state = 'running' LIMIT 1`).Scan(&owner))
	}, 30*time.Second, 20*time.Millisecond)
	victim := a
	if owner == b.ClientID {
		victim = b
	}
	killedAt := time.Now()
	victim.Kill()

	for i, id := range orders {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			code, o, err := f.Call(http.MethodGet, "/v1/orders/"+id, tokens[i], nil)
			assert.NoError(c, err)
			assert.Equal(c, http.StatusOK, code)
			assert.Equal(c, "CONFIRMED", o["status"])
		}, 45*time.Second, 200*time.Millisecond) // the reconciler alone would need over 60 s
	}
	res := PaymentKill{Orders: buyers, ConfirmedAfterKill: time.Since(killedAt)}
	require.Zero(t, f.Count(`SELECT count(*) FROM orders WHERE status <> 'CONFIRMED'`))
	require.Equal(t, buyers, f.Count(`SELECT count(*) FROM claims WHERE state = 'SOLD'`))
	f.RequireSound()
	return res
}
