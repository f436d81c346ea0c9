package workers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/metrics"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/workers"
)

func TestMain(m *testing.M) { testfix.VerifyNoLeaks(m) }

// Workers are shared between tenants first, then between a tenant's
// products: a drain owes its worker at once to a tenant running two drains
// fewer, after its slice to one running one fewer and to its own tenant's
// other products, and a tenant handing over between its products still
// counts that drain. A tenant running more drains than any other paces them.
func TestTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testfix.New(t, testfix.Options{}) // River not started: the test sets the jobs' states
	big, small := env.Tenant.ID, env.NewTenant(t).ID
	product := func(tenant uuid.UUID) reservation.ClaimArgs {
		return reservation.ClaimArgs{ProductID: env.Product(t, testfix.ProductOpts{Tenant: tenant}).ID, TenantID: tenant}
	}
	b1, b2, b3, s1 := product(big), product(big), product(big), product(small)
	w := &workers.ClaimWorker{Pool: env.Schema.Pool}
	job := func(args reservation.ClaimArgs, state string, priority int, age time.Duration) {
		t.Helper()
		res, err := env.River.Insert(ctx, args, &river.InsertOpts{Priority: priority})
		require.NoError(t, err)
		env.Exec(t, `UPDATE river_job SET state = $2, created_at = now() - make_interval(secs => $3) WHERE id = $1`,
			res.Job.ID, state, age.Seconds())
	}
	reset := func() { env.Exec(t, `DELETE FROM river_job`) }
	const fresh, slice = 0, time.Minute

	// The big tenant holds both workers; the small sale's job waits.
	job(b1, "running", 1, time.Minute)
	job(b2, "running", 1, time.Minute)
	job(s1, "available", 1, 0)
	require.True(t, w.Turn(ctx, b1, fresh).HandOver, "a tenant with no drain gets a worker at once")
	require.True(t, w.NewSaleWaiting(ctx, b1, fresh), "so the drain asks at once")
	require.False(t, w.NewSaleWaiting(ctx, s1, fresh), "not for its own tenant's products before its slice")
	require.True(t, w.NewSaleWaiting(ctx, s1, slice), "after it, for them too")
	reset()

	// One drain each; the big tenant's other products wait their turn.
	job(b1, "running", 1, time.Minute)
	job(s1, "running", 1, time.Minute)
	job(b2, "available", 2, time.Minute)
	require.False(t, w.Turn(ctx, s1, slice).HandOver, "the small sale keeps its worker: the big tenant has as many")
	require.False(t, w.Turn(ctx, b1, fresh).HandOver, "the big tenant's products take turns after a slice")
	require.True(t, w.Turn(ctx, b1, slice).HandOver)
	require.False(t, w.NewSaleWaiting(ctx, s1, slice), "a product that had its turn is no new sale")
	reset()

	// The big tenant's drain has just handed over to its next product.
	job(s1, "running", 1, time.Minute)
	job(b1, "available", 2, 0)
	job(b3, "available", 1, time.Minute)
	require.False(t, w.Turn(ctx, s1, slice).HandOver, "a hand-over in progress still counts as the big tenant's drain")
	env.Exec(t, `UPDATE river_job SET created_at = now() - interval '1 minute' WHERE args->>'product_id' = $1`, b1.ProductID.String())
	require.False(t, w.Turn(ctx, s1, fresh).HandOver, "one drain fewer: tenants take turns, each after its slice")
	require.True(t, w.Turn(ctx, s1, slice).HandOver)
	reset()

	// Nobody waits.
	job(b1, "running", 1, time.Minute)
	require.False(t, w.Turn(ctx, b1, slice).HandOver)

	// Workers to spare: the big tenant runs more drains than the small one,
	// and paces them; alone, or with as many as another, a tenant does not.
	job(b2, "running", 1, time.Minute)
	require.False(t, w.Turn(ctx, b1, slice).Pace, "no other tenant runs a drain")
	job(s1, "running", 1, time.Minute)
	require.True(t, w.Turn(ctx, b1, fresh).Pace)
	require.True(t, w.Turn(ctx, b2, fresh).Pace)
	require.False(t, w.Turn(ctx, s1, fresh).Pace)
	require.False(t, w.Turn(ctx, s1, fresh).HandOver)
	reset()
	job(b1, "running", 1, time.Minute)
	job(s1, "running", 1, time.Minute)
	require.False(t, w.Turn(ctx, b1, fresh).Pace, "one drain each")
}

// TestRescueKeepsAttempts: a job whose worker process died is given back
// without the attempt the dead worker used — killed ten times, it is as
// far from discarding as before — and a job that killed more workers than
// that counts its attempts again.
func TestRescueKeepsAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testfix.New(t, testfix.Options{}) // River not started: the test plays the dead workers
	live := workers.NewLiveness(env.Schema.Pool, env.River, metrics.New(), env.Logger)
	args := reservation.ClaimArgs{ProductID: env.Product(t, testfix.ProductOpts{}).ID, TenantID: env.Tenant.ID}
	res, err := env.River.Insert(ctx, args, nil)
	require.NoError(t, err)
	id := res.Job.ID
	attempt := func() (attempt, maxAttempts int, state string) {
		require.NoError(t, env.Schema.Pool.QueryRow(ctx, `SELECT attempt, max_attempts, state FROM river_job WHERE id = $1`, id).
			Scan(&attempt, &maxAttempts, &state))
		return attempt, maxAttempts, state
	}
	// As a fetch does: one attempt more, running on a process that then dies
	// (its liveness lock is free: no one holds it).
	die := func(i int) {
		env.Exec(t, `UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now(),
			attempted_by = array_append(attempted_by, $2) WHERE id = $1`, id, fmt.Sprintf("dead-worker-%d", i))
		n, err := live.RescueDead(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	for i := range 10 {
		die(i)
		a, _, state := attempt()
		require.Equal(t, "available", state)
		require.Zero(t, a, "after %d deaths", i+1)
	}
	die(10)
	a, maxAttempts, _ := attempt()
	require.Equal(t, 1, a, "the eleventh death counts")
	require.Equal(t, 25, maxAttempts)
}
