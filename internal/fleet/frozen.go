package fleet

import (
	"time"

	"github.com/stretchr/testify/require"
)

// Frozen is what FrozenWorker measured.
type Frozen struct {
	// ResumedAfter: from the SIGSTOP of the worker draining a product to
	// the next decision by another worker.
	ResumedAfter time.Duration `json:"resumedAfterNs"`
	// Frozen is how long the worker stayed stopped.
	Frozen time.Duration `json:"frozenNs"`
}

// frozenFor is how long FrozenWorker keeps the worker stopped: longer than
// the stall it must bound.
const frozenFor = 30 * time.Second

// FrozenWorker SIGSTOPs the worker draining a product (alive, holding its
// connections and its liveness lock, doing nothing) while another worker
// is alive, and measures how long the product waits; then SIGCONTs it and
// checks that nothing was claimed twice.
func FrozenWorker(t T) Frozen {
	t.Helper()
	out := Frozen{Frozen: frozenFor}
	f, p, victim, _ := midDrain(t, 1500)
	stoppedAt := time.Now()
	victim.Pause()
	// A batch in flight at the stop may still commit within its margin.
	const margin = 500 * time.Millisecond
	require.Eventually(t, func() bool {
		return f.Count(`SELECT count(*) FROM reservation_requests WHERE processed_at > $1`, stoppedAt.Add(margin)) > 0
	}, frozenFor, 50*time.Millisecond, "another worker decides while the frozen one sleeps")
	out.ResumedAfter = margin + f.FirstDecisionAfter(stoppedAt.Add(margin))
	if wait := frozenFor - time.Since(stoppedAt); wait > 0 {
		time.Sleep(wait)
	}
	victim.Resume()
	f.WaitDecided(60 * time.Second)
	f.Load(p, 200, 16)
	f.WaitDecided(60 * time.Second)
	f.RequireSound()
	return out
}
