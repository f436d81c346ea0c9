package faults_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/fleet"
	"boxoffice/internal/proctest"
)

// The API SIGKILLed under load and started again: shoppers retry with the
// same Idempotency-Key and each key ends up as exactly one request.
func TestAPIKilledSameKeyRetries(t *testing.T) {
	f := fleet.New(t, nil)
	api := f.Serve("serve-a")
	f.Work("work", nil)
	f.Tenant()
	p := f.Product(5000)

	seen := f.LoadWithFault(p, 1500, 16, func() {
		api.Kill()
		time.Sleep(time.Second)
		f.Serve("serve-b")
	})
	t.Logf("answers while the API was killed and restarted (-1: no connection): %v", seen)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	require.Positive(t, seen[-1], "the kill cut requests off")

	f.WaitDecided(60 * time.Second)
	require.Equal(t, 1500, f.Count(`SELECT count(*) FROM reservation_requests`), "one request per key")
	f.RequireSound()
}

// A PostgreSQL crash and restart during a sale: the API answers 503
// DATABASE_UNAVAILABLE (never 500) while it is down, shoppers retry with the
// same key, the workers reconnect, and every request is decided once.
func TestPostgresRestart(t *testing.T) {
	f := fleet.New(t, nil)
	f.Serve("serve")
	f.Work("work", nil)
	f.Tenant()
	p := f.Product(5000)

	seen := f.LoadWithFault(p, 1500, 16, func() {
		f.Cluster.Stop("immediate")
		time.Sleep(2 * time.Second)
		f.Cluster.Start()
	})
	t.Logf("answers across the crash: %v", seen)
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	require.Positive(t, seen[http.StatusServiceUnavailable], "503s while the database was down")

	f.WaitDecided(90 * time.Second)
	require.Equal(t, 1500, f.Count(`SELECT count(*) FROM reservation_requests`), "one request per key")
	f.RequireSound()
}

// Two products on sale at once, 16 shoppers at a time: accept batches once
// deadlocked on the two products' claim jobs (500s with no fault at all).
func TestTwoProductsAtOnce(t *testing.T) {
	f := fleet.New(t, nil)
	f.Serve("serve")
	f.Work("work", nil)
	f.Tenant()
	p1, p2 := f.Product(1000), f.Product(1000)
	var wg sync.WaitGroup
	seen := make([]map[int]int, 2)
	for i, p := range []uuid.UUID{p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen[i] = f.Load(p, 240, 8)
		}()
	}
	wg.Wait()
	for _, s := range seen {
		require.Zero(t, s[http.StatusInternalServerError], "no 500s: %v", s)
	}
	f.WaitDecided(60 * time.Second)
	f.RequireSound()
}

// Split processes each expose their own metrics: the workers' holds and
// invariant alarms are visible (they once showed 0 on the API's /metrics),
// product-labelled and database-derived series are not on the API process,
// and only one worker (River's leader) reports the database's gauges.
func TestSplitProcessMetrics(t *testing.T) {
	f := fleet.New(t, proctest.Env{"BOXOFFICE_AUDIT_INTERVAL": "1s"})
	api := f.Serve("serve")
	a, b := f.Work("work-a", nil), f.Work("work-b", nil)
	f.Tenant()
	p := f.Product(1000)
	f.Load(p, 200, 8)
	f.WaitDecided(60 * time.Second)

	apiMetrics := f.Scrape(t, api)
	require.Equal(t, float64(200), fleet.MetricValue(apiMetrics, "boxoffice_reservations_accepted_total"))
	require.NotContains(t, apiMetrics, `product="`, "no product-labelled series on the API process")
	require.NotContains(t, apiMetrics, "boxoffice_requests{")
	code, _, err := f.Call(http.MethodGet, "/metrics", "", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "nothing on the public port")

	// The database's gauges come from the leader alone; elections take a
	// few seconds.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ma, mb := f.Scrape(c, a.Process), f.Scrape(c, b.Process)
		assert.NotEqual(c, strings.Contains(ma, "boxoffice_requests{"), strings.Contains(mb, "boxoffice_requests{"),
			"exactly one worker reports the database's gauges")
	}, 30*time.Second, 500*time.Millisecond)
	holds := fleet.MetricValue(f.Scrape(t, a.Process), "boxoffice_holds_created_total") +
		fleet.MetricValue(f.Scrape(t, b.Process), "boxoffice_holds_created_total")
	require.Equal(t, float64(200), holds)

	// A corrupted counter is an alarm on the worker that audits.
	_, err = f.Pool.Exec(t.Context(), `UPDATE inventory SET held = held + 1, available = available - 1 WHERE product_id = $1`, p)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Positive(c, fleet.MetricValue(f.Scrape(c, a.Process), "boxoffice_invariant_violations_total")+
			fleet.MetricValue(f.Scrape(c, b.Process), "boxoffice_invariant_violations_total"))
	}, 30*time.Second, 500*time.Millisecond)
}
