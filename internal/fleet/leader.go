package fleet

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// LeaderLoss is what RiverLeaderLoss measured.
type LeaderLoss struct {
	// StepBefore is the longest gap between admission steps before the kill
	// (the controller's pace: a step a second).
	StepBefore time.Duration `json:"stepBeforeNs"`
	// Paused is the longest gap between admission steps from the kill until
	// the pace was back: no shopper was admitted meanwhile.
	Paused time.Duration `json:"pausedNs"`
	// StepAfter is the longest gap between the last steps, at pace again.
	StepAfter time.Duration `json:"stepAfterNs"`
}

// RiverLeaderLoss SIGKILLs the work process that is River's leader — the
// one running the periodic jobs: expiry, repair, audit, relay — while a
// waiting room admits shoppers, and measures how long admission paused.
// Admission is not the leader's (every work process steps the rooms): the
// other process's steps go on, where a leader's periodic job paused until
// River had elected another (15–20 s).
func RiverLeaderLoss(t T) LeaderLoss {
	t.Helper()
	var out LeaderLoss
	f := New(t, proctest.Env{"BOXOFFICE_ACCESS_TOKEN_SECRET": "fleet-access-secret"})
	f.Serve("serve")
	works := []*Worker{f.Work("work-a", nil), f.Work("work-b", nil)}
	f.Tenant()
	// λ = L ÷ W = 50 shoppers a second, L far above what is admitted: the
	// controller admits at its pace for the whole scenario.
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "room-" + uuid.NewString()[:8], "name": "Leader Night", "kind": "numbered", "capacity": 100000,
		"priceCents": 1000, "currency": "EUR",
		"waitingRoom": map[string]any{"enabled": true, "activeShoppers": 100000, "shoppingSeconds": 2000}})
	p := uuid.MustParse(created["id"].(string))

	// Enough shoppers waiting to keep admission busy past the kill.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 2400; i += 8 {
				code, body, err := f.Call(http.MethodPost, "/v1/products/"+p.String()+"/queue", f.BuyerToken(fmt.Sprintf("q-%d", i)), nil)
				assert.NoError(t, err)
				assert.Contains(t, []int{http.StatusCreated, http.StatusOK}, code, body)
			}
		}()
	}
	wg.Wait()

	steps := func() []time.Time {
		rows, err := f.Pool.Query(context.Background(), `SELECT at FROM admission_steps WHERE product_id = $1 ORDER BY at`, p)
		require.NoError(t, err)
		var at []time.Time
		for rows.Next() {
			var x time.Time
			require.NoError(t, rows.Scan(&x))
			at = append(at, x)
		}
		require.NoError(t, rows.Err())
		return at
	}
	require.Eventually(t, func() bool { return len(steps()) >= 4 }, 60*time.Second, 100*time.Millisecond,
		"admission runs")

	var leader string
	require.NoError(t, f.Pool.QueryRow(context.Background(), `SELECT leader_id FROM river_leader`).Scan(&leader))
	killedAt := time.Now()
	for _, w := range works {
		if w.ClientID == leader {
			w.Kill()
		}
	}
	// Resumed: steps after the kill, the last three at the controller's
	// pace again.
	resumed := func(at []time.Time) bool {
		n := len(at)
		if n < 4 || !at[n-4].After(killedAt) {
			return false
		}
		for i := n - 3; i < n; i++ {
			if at[i].Sub(at[i-1]) > 2*time.Second {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool { return resumed(steps()) }, 90*time.Second, 100*time.Millisecond,
		"admission resumes its pace after the leader's death")

	at := steps()
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		switch {
		case !at[i].After(killedAt):
			out.StepBefore = max(out.StepBefore, gap)
		case i >= len(at)-3:
			out.StepAfter = max(out.StepAfter, gap)
			out.Paused = max(out.Paused, gap)
		default:
			out.Paused = max(out.Paused, gap)
		}
	}
	f.RequireSound()
	return out
}
