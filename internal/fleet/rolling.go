package fleet

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// Rolling is what RollingRestart measured.
type Rolling struct {
	// Recorded is how many requests were recorded while the fleet restarted.
	Recorded int `json:"recorded"`
	// Retried is how many requests the balancer sent to the other API
	// process because a stopping one refused or dropped them.
	Retried int64 `json:"retried"`
	// DecisionP50/P99/Max: request → decision of those requests.
	DecisionP50 time.Duration `json:"decisionP50Ns"`
	DecisionP99 time.Duration `json:"decisionP99Ns"`
	DecisionMax time.Duration `json:"decisionMaxNs"`
	// Took is how long the restart of every process took.
	Took time.Duration `json:"tookNs"`
}

// RollingRestart restarts every process of a fleet — two API processes
// behind a balancer, two workers — one after the other with SIGTERM while
// shoppers keep reserving, as a deploy does. Graceful means: in-flight
// accepts finish (the balancer retries what a stopping process refused),
// a stopping worker's drain hands its product to a follow-up job that the
// other worker fetches at once, and so no claim job is left running for a
// rescuer (none is ever attempted twice).
func RollingRestart(t T) Rolling {
	t.Helper()
	var out Rolling
	f := New(t, nil)
	b := f.Balance(2)
	apis := []*proctest.Process{f.ServeBehind("serve-0", 0), f.ServeBehind("serve-1", 1)}
	works := []*Worker{f.Work("work-0", nil), f.Work("work-1", nil)}
	f.Tenant()
	p := f.Product(1_000_000)

	var start, end time.Time
	seen := f.LoadDuring(p, 16, func() {
		f.WaitRequests(200, 30*time.Second)
		start = time.Now()
		for i := range apis {
			require.NoError(t, apis[i].Stop(30*time.Second), "serve exits 0 on SIGTERM")
			apis[i] = f.ServeBehind(fmt.Sprintf("serve-%d-new", i), i)
		}
		for i := range works {
			require.NoError(t, works[i].Stop(40*time.Second), "work exits 0 on SIGTERM")
			works[i] = f.Work(fmt.Sprintf("work-%d-new", i), nil)
		}
		end = time.Now()
		// Shoppers keep going a moment on the new fleet.
		n := f.Count(`SELECT count(*) FROM reservation_requests`)
		f.WaitRequests(n+200, 30*time.Second)
	})
	out.Took = end.Sub(start)
	out.Retried = b.Retried.Load()
	require.Zero(t, seen[http.StatusInternalServerError], "no 500s: %v", seen)
	f.WaitDecided(60 * time.Second)
	f.RequireSound()

	d := f.DecisionsBetween(uuid.Nil, start, end)
	out.Recorded, out.DecisionP50, out.DecisionP99, out.DecisionMax = d.N, d.P50, d.P99, d.Max
	require.Positive(t, out.Recorded, "shoppers were served while the fleet restarted")
	// Nothing waited for a rescuer: every claim job ran once.
	var retried string
	require.NoError(t, f.Pool.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(format('%s %s attempt %s by %s: %s', id, state, attempt, attempted_by, errors), '; '), '')
		FROM river_job WHERE kind = 'claim_product' AND attempt > 1`).Scan(&retried))
	require.Empty(t, retried, "a claim job was retried or rescued")
	return out
}
