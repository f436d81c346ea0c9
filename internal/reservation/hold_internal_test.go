package reservation

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/dbtest"
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
		return err
	})
	require.NoError(t, err)
	require.NotContains(t, plans, "Seq Scan", plans)
	require.Contains(t, plans, "holds_pkey", plans)
	require.Contains(t, plans, "claims_pkey", plans)
}
