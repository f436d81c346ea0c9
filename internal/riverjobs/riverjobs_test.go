package riverjobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/dbtest"
	"boxoffice/internal/riverjobs"
)

// The queries here read River's tables, which River does not document as
// API: they were written against one schema version. When a River upgrade
// migrates further, this fails until each query is checked against the
// new schema and SchemaVersion moved.
func TestWrittenForRiversSchema(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 4)
	ctx := context.Background()
	var version int
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT max(version) FROM river_migration`).Scan(&version))
	require.Equal(t, riverjobs.SchemaVersion, version, "River's schema moved: check every query in riverjobs.go")

	// Each query runs against it, and reads what it should.
	insert := func(state string, priority int, args string) int64 {
		var id int64
		require.NoError(t, schema.Pool.QueryRow(ctx, `
			INSERT INTO river_job (state, queue, kind, args, priority, max_attempts, scheduled_at)
			VALUES ($1, 'claims', 'claim_product', $2, $3, 25, now() - interval '1 second') RETURNING id`,
			state, args, priority).Scan(&id))
		return id
	}
	mine, other, product := uuid.NewString(), uuid.NewString(), uuid.New()
	insert("running", 1, `{"tenant_id":"`+mine+`","product_id":"`+uuid.NewString()+`"}`)
	insert("running", 1, `{"tenant_id":"`+mine+`","product_id":"`+uuid.NewString()+`"}`)
	waiting := insert("available", 1, `{"tenant_id":"`+other+`","product_id":"`+product.String()+`"}`)

	q := riverjobs.TurnQuery{Queue: "claims", Kind: "claim_product", Tenant: mine, HadTurn: 2, HandOverGrace: 500 * time.Millisecond}
	handOver, pace, err := riverjobs.Turn(ctx, schema.Pool, q)
	require.NoError(t, err)
	require.True(t, handOver, "another tenant, two drains short, waits")
	require.False(t, pace, "no other tenant runs a drain")
	waitingNew, err := riverjobs.NewSaleWaiting(ctx, schema.Pool, q)
	require.NoError(t, err)
	require.True(t, waitingNew)

	counts, err := riverjobs.QueueCounts(ctx, schema.Pool, "claim_product", true, []uuid.UUID{product})
	require.NoError(t, err)
	require.Equal(t, []riverjobs.QueueCount{{Name: "claims", Available: 1}}, zeroAge(counts))

	_, err = schema.Pool.Exec(ctx, `UPDATE river_job SET attempt = 3 WHERE id = $1`, waiting)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, schema.Pool, func(tx pgx.Tx) error {
		return riverjobs.RefundAttempts(ctx, tx, "", []int64{waiting}, 10)
	}))
	var attempt int
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT attempt FROM river_job WHERE id = $1`, waiting).Scan(&attempt))
	require.Equal(t, 2, attempt)
}

func zeroAge(counts []riverjobs.QueueCount) []riverjobs.QueueCount {
	for i := range counts {
		counts[i].OldestAvailableAgeSeconds = 0
	}
	return counts
}
