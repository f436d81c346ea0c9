package fleet

import (
	"context"
	"fmt"
	"net/http"
	"sync"
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
	// PromotionWait is the drill's own fixed wait between the kill and the
	// promotion (an operator or the platform noticing): not BoxOffice's.
	PromotionWait time.Duration `json:"promotionWaitNs"`
	// WithoutWriter: from the primary's death to the first reservation
	// accepted on the new primary (PromotionWait included).
	WithoutWriter time.Duration `json:"withoutWriterNs"`
	// Resumed: from the promotion to the first reservation accepted after
	// it — BoxOffice's own part of WithoutWriter.
	Resumed time.Duration `json:"resumedNs"`
	// Unavailable: 503 answers shoppers got meanwhile (they retried).
	Unavailable int64 `json:"unavailable"`
	// Settled: from the promotion until every shopper in flight had their
	// order confirmed (payments failed meanwhile are retried with backoff).
	Settled time.Duration `json:"settledNs"`
}

// promotionWait is how long the drill leaves the sale without a writer
// before promoting, as an operator (or RDS) takes to notice.
const promotionWait = 2 * time.Second

// failover is a sale with checkout on a primary with a synchronous standby,
// BoxOffice reaching them through one DATABASE_URL with both hosts and
// target_session_attrs=read-write, as an operator deploys it.
type failover struct {
	f                *Fleet
	primary, standby *proctest.Cluster
	serve            *proctest.Process
	work             []*Worker
	product          string
	shoppers         *Shoppers

	mu    sync.Mutex
	codes map[string]int // 503 answers by code
}

func startFailover(t T) *failover {
	t.Helper()
	primary := proctest.NewCluster(t)
	primary.URL("boxoffice")
	standby := primary.Replicate()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/boxoffice?sslmode=disable&target_session_attrs=read-write",
		primary.Port, standby.Port)

	pspPort := proctest.FreePort(t)
	// Probes every 200 ms: a second writer is seen sooner than with the
	// default second, and the test waits less.
	env := checkoutEnv(pspPort, "whsec_failover")
	env["BOXOFFICE_FENCE_PROBE_INTERVAL"] = "200ms"
	f := NewOn(t, primary, url, env)
	o := &failover{f: f, primary: primary, standby: standby, codes: map[string]int{}}
	f.startPSP(pspPort, "whsec_failover")
	o.serve = f.Serve("serve")
	o.work = []*Worker{f.Work("work-a", nil), f.Work("work-b", nil)}
	f.Tenant()
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "failover", "name": "Failover Night", "kind": "numbered", "capacity": 2000, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 600})
	o.product = created["id"].(string)
	o.shoppers = f.Shop(o.product, 6, false, func(_, _ string, problem map[string]any) {
		code, _ := problem["code"].(string)
		o.mu.Lock()
		o.codes[code]++
		o.mu.Unlock()
	})
	require.Eventually(t, func() bool { return o.shoppers.ConfirmedAfter(time.Time{}) >= 10 }, 2*time.Minute,
		50*time.Millisecond, "orders confirmed before the failover")
	return o
}

// refusedWith counts the 503 answers with code.
func (o *failover) refusedWith(code string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.codes[code]
}

// killAndPromote kills the primary with orders in flight, checks it is
// down, waits promotionWait and promotes the standby; it returns when the
// kill and the promotion happened.
func (o *failover) killAndPromote() (killedAt, promotedAt time.Time) {
	t := o.f.t
	killedAt = time.Now()
	o.primary.Stop("immediate")
	_, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable&connect_timeout=2", o.primary.Port))
	require.Error(t, err, "the old primary refuses connections")
	time.Sleep(promotionWait)
	o.standby.Promote()
	return killedAt, time.Now()
}

// PostgresFailover kills the primary (pg_ctl stop -m immediate) with orders
// in flight, keeps it down (checked to refuse a connection), promotes the
// standby and clears its synchronous_standby_names, and lets BoxOffice find
// the new writer by itself. While no writer is known the API answers 503
// (DATABASE_UNAVAILABLE, or PRODUCT_BUSY for a request caught mid-wait);
// afterwards every order a shopper saw confirmed is there.
func PostgresFailover(t T) Failover {
	t.Helper()
	o := startFailover(t)
	out := Failover{ConfirmedBefore: o.shoppers.ConfirmedAfter(time.Time{}), PromotionWait: promotionWait}
	killedAt, promotedAt := o.killAndPromote()
	require.Eventually(t, func() bool { return o.shoppers.ConfirmedAfter(promotedAt) >= 10 }, 2*time.Minute,
		100*time.Millisecond, "orders confirmed after the promotion")
	o.shoppers.Stop()
	out.Settled = time.Since(promotedAt)
	out.Unavailable = o.shoppers.Refused()
	if at := o.shoppers.FirstAcceptAfter(killedAt); !at.IsZero() {
		out.WithoutWriter = at.Sub(killedAt)
	}
	if at := o.shoppers.FirstAcceptAfter(promotedAt); !at.IsZero() {
		out.Resumed = at.Sub(promotedAt)
	}
	out.Confirmed, out.Lost = o.confirmedOnNewPrimary()
	require.Zero(t, out.Lost, "confirmed orders lost in the failover")
	o.mu.Lock()
	for code := range o.codes {
		require.Contains(t, []string{"DATABASE_UNAVAILABLE", "PRODUCT_BUSY"}, code, "503 codes during a failover")
	}
	o.mu.Unlock()
	o.f.RequireSound()
	return out
}

// confirmedOnNewPrimary checks every order a shopper saw confirmed against
// the new primary.
func (o *failover) confirmedOnNewPrimary() (confirmed, lost int) {
	conn, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable", o.standby.Port))
	require.NoError(o.f.t, err)
	defer conn.Close(context.Background())
	for _, c := range o.shoppers.Confirmations() {
		confirmed++
		var status string
		err := conn.QueryRow(context.Background(), `SELECT status FROM orders WHERE id = $1`, c.Order).Scan(&status)
		if err != nil || status != "CONFIRMED" {
			lost++
		}
	}
	return confirmed, lost
}
