package db_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
)

// A pool with MinConns has its sessions open on the server before anyone
// asks for one: an opening's first requests must not wait for new sessions.
func TestMinConnsOpenedAtStart(t *testing.T) {
	t.Parallel()
	name := "min-conns-" + uuid.NewString()[:8]
	u, err := url.Parse(dbtest.URL(t))
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	pool, err := db.Open(context.Background(), u.String(), db.PoolOptions{MaxConns: 6, MinConns: 4})
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	sessions := func() int {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n))
		return n
	}
	// At least four: Open's own check may have opened one more meanwhile.
	require.Eventually(t, func() bool { return sessions() >= 4 }, 10*time.Second, 20*time.Millisecond,
		"the server sees the pool's sessions")
	// Kept open while idle.
	time.Sleep(200 * time.Millisecond)
	require.GreaterOrEqual(t, sessions(), 4)
}

// Slices of ids go to the server as uuid arrays, in order, a nil slice as
// NULL and an empty one as an empty array.
func TestUUIDSlicesAsArrays(t *testing.T) {
	t.Parallel()
	pool, err := db.Open(context.Background(), dbtest.URL(t), db.PoolOptions{MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ctx := context.Background()

	ids := []uuid.UUID{db.NewID(), uuid.Nil, db.NewID()}
	var text string
	var back []uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid[]::text, $1::uuid[]`, ids).Scan(&text, &back))
	require.Equal(t, "{"+ids[0].String()+","+ids[1].String()+","+ids[2].String()+"}", text)
	require.Equal(t, ids, back)

	var isNull bool
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT $1::uuid[] IS NULL, cardinality($2::uuid[])`,
		[]uuid.UUID(nil), []uuid.UUID{}).Scan(&isNull, &n))
	require.True(t, isNull)
	require.Zero(t, n)
}
