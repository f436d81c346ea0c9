package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/dbtest"
	"boxoffice/migrations"
)

func TestUpIsIdempotentAndCurrent(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t, 4) // migrated once already
	ctx := context.Background()
	m, err := migrations.New(schema.Pool, migrations.Options{Lock: true})
	require.NoError(t, err)
	defer m.Close()
	require.NoError(t, m.Up(ctx))
	current, err := m.Current(ctx)
	require.NoError(t, err)
	require.True(t, current)

	var riverVersion int
	require.NoError(t, schema.Pool.QueryRow(ctx, `SELECT max(version) FROM river_migration`).Scan(&riverVersion))
	require.Equal(t, 8, riverVersion, "River's migrator recorded its versions")
}
