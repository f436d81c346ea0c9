package fleet

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// Failover is what PostgresFailover measured.
type Failover struct {
	// ConfirmedBefore are the orders shoppers saw CONFIRMED before the kill.
	ConfirmedBefore int `json:"confirmedBefore"`
	// Confirmed are all the orders shoppers saw CONFIRMED.
	Confirmed int `json:"confirmed"`
	// Lost: orders a shopper saw CONFIRMED that the new primary does not
	// have as CONFIRMED (must be 0).
	Lost int `json:"lost"`
	// WithoutWriter: from the primary's death to the standby's promotion.
	WithoutWriter time.Duration `json:"withoutWriterNs"`
	// Resumed: from the primary's death to the first reservation accepted
	// after the promotion.
	Resumed time.Duration `json:"resumedNs"`
	// Unavailable: 503 answers shoppers got meanwhile (they retried).
	Unavailable int64 `json:"unavailable"`
	// Settled: from the promotion until every shopper in flight had their
	// order confirmed (payments failed meanwhile are retried with backoff).
	Settled time.Duration `json:"settledNs"`
}

// PostgresFailover runs a sale with checkout against a primary with a
// synchronous standby, kills the primary (pg_ctl stop -m immediate) with
// orders in flight, fences it (kept stopped, checked to refuse a
// connection), promotes the standby and clears its synchronous_standby_names,
// and lets BoxOffice find the new writer by itself: DATABASE_URL names both
// hosts with target_session_attrs=read-write. While no writer is known the
// API answers 503; afterwards every order a shopper saw confirmed is there.
func PostgresFailover(t T) Failover {
	t.Helper()
	var out Failover
	primary := proctest.NewCluster(t)
	primary.URL("boxoffice")
	standby := primary.Replicate()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/boxoffice?sslmode=disable&target_session_attrs=read-write",
		primary.Port, standby.Port)

	const secret = "whsec_failover"
	pspPort := proctest.FreePort(t)
	f := NewOn(t, primary, url, proctest.Env{
		"PSP_SIM_URL": fmt.Sprintf("http://127.0.0.1:%d", pspPort), "BOXOFFICE_WEBHOOK_SECRETS": secret,
		"BOXOFFICE_TICKET_SECRET": "ticket-secret",
	})
	psp := proctest.Start(t, "psp-sim", f.Env, "psp-sim", "-addr", fmt.Sprintf("127.0.0.1:%d", pspPort),
		"-webhook-url", f.API+"/v1/webhooks/payments/sim", "-webhook-secret", secret, "-latency", "100ms")
	psp.WaitLog("payment simulator listening", 30*time.Second)
	f.Serve("serve")
	f.Work("work-a", nil)
	f.Work("work-b", nil)
	f.Tenant()
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "failover", "name": "Failover Night", "kind": "numbered", "capacity": 2000, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 600})
	product := created["id"].(string)

	// Shoppers: reserve, wait for the hold, order, wait for the confirmation
	// — each step retried with its Idempotency-Key through 503s and dropped
	// connections, as a store's page does.
	type seen struct {
		order string
		at    time.Time
	}
	var (
		mu        sync.Mutex
		confirmed []seen
		accepted  []time.Time
		stop      atomic.Bool
		refused   atomic.Int64
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	retry := func(what string, step func() (bool, error)) {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			done, err := step()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no success within 2 minutes (last error %v)", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	call := func(method, path, token string, body any, headers ...string) (int, map[string]any, error) {
		code, res, err := f.Call(method, path, token, body, headers...)
		if err == nil && code == http.StatusServiceUnavailable {
			refused.Add(1)
			if res["code"] != "DATABASE_UNAVAILABLE" {
				t.Errorf("%s %s: 503 with code %v, want DATABASE_UNAVAILABLE", method, path, res["code"])
			}
		}
		if err == nil && code >= 500 && code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %v", method, path, code, res)
		}
		return code, res, err
	}
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := next.Add(1)
				token := f.BuyerToken(fmt.Sprintf("shopper-%d", i))
				var status string
				retry("reserve", func() (bool, error) {
					code, r, err := call(http.MethodPost, "/v1/products/"+product+"/reservations", token,
						map[string]any{"quantity": 1}, "Idempotency-Key", fmt.Sprintf("r-%d", i))
					if err == nil && (code == http.StatusAccepted || code == http.StatusOK) {
						status, _ = r["statusUrl"].(string)
						mu.Lock()
						accepted = append(accepted, time.Now())
						mu.Unlock()
						return true, nil
					}
					return false, err
				})
				var hold string
				retry("hold", func() (bool, error) {
					code, st, err := call(http.MethodGet, status, token, nil)
					if err == nil && code == http.StatusOK && st["status"] == "HELD" {
						hold, _ = st["holdId"].(string)
						return true, nil
					}
					return false, err
				})
				var order string
				retry("order", func() (bool, error) {
					code, o, err := call(http.MethodPost, "/v1/orders", token,
						map[string]any{"holdId": hold, "paymentMethod": "sim_ok"}, "Idempotency-Key", fmt.Sprintf("o-%d", i))
					if err == nil && (code == http.StatusAccepted || code == http.StatusOK || code == http.StatusCreated) {
						order, _ = o["id"].(string)
						return true, nil
					}
					return false, err
				})
				retry("confirmation", func() (bool, error) {
					code, o, err := call(http.MethodGet, "/v1/orders/"+order, token, nil)
					if err == nil && code == http.StatusOK && o["status"] == "CONFIRMED" {
						mu.Lock()
						confirmed = append(confirmed, seen{order, time.Now()})
						mu.Unlock()
						return true, nil
					}
					return false, err
				})
			}
		}()
	}
	count := func(after time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range confirmed {
			if c.at.After(after) {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return count(time.Time{}) >= 10 }, 2*time.Minute, 50*time.Millisecond,
		"orders confirmed before the failover")

	killedAt := time.Now()
	out.ConfirmedBefore = count(time.Time{})
	primary.Stop("immediate")
	// Fenced: the old primary stays down; nothing can write to it.
	_, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable&connect_timeout=2", primary.Port))
	require.Error(t, err, "the old primary refuses connections")
	// An operator (or the platform) notices and promotes.
	time.Sleep(2 * time.Second)
	standby.Promote()
	promotedAt := time.Now()
	out.WithoutWriter = promotedAt.Sub(killedAt)
	require.Eventually(t, func() bool { return count(promotedAt) >= 10 }, 2*time.Minute, 100*time.Millisecond,
		"orders confirmed after the promotion")
	stop.Store(true)
	wg.Wait()
	out.Settled = time.Since(promotedAt)
	out.Unavailable = refused.Load()

	mu.Lock()
	defer mu.Unlock()
	for _, a := range accepted {
		if a.After(promotedAt) {
			out.Resumed = a.Sub(killedAt)
			break
		}
	}
	out.Confirmed = len(confirmed)
	for _, c := range confirmed {
		var status string
		err := f.Pool.QueryRow(context.Background(), `SELECT status FROM orders WHERE id = $1`, c.order).Scan(&status)
		if err != nil || status != "CONFIRMED" {
			out.Lost++
		}
	}
	require.Zero(t, out.Lost, "confirmed orders lost in the failover")
	f.RequireSound()
	return out
}
