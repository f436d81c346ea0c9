package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
	"boxoffice/internal/reservation"
)

// ScaleStep is one size of ScaleOut.
type ScaleStep struct {
	Workers       int     `json:"workers"`
	Requests      int     `json:"requests"`
	DecidedPerSec float64 `json:"decidedPerSec" doc:"requests ÷ (last decision − first decision)"`
	// Sharing is how many of the work processes ran claim jobs.
	Sharing int `json:"sharing"`
}

// ScaleOut queues perProduct requests on each of 8 products with no worker
// running, then starts 1, 2 and 4 work processes (a fresh queue each time)
// and measures how fast they decide it all, and whether every process took
// a share of the products. Each process drains two products at a time
// (BOXOFFICE_WORKERS=2), so that eight products need four processes.
// The claims queue is paused while the processes start and resumed once all
// are up: started one after another, the first ones took every product
// (a drain of a few hundred requests ends before the next process is up),
// which measured the start-up, not the sharing.
func ScaleOut(t T, perProduct int) []ScaleStep {
	t.Helper()
	f := New(t, nil)
	f.Serve("serve")
	f.Tenant()
	// A River client that works no queue: it pauses and resumes the claims
	// queue for every process (they hear it through River's notifications).
	queues, err := river.NewClient(riverpgxv5.New(f.Pool), &river.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	var out []ScaleStep
	for _, n := range []int{1, 2, 4} {
		if n > 1 { // the first step's process made River's row of the queue
			require.NoError(t, queues.QueuePause(ctx, reservation.QueueClaims, nil))
		}
		products := make([]uuid.UUID, 8)
		for i := range products {
			products[i] = f.Product(perProduct * 2)
		}
		var wg sync.WaitGroup
		for _, p := range products {
			wg.Add(1)
			go func() { defer wg.Done(); f.Load(p, perProduct, 4) }()
		}
		wg.Wait()
		works := make([]*Worker, n)
		var started sync.WaitGroup
		for i := range works {
			started.Add(1)
			go func() {
				defer started.Done()
				works[i] = f.Work(fmt.Sprintf("work-%d-of-%d", i, n), proctest.Env{"BOXOFFICE_WORKERS": "2"})
			}()
		}
		started.Wait()
		if n > 1 {
			// "workers running" is logged once River's client has started;
			// its producers connect their listener a moment later, and one
			// that missed the resume would start fetching only at its next
			// poll.
			time.Sleep(500 * time.Millisecond)
			require.NoError(t, queues.QueueResume(ctx, reservation.QueueClaims, nil))
		}
		f.WaitDecided(2 * time.Minute)
		step := ScaleStep{Workers: n, Requests: 8 * perProduct}
		var span float64
		require.NoError(t, f.Pool.QueryRow(ctx, `
			SELECT extract(epoch FROM max(processed_at) - min(processed_at)) FROM reservation_requests
			WHERE product_id = ANY($1)`, products).Scan(&span))
		if span > 0 {
			step.DecidedPerSec = float64(step.Requests) / span
		}
		ids := make([]string, n)
		for i, w := range works {
			ids[i] = w.ClientID
		}
		require.NoError(t, f.Pool.QueryRow(ctx, `
			SELECT count(DISTINCT c) FROM river_job, unnest(attempted_by) c
			WHERE kind = 'claim_product' AND c = ANY($1) AND (args->>'product_id')::uuid = ANY($2)`,
			ids, products).Scan(&step.Sharing))
		for _, w := range works {
			require.NoError(t, w.Stop(40*time.Second))
		}
		out = append(out, step)
	}
	f.RequireSound()
	return out
}
