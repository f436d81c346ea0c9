package fleet

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// SweeperKill is what SweeperKilled measured.
type SweeperKill struct {
	// Held: from the SIGKILL of the worker running a long sweep to the end
	// of its statement on the server (the product's claims wait for it).
	Held time.Duration `json:"heldNs"`
	// Decided: from a new worker's start until the requests queued after
	// the kill were decided.
	Decided time.Duration `json:"decidedNs"`
}

// SweeperKilled SIGKILLs the worker whose sweeper is freeing a product's
// expired holds in a long statement (a trigger makes each deleted claim
// take 50 ms, as a bad plan once made the sweep take minutes), and measures
// how long the statement runs on without its client: the server checks
// for the client (client_connection_check_interval) and the sweep's
// statements are bounded, so it is seconds, not the 20 s the statement
// would take.
func SweeperKilled(t T) SweeperKill {
	t.Helper()
	var out SweeperKill
	f := New(t, proctest.Env{"BOXOFFICE_SWEEP_INTERVAL": "200ms"})
	f.Serve("serve")
	first := f.Work("work-a", nil)
	f.Tenant()
	// Holds of 30 s, the shortest: the sweep starts once they expire.
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "sweep", "name": "Sweep Night", "kind": "numbered", "capacity": 2000, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 30})
	p := uuid.MustParse(created["id"].(string))
	f.Load(p, 400, 16)
	f.WaitDecided(60 * time.Second)
	// No sweeper while the holds expire, so that one sweep frees them all.
	require.NoError(t, first.Stop(30*time.Second))

	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := f.Pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`CREATE FUNCTION slow_claim_delete() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_sleep(0.05); RETURN OLD; END $$`)
	exec(`CREATE TRIGGER slow_claim_delete BEFORE DELETE ON claims FOR EACH ROW EXECUTE FUNCTION slow_claim_delete()`)
	require.Eventually(t, func() bool {
		return f.Count(`SELECT count(*) FROM holds WHERE product_id = $1 AND expires_at > now()`, p) == 0
	}, time.Minute, 100*time.Millisecond, "the holds expire")
	w := f.Work("work-b", nil)
	// The sweeper's statement deletes the claims it could lock.
	sweeping := func() bool {
		return f.Count(`SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE '%FOR UPDATE OF l SKIP LOCKED%' AND pid <> pg_backend_pid()`) > 0
	}
	require.Eventually(t, sweeping, time.Minute, 10*time.Millisecond, "the sweeper frees the expired holds")
	killedAt := time.Now()
	w.Kill()
	require.Eventually(t, func() bool { return !sweeping() }, time.Minute, 10*time.Millisecond,
		"the killed sweeper's statement ends")
	out.Held = time.Since(killedAt)

	exec(`DROP TRIGGER slow_claim_delete ON claims`)
	started := time.Now()
	f.Work("work-c", nil)
	f.Load(p, 100, 16)
	f.WaitDecided(60 * time.Second)
	out.Decided = time.Since(started)
	f.RequireSound()
	return out
}
