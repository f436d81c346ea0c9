package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// SplitBrain is what OldPrimaryBack measured.
type SplitBrain struct {
	// Paused: 503 WRITER_CONFLICT answers while both databases accepted
	// writes (must be some: purchases pause).
	Paused int `json:"paused"`
	// PausedAfter: from the old primary's start to the first
	// WRITER_CONFLICT answer.
	PausedAfter time.Duration `json:"pausedAfterNs"`
	// ClaimedOnBoth: numbers held or sold on both databases by different
	// holds, the old primary's made once it was back (must be 0).
	ClaimedOnBoth int `json:"claimedOnBoth"`
	// WrittenToOld: reservation requests, holds and orders the old primary
	// took once it was back (must be 0). Commits it made locally as it was
	// killed, which its standby never acknowledged and no shopper was told
	// of, are not counted.
	WrittenToOld int `json:"writtenToOld"`
	// ResumedAfter: from fencing the old primary again to the first order
	// confirmed after it.
	ResumedAfter time.Duration `json:"resumedAfterNs"`
}

// conflictFor is how long the drill keeps both databases writable.
const conflictFor = 8 * time.Second

// OldPrimaryBack is the failover drill gone wrong: after the promotion the
// old primary starts again as a writer on its old timeline, no longer
// waiting for a standby (a network partition healing, a runbook slip).
// `serve` and one `work` restart meanwhile — a fresh process would reach
// the old primary first, being first in DATABASE_URL — and shoppers keep
// buying. BoxOffice must pause purchases (503 WRITER_CONFLICT) instead of
// choosing a writer: nothing is written to the old primary, no number is
// claimed on both. Once the old primary is fenced (stopped), sales resume
// on the new one.
func OldPrimaryBack(t T) SplitBrain {
	t.Helper()
	o := startFailover(t)
	var out SplitBrain
	_, promotedAt := o.killAndPromote()
	require.Eventually(t, func() bool { return o.shoppers.ConfirmedAfter(promotedAt) >= 5 }, 2*time.Minute,
		100*time.Millisecond, "orders confirmed after the promotion")

	backAt := time.Now()
	o.primary.Start("synchronous_standby_names=''")
	require.Eventually(t, func() bool { return o.refusedWith("WRITER_CONFLICT") > 0 }, 30*time.Second,
		20*time.Millisecond, "purchases paused with WRITER_CONFLICT")
	out.PausedAfter = time.Since(backAt)
	o.serve.Kill()
	o.serve = o.f.Serve("serve-restarted")
	o.work[1].Kill()
	o.work[1] = o.f.Work("work-restarted", nil)
	time.Sleep(conflictFor)
	out.Paused = o.refusedWith("WRITER_CONFLICT")

	// Compare the two databases while both are up.
	old := connectTo(t, o.primary.Port)
	defer old.Close(context.Background())
	cur := connectTo(t, o.standby.Port)
	defer cur.Close(context.Background())
	err := old.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM reservation_requests WHERE created_at > $1)
		     + (SELECT count(*) FROM holds WHERE created_at > $1)
		     + (SELECT count(*) FROM orders WHERE created_at > $1)`, backAt).Scan(&out.WrittenToOld)
	require.NoError(t, err)
	claimsOf := func(conn *pgx.Conn, since time.Time) map[string]string {
		rows, err := conn.Query(context.Background(), `
			SELECT c.product_id::text || ':' || c.number, c.hold_id::text
			FROM claims c JOIN holds h ON h.id = c.hold_id WHERE h.created_at > $1`, since)
		require.NoError(t, err)
		m := map[string]string{}
		var key, hold string
		_, err = pgx.ForEachRow(rows, []any{&key, &hold}, func() error { m[key] = hold; return nil })
		require.NoError(t, err)
		return m
	}
	oldClaims := claimsOf(old, backAt)
	for key, hold := range claimsOf(cur, time.Time{}) {
		if h, ok := oldClaims[key]; ok && h != hold {
			out.ClaimedOnBoth++
		}
	}

	// The operator fences the old primary: sales resume by themselves.
	fencedAt := time.Now()
	o.primary.Stop("immediate")
	require.Eventually(t, func() bool { return o.shoppers.ConfirmedAfter(fencedAt) >= 5 }, 2*time.Minute,
		100*time.Millisecond, "orders confirmed once the old primary is fenced")
	for _, c := range o.shoppers.Confirmations() {
		if c.At.After(fencedAt) {
			out.ResumedAfter = c.At.Sub(fencedAt)
			break
		}
	}
	o.shoppers.Stop()
	_, lost := o.confirmedOnNewPrimary()
	require.Zero(t, lost, "confirmed orders missing on the new primary")
	require.Zero(t, out.ClaimedOnBoth, "numbers claimed on both databases")
	require.Zero(t, out.WrittenToOld, "rows written to the old primary after the failover")
	require.Positive(t, out.Paused)
	o.f.RequireSound()
	return out
}

func connectTo(t T, port int) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/boxoffice?sslmode=disable", port))
	require.NoError(t, err)
	return conn
}
