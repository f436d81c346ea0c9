package reservation

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/inventory"
	"boxoffice/internal/metrics"
)

// TestFreeClaimsIgnoresStaleStatistics: the statements that free claims
// (the sweeper's and a release's) look up holds and claims by key even
// when the planner believes the tables empty — statistics taken before a
// sale filled them. Before, such a plan scanned holds once per claims row
// and held a product's claims for minutes.
func TestFreeClaimsIgnoresStaleStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dbtest.NewSchema(t, 4)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	// Statistics of the empty tables, kept while they fill.
	for _, table := range []string{"holds", "claims"} {
		exec(`ALTER TABLE ` + table + ` SET (autovacuum_enabled = false)`)
		exec(`ANALYZE ` + table)
	}
	product := uuid.New()
	holdIDs := make([]uuid.UUID, 2500)
	for i := range holdIDs {
		holdIDs[i] = uuid.New()
	}
	exec(`
		INSERT INTO holds (id, tenant_id, product_id, buyer_id, request_id, numbers, expires_at)
		SELECT h, $2, $2, 'b' || i, gen_random_uuid(), ARRAY[2*i, 2*i + 1], now() - interval '1 minute'
		FROM unnest($1::uuid[]) WITH ORDINALITY AS x(h, i)`, holdIDs, product)
	exec(`
		INSERT INTO claims (product_id, number, hold_id, state)
		SELECT $1, n, h.id, 'HELD' FROM holds h, unnest(h.numbers) n WHERE h.product_id = $1`, product)

	plans := ""
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := boundFree(ctx, tx); err != nil {
			return err
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{freeHoldNumbersSQL, []any{holdIDs, product}},
			{freeClaimsSQL, []any{product, []int32{0, 1, 2, 3}, []uuid.UUID{holdIDs[0], holdIDs[0], holdIDs[1], holdIDs[1]}}},
			{freeUnlockedClaimsSQL, []any{product, []int32{0, 1, 2, 3}, []uuid.UUID{holdIDs[0], holdIDs[0], holdIDs[1], holdIDs[1]}}},
		} {
			rows, err := tx.Query(ctx, "EXPLAIN "+q.sql, q.args...)
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plans += strings.Join(lines, "\n") + "\n"
		}
		freed, err := freeClaims(ctx, tx, product, holdIDs[:600])
		require.Len(t, freed, 1200, "every claim of the holds freed")
		if err != nil {
			return err
		}
		freed, err = freeExpiredClaims(ctx, tx, product, holdIDs[600:1000])
		require.Len(t, freed, 800, "every claim of the holds freed")
		return err
	})
	require.NoError(t, err)
	require.NotContains(t, plans, "Seq Scan", plans)
	require.Contains(t, plans, "holds_pkey", plans)
	require.Contains(t, plans, "claims_pkey", plans)
}

