package fleet

import (
	"context"
	"fmt"
	"net/http"
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

	pspPort := proctest.FreePort(t)
	f := NewOn(t, primary, url, checkoutEnv(pspPort, "whsec_failover"))
	f.startPSP(pspPort, "whsec_failover")
	f.Serve("serve")
	f.Work("work-a", nil)
	f.Work("work-b", nil)
	f.Tenant()
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "failover", "name": "Failover Night", "kind": "numbered", "capacity": 2000, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 600})
	shoppers := f.Shop(created["id"].(string), 6, false, func(method, path string, problem map[string]any) {
		if problem["code"] != "DATABASE_UNAVAILABLE" {
			t.Errorf("%s %s: 503 with code %v, want DATABASE_UNAVAILABLE", method, path, problem["code"])
		}
	})
	require.Eventually(t, func() bool { return shoppers.ConfirmedAfter(time.Time{}) >= 10 }, 2*time.Minute,
		50*time.Millisecond, "orders confirmed before the failover")

	killedAt := time.Now()
	out.ConfirmedBefore = shoppers.ConfirmedAfter(time.Time{})
	primary.Stop("immediate")
	// Fenced: the old primary stays down; nothing can write to it.
	_, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable&connect_timeout=2", primary.Port))
	require.Error(t, err, "the old primary refuses connections")
	// An operator (or the platform) notices and promotes.
	time.Sleep(2 * time.Second)
	standby.Promote()
	promotedAt := time.Now()
	out.WithoutWriter = promotedAt.Sub(killedAt)
	require.Eventually(t, func() bool { return shoppers.ConfirmedAfter(promotedAt) >= 10 }, 2*time.Minute,
		100*time.Millisecond, "orders confirmed after the promotion")
	shoppers.Stop()
	out.Settled = time.Since(promotedAt)
	out.Unavailable = shoppers.Refused()
	if at := shoppers.FirstAcceptAfter(promotedAt); !at.IsZero() {
		out.Resumed = at.Sub(killedAt)
	}
	confirmed := shoppers.Confirmations()
	out.Confirmed = len(confirmed)
	for _, c := range confirmed {
		var status string
		err := f.Pool.QueryRow(context.Background(), `SELECT status FROM orders WHERE id = $1`, c.Order).Scan(&status)
		if err != nil || status != "CONFIRMED" {
			out.Lost++
		}
	}
	require.Zero(t, out.Lost, "confirmed orders lost in the failover")
	f.RequireSound()
	return out
}
