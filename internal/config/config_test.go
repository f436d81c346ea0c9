package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/config"
)

func TestDefaults(t *testing.T) {
	for _, v := range []string{"DATABASE_URL", "BOXOFFICE_ADDR", "BOXOFFICE_WORKERS", "BOXOFFICE_CLAIM_BATCH"} {
		t.Setenv(v, "")
	}
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Addr)
	require.Equal(t, config.DefaultDatabaseURL, c.DatabaseURL)
	require.Equal(t, 8, c.Workers)
	require.Equal(t, 1000, c.ClaimBatchSize)
	require.Equal(t, 2*time.Second, c.SweepInterval)
}

func TestDefaultIgnoresEnvironment(t *testing.T) {
	t.Setenv("BOXOFFICE_WORKERS", "3")
	c := config.Default()
	require.Equal(t, 8, c.Workers, "Default is the empty environment's configuration")
	require.NoError(t, c.Validate())
}

func TestInvalid(t *testing.T) {
	t.Setenv("BOXOFFICE_WORKERS", "many")
	_, err := config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_WORKERS")

	t.Setenv("BOXOFFICE_WORKERS", "4")
	t.Setenv("BOXOFFICE_CLAIM_BATCH", "0")
	t.Setenv("BOXOFFICE_LOG_LEVEL", "loud")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_CLAIM_BATCH")
	require.ErrorContains(t, err, "BOXOFFICE_LOG_LEVEL")

	t.Setenv("BOXOFFICE_CLAIM_BATCH", "100")
	t.Setenv("BOXOFFICE_LOG_LEVEL", "info")
	t.Setenv("BOXOFFICE_DB_MAX_CONNS", "10")
	t.Setenv("BOXOFFICE_DB_MIN_CONNS", "11")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_DB_MIN_CONNS")
	t.Setenv("BOXOFFICE_DB_MIN_CONNS", "10")
	t.Setenv("BOXOFFICE_ACCEPT_TRANSACTIONS", "-1")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_ACCEPT_TRANSACTIONS")
	t.Setenv("BOXOFFICE_ACCEPT_TRANSACTIONS", "0")
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, 10, c.DBMinConns)
	require.Zero(t, c.AcceptTransactions)
}
