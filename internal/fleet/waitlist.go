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

// WaitlistKill is what WaitlistWorkerKilled measured.
type WaitlistKill struct {
	Offers int // offers made in all
	// Served: from a new worker's start until every offer was made.
	Served time.Duration `json:"servedNs"`
}

// WaitlistWorkerKilled sells a product out to holds, puts more shoppers
// in its waiting list than there are numbers, and SIGKILLs the worker
// while it makes the offers for the lapsed holds (a trigger makes each
// offer take 50 ms, so the transaction is caught in the middle). The
// transaction rolls back whole: a new worker offers every number once —
// one offer and one mail event per shopper, in order of joining, never
// more numbers offered than are free.
func WaitlistWorkerKilled(t T) WaitlistKill {
	t.Helper()
	const capacity, inLine = 60, 80
	f := New(t, proctest.Env{"BOXOFFICE_WAITLIST_INTERVAL": "200ms", "BOXOFFICE_SWEEP_INTERVAL": "1h"})
	f.Serve("serve")
	first := f.Work("work-a", nil)
	f.Tenant()
	created := f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products", f.APIKey, map[string]any{
		"slug": "waitlist", "name": "Waitlist Night", "kind": "numbered", "capacity": capacity, "priceCents": 1000,
		"currency": "EUR", "holdSeconds": 30})
	p := uuid.MustParse(created["id"].(string))
	f.Load(p, capacity, 8)
	f.WaitDecided(60 * time.Second)
	for i := range inLine {
		buyer := fmt.Sprintf("line-%03d", i)
		f.MustCall(http.StatusCreated, http.MethodPost, "/v1/products/"+p.String()+"/waitlist", f.BuyerToken(buyer),
			map[string]any{"quantity": 1, "email": buyer + "@example.test"})
	}

	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		_, err := f.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(`CREATE FUNCTION slow_offer() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$`)
	exec(`CREATE TRIGGER slow_offer BEFORE UPDATE ON waitlist_entries FOR EACH ROW
		WHEN (NEW.state = 'OFFERED') EXECUTE FUNCTION slow_offer()`)
	offering := func() bool {
		return f.Count(`SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE '%SET state = ''OFFERED''%' AND pid <> pg_backend_pid()`) > 0
	}
	// The holds lapse after 30 s; the worker's next pass offers their
	// numbers, and is killed in the middle.
	require.Eventually(t, offering, 90*time.Second, 10*time.Millisecond, "the worker makes the offers")
	first.Kill()
	require.Eventually(t, func() bool { return !offering() }, time.Minute, 10*time.Millisecond,
		"the killed worker's transaction ends")
	offered := func() int {
		return f.Count(`SELECT count(*) FROM waitlist_entries WHERE product_id = $1 AND state = 'OFFERED'`, p)
	}
	require.Zero(t, offered(), "the killed transaction made no offer")
	f.RequireSound()

	exec(`DROP TRIGGER slow_offer ON waitlist_entries`)
	started := time.Now()
	f.Work("work-b", nil)
	require.Eventually(t, func() bool { return offered() == capacity }, time.Minute, 50*time.Millisecond,
		"every free number is offered")
	out := WaitlistKill{Offers: offered(), Served: time.Since(started)}
	time.Sleep(time.Second) // later passes offer nothing more
	require.Equal(t, capacity, offered())
	require.Equal(t, capacity, f.Count(`SELECT count(*) FROM outbox WHERE topic = 'waitlist.offered'`),
		"one offer event per offer")
	require.Equal(t, capacity, f.Count(`SELECT count(DISTINCT payload->>'entryId') FROM outbox WHERE topic = 'waitlist.offered'`))
	require.Equal(t, capacity, f.Count(`SELECT count(*) FROM waitlist_entries WHERE product_id = $1 AND state = 'OFFERED'
		AND seq <= (SELECT min(seq) FROM waitlist_entries WHERE product_id = $1) + $2 - 1`, p, capacity),
		"offers in order of joining")
	require.Equal(t, capacity, f.Count(`SELECT offered FROM inventory WHERE product_id = $1`, p))
	f.RequireSound()
	return out
}
