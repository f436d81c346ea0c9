package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/mail"
	"boxoffice/internal/payment"
	"boxoffice/internal/proctest"
)

// DateCancel is what DateCancelKill measured.
type DateCancel struct {
	Orders int `json:"orders"`
	// MailedBeforeKill is how many buyers had their mail when the worker
	// running the cancellation was killed.
	MailedBeforeKill int `json:"mailedBeforeKill"`
	// Duplicates are buyers mailed twice: at most the one the killed
	// worker had sent and not yet recorded.
	Duplicates int `json:"duplicates"`
	// DoneAfterKill: from the kill until every order was refunded and
	// every buyer mailed.
	DoneAfterKill time.Duration `json:"doneAfterKillNs"`
}

// cancelMail is the subject of a cancelled date's mail to its buyers.
const cancelMail = "Cancelled: "

// DateCancelKill sells a date to over 500 buyers, each with their own
// address, cancels it, and SIGKILLs the worker running the cancellation
// while it mails the buyers. The other worker resumes the job: every order
// is refunded once at the provider, every buyer mailed at least once and at
// most one of them twice.
func DateCancelKill(t T) DateCancel {
	t.Helper()
	const secret = "whsec_fault"
	const orders = 500
	sink, err := mail.NewSink("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(sink.Close)
	pspPort := proctest.FreePort(t)
	env := checkoutEnv(pspPort, secret)
	env["BOXOFFICE_SMTP_ADDR"] = sink.Addr()
	f := New(t, env)
	f.startPSP(pspPort, secret, "-latency", "10ms")
	f.Serve("serve")
	a, b := f.Work("work-a", nil), f.Work("work-b", nil)
	f.Tenant()
	out := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "gala", "name": "Gala Night", "kind": "numbered", "capacity": orders + 100, "priceCents": 2500,
		"currency": "EUR", "holdSeconds": 120})
	product := out["id"].(string)

	shoppers := f.Shop(product, 50, true, nil)
	require.Eventually(t, func() bool { return len(shoppers.Confirmations()) >= orders }, 3*time.Minute, 100*time.Millisecond,
		"%d orders confirmed", orders)
	shoppers.Stop()
	sold := f.Count(`SELECT count(*) FROM orders WHERE status = 'CONFIRMED'`)
	// Refunds wait for the captures; let them land first so the job runs
	// straight through to the mail.
	require.Eventually(t, func() bool {
		return f.Count(`SELECT count(*) FROM orders WHERE capture_status <> 'CAPTURED'`) == 0
	}, time.Minute, 100*time.Millisecond)
	cancelled := func() int {
		n := 0
		for _, m := range sink.Messages() {
			if strings.HasPrefix(m.Subject(), cancelMail) {
				n++
			}
		}
		return n
	}

	f.MustCall(http.StatusAccepted, http.MethodPost, "/v1/products/"+product+"/cancellation", f.APIKey,
		map[string]any{"reason": "The hall flooded."})
	require.Eventually(t, func() bool { return cancelled() >= 20 }, time.Minute, time.Millisecond, "the mail begins")
	var owner string
	require.NoError(t, f.Pool.QueryRow(context.Background(), `
		SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job WHERE kind = 'cancel_date' AND state = 'running'`).
		Scan(&owner), "the cancellation is still running when its worker is killed")
	victim := a
	if owner == b.ClientID {
		victim = b
	}
	killedAt := time.Now()
	victim.Kill()
	res := DateCancel{Orders: sold, MailedBeforeKill: cancelled()}
	require.Less(t, res.MailedBeforeKill, sold, "killed midway")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, p, err := f.Call(http.MethodGet, "/v1/products/"+product+"/cancellation", f.APIKey, nil)
		assert.NoError(c, err)
		assert.Equal(c, http.StatusOK, code)
		assert.Equal(c, "DONE", p["state"], "%v", p)
	}, 2*time.Minute, 200*time.Millisecond)
	res.DoneAfterKill = time.Since(killedAt)

	// Every order refunded once, in full.
	require.Equal(t, sold, f.Count(`SELECT count(*) FROM orders WHERE status = 'CANCELLED' AND refunded_cents = amount_cents`))
	require.Equal(t, sold, f.Count(`SELECT count(*) FROM refunds WHERE kind = 'EVENT_CANCELLED' AND status = 'REFUNDED'`))
	require.Equal(t, sold, f.Count(`SELECT count(DISTINCT order_id) FROM refunds`))
	require.Zero(t, f.Count(`SELECT count(*) FROM tickets WHERE status = 'VALID'`))
	// The provider agrees: each payment refunded, one refund under each key.
	rows, err := f.Pool.Query(context.Background(), `
		SELECT r.provider_key, a.provider_payment_id FROM refunds r
		JOIN payment_attempts a ON a.order_id = r.order_id AND a.status IN ('CAPTURED', 'REFUNDED')`)
	require.NoError(t, err)
	type pair struct{ key, payment string }
	var pairs []pair
	for rows.Next() {
		var p pair
		require.NoError(t, rows.Scan(&p.key, &p.payment))
		pairs = append(pairs, p)
	}
	require.NoError(t, rows.Err())
	require.Len(t, pairs, sold)
	psp := fmt.Sprintf("http://127.0.0.1:%d", pspPort)
	for _, p := range pairs {
		var refund struct {
			Status string `json:"status"`
			Amount int64  `json:"amount"`
		}
		getJSON(t, f.HTTP, psp+"/v1/refunds?idempotency_key="+p.key, &refund)
		require.Equal(t, int64(2500), refund.Amount, "refund %s", p.key)
		var paid payment.Payment
		getJSON(t, f.HTTP, psp+"/v1/payments/"+p.payment, &paid)
		require.Equal(t, payment.StatusRefunded, paid.Status, "payment %s", p.payment)
	}

	// Every buyer mailed, a duplicate only for the mail in flight at the kill.
	perBuyer := map[string]int{}
	for _, m := range sink.Messages() {
		if strings.HasPrefix(m.Subject(), cancelMail) {
			perBuyer[m.To]++
		}
	}
	require.Len(t, perBuyer, sold, "every buyer mailed")
	for _, n := range perBuyer {
		if n > 1 {
			res.Duplicates += n - 1
		}
	}
	require.LessOrEqual(t, res.Duplicates, 1, "deduplicated: only the mail sent and not recorded at the kill goes twice")
	f.RequireSound()
	return res
}

// getJSON reads a JSON answer of a GET that must succeed.
func getJSON(t T, c *http.Client, url string, into any) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, raw)
	require.NoError(t, json.Unmarshal(raw, into))
}
