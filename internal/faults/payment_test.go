package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// A worker SIGKILLed while it waits on the payment provider: its payment
// jobs once stayed `running` for five minutes, long enough for 60-second
// holds to lapse and authorizations to be voided. Now the other worker picks
// them up at once; every order is confirmed, none twice.
func TestPaymentWorkerKilled(t *testing.T) {
	const secret = "whsec_fault"
	pspPort := proctest.FreePort(t)
	f := newFleet(t, proctest.Env{
		"PSP_SIM_URL": fmt.Sprintf("http://127.0.0.1:%d", pspPort), "BOXOFFICE_WEBHOOK_SECRETS": secret,
		"BOXOFFICE_TICKET_SECRET": "ticket-secret",
	})
	// No webhooks: the provider's answer to the dead worker's call is lost
	// with it, so only the rescued job (or, a minute later, the
	// reconciler) can move these orders on.
	psp := proctest.Start(t, "psp-sim", f.env, "psp-sim", "-addr", fmt.Sprintf("127.0.0.1:%d", pspPort),
		"-webhook-url", "", "-webhook-secret", secret, "-latency", "3s")
	psp.WaitLog("payment simulator listening", 30*time.Second)
	f.serve("serve")
	a, b := f.work("work-a", nil), f.work("work-b", nil)
	f.tenant()
	out := f.mustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.apiKey, map[string]any{
		"slug": "pay", "name": "Pay Night", "kind": "numbered", "capacity": 100, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 60})
	product := out["id"].(string)

	const buyers = 20
	holds := make([]string, buyers)
	tokens := make([]string, buyers)
	for i := range buyers {
		tokens[i] = f.buyerToken(fmt.Sprintf("payer-%d", i))
		r := f.mustCall(http.StatusAccepted, http.MethodPost, "/v1/products/"+product+"/reservations", tokens[i],
			map[string]any{"quantity": 1}, "Idempotency-Key", fmt.Sprintf("r-%d", i))
		status := r["statusUrl"].(string)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			code, st, err := f.call(http.MethodGet, status, tokens[i], nil)
			assert.NoError(c, err)
			assert.Equal(c, http.StatusOK, code)
			assert.Equal(c, "HELD", st["status"])
			holds[i], _ = st["holdId"].(string)
		}, 30*time.Second, 50*time.Millisecond)
	}
	orders := make([]string, buyers)
	for i := range buyers {
		o := f.mustCall(http.StatusAccepted, http.MethodPost, "/v1/orders", tokens[i],
			map[string]any{"holdId": holds[i], "paymentMethod": "sim_ok"}, "Idempotency-Key", fmt.Sprintf("o-%d", i))
		orders[i] = o["id"].(string)
	}

	// Kill whichever worker is waiting on the provider.
	var owner string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, f.pool.QueryRow(context.Background(), `
			SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'payment_authorize' AND state = 'running' LIMIT 1`).Scan(&owner))
	}, 30*time.Second, 20*time.Millisecond)
	victim := a
	if owner == b.clientID {
		victim = b
	}
	killedAt := time.Now()
	victim.Kill()

	for i, id := range orders {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			code, o, err := f.call(http.MethodGet, "/v1/orders/"+id, tokens[i], nil)
			assert.NoError(c, err)
			assert.Equal(c, http.StatusOK, code)
			assert.Equal(c, "CONFIRMED", o["status"])
		}, 45*time.Second, 200*time.Millisecond) // the reconciler would need over 60 s
	}
	t.Logf("payment worker killed mid-authorization: all %d orders confirmed %s after the kill", buyers, time.Since(killedAt))
	require.Zero(t, f.count(`SELECT count(*) FROM orders WHERE status <> 'CONFIRMED'`))
	require.Equal(t, buyers, f.count(`SELECT count(*) FROM claims WHERE state = 'SOLD'`))
	f.requireSound()
}