// TestSweepBesideTakeover: the sweeper and a claim that locks the product's
// inventory row first (the SQS consumer's) and then takes an expired
// hold's claim over cannot deadlock: the sweeper takes the inventory row
// before any claims row. (Taking claims rows first, it deadlocked with such
// claims once a sale's holds began to expire: a second lost to PostgreSQL's
// deadlock detection each time, and SQS decisions fell 12 s behind.) A
// claim taken over meanwhile stays with its new hold.
func TestSweepBesideTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dbtest.NewSchema(t, 6)
	c := NewClaimer(s.Pool, slog.New(slog.DiscardHandler), metrics.New(), ClaimerOptions{})
	product, old, taker := uuid.New(), uuid.New(), uuid.New()
	exec := func(q db.DBTX, sql string, args ...any) {
		t.Helper()
		_, err := q.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(s.Pool, `INSERT INTO tenants (id, slug, name, buyer_token_secret) VALUES ($1, 'sweep', 'Sweep', 'x')`, product)
	exec(s.Pool, `INSERT INTO events (id, tenant_id, slug, name) VALUES ($1, $1, 'sweep', 'Sweep')`, product)
	exec(s.Pool, `INSERT INTO products (id, tenant_id, slug, name, kind, capacity, price_cents, currency, per_buyer_limit,
		hold_seconds, on_sale_at, event_id) VALUES ($1, $1, 'sweep', 'Sweep', 'numbered', 10, 100, 'EUR', 6, 30, now(), $1)`, product)
	require.NoError(t, pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := inventory.Create(ctx, tx, product, 10); err != nil {
			return err
		}
		return inventory.Apply(ctx, tx, product, inventory.Change{Set: []int32{1, 2}, HeldDelta: 2})
	}))
	exec(s.Pool, `INSERT INTO holds (id, tenant_id, product_id, buyer_id, request_id, numbers, expires_at)
		VALUES ($1, $2, $2, 'old', gen_random_uuid(), '{1,2}', now() - interval '1 minute')`, old, product)
	exec(s.Pool, `INSERT INTO claims (product_id, number, hold_id, state, expires_at)
		VALUES ($1, 1, $2, 'HELD', now() - interval '1 minute'), ($1, 2, $2, 'HELD', now() - interval '1 minute')`, product, old)

	// The claim: the inventory row first.
	claim, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = claim.Rollback(ctx) }()
	require.NoError(t, inventory.Lock(ctx, claim, product))

	swept := make(chan error, 1)
	go func() {
		_, err := c.ExpireHolds(ctx, 100)
		swept <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		_ = s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%FROM inventory%')`).Scan(&waiting)
		return waiting
	}, 10*time.Second, 10*time.Millisecond, "the sweeper waits for the inventory row")
	// Then it takes number 1 over, as a claim of an expired hold does.
	exec(claim, `UPDATE claims SET hold_id = $2, expires_at = now() + interval '8 minutes'
		WHERE product_id = $1 AND number = 1`, product, taker)
	exec(claim, `INSERT INTO holds (id, tenant_id, product_id, buyer_id, request_id, numbers, expires_at)
		VALUES ($1, $2, $2, 'new', gen_random_uuid(), '{1}', now() + interval '8 minutes')`, taker, product)
	require.NoError(t, claim.Commit(ctx))
	require.NoError(t, <-swept, "no deadlock")

	var owner uuid.UUID
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT hold_id FROM claims WHERE product_id = $1 AND number = 1`, product).Scan(&owner))
	require.Equal(t, taker, owner, "the number taken over stays with its new hold")
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM claims WHERE product_id = $1 AND number = 2`, product).Scan(&left))
	require.Zero(t, left, "the expired hold's other claim is freed")
	var state string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT state FROM holds WHERE id = $1`, old).Scan(&state))
	require.Equal(t, HoldExpired, state)
}

// A claim transaction reads by key whatever the statistics said when its
// statements were first planned, and one that meets expired holds plans its
// statements for their parameters (a cached generic plan, made before
// anything expired, took seconds once thousands had); one that meets none
// keeps the cheap cached plans.
func TestClaimPlansForExpiredHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dbtest.NewSchema(t, 2)
	fresh, stale := uuid.New(), uuid.New()
	for product, expires := range map[uuid.UUID]string{fresh: "now() + interval '1 minute'", stale: "now() - interval '1 minute'"} {
		_, err := s.Pool.Exec(ctx, `INSERT INTO holds (id, tenant_id, product_id, buyer_id, request_id, numbers, expires_at)
			VALUES (gen_random_uuid(), $1, $1, 'b', gen_random_uuid(), '{1}', `+expires+`)`, product)
		require.NoError(t, err)
	}
	mode := func(product uuid.UUID) string {
		var m, seqscan, hashjoin string
		require.NoError(t, pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			if err := planClaim(ctx, tx, product); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan'),
				current_setting('enable_hashjoin')`).Scan(&m, &seqscan, &hashjoin)
		}))
		require.Equal(t, []string{"off", "off"}, []string{seqscan, hashjoin}, "a claim reads by key whatever the statistics")
		return m
	}
	require.Equal(t, "force_custom_plan", mode(stale))
	require.Equal(t, "auto", mode(fresh))
	var after string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&after))
	require.Equal(t, "auto", after, "the setting ends with its transaction")
}
