package proctest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/proctest"
)

// A cluster's CPU counts the work of a backend while its connection is open
// and keeps it once the connection closed and the backend was reaped.
func TestClusterCPUCountsItsBackends(t *testing.T) {
	t.Parallel()
	c := proctest.NewCluster(t)
	ctx := context.Background()
	url := c.URL("cpu")
	before := c.CPU()

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT count(*) FROM generate_series(1, 3000000)`)
	require.NoError(t, err)
	open := c.CPU() - before
	require.GreaterOrEqual(t, open, 50*time.Millisecond, "a backend's work while its connection is open")

	require.NoError(t, conn.Close(ctx))
	// The backend exits a moment after its client leaves; its time moves
	// to the postmaster's children's when the postmaster reaps it.
	require.Eventually(t, func() bool {
		var backends int64
		other, err := pgx.Connect(ctx, url)
		if err != nil {
			return false
		}
		defer other.Close(ctx)
		err = other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&backends)
		return err == nil && backends == 0
	}, 10*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, c.CPU()-before, open, "a reaped backend's time still counts")
}
