package config_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/atrest"
	"boxoffice/internal/config"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the declarations")

// docs/configuration.md is what the declarations say; `make docs` rewrites it.
func TestConfigurationDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	want := config.Markdown()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "docs/configuration.md is stale: run make docs")
}

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
	require.Equal(t, 128<<20, c.AvailabilityCacheBytes)
	require.Equal(t, "river", c.QueueBackend)
	require.Nil(t, c.SecretsKey)
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

// Booleans read as Go reads them: "true" is on (it silently meant off once),
// and a word that is neither is an error, not off.
func TestBooleans(t *testing.T) {
	for raw, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "false": false, "0": false} {
		t.Setenv("BOXOFFICE_STORE_AUTO_PUBLISH", raw)
		c, err := config.FromEnv()
		require.NoError(t, err, raw)
		require.Equal(t, want, c.StoreAutoPublish, raw)
	}
	t.Setenv("BOXOFFICE_STORE_AUTO_PUBLISH", "yes please")
	_, err := config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_STORE_AUTO_PUBLISH: want true or false")
}

// The names before the BOXOFFICE_ prefix still work, with a warning; the
// new name wins when both are set.
func TestOldNamesAreReadWithAWarning(t *testing.T) {
	t.Setenv("QUEUE_BACKEND", "sqs")
	t.Setenv("STORE_AUTO_PUBLISH", "1")
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "sqs", c.QueueBackend)
	require.True(t, c.StoreAutoPublish)
	require.Contains(t, c.Warnings, "QUEUE_BACKEND is the old name of BOXOFFICE_QUEUE_BACKEND, read for now: rename it")
	require.Len(t, c.Warnings, 2)

	t.Setenv("BOXOFFICE_QUEUE_BACKEND", "river")
	t.Setenv("QUEUE_BACKEND", "nonsense")
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "river", c.QueueBackend)

	t.Setenv("BOXOFFICE_QUEUE_BACKEND", "")
	_, err = config.FromEnv()
	require.ErrorContains(t, err, `QUEUE_BACKEND: "nonsense": want river, sqs`, "an error names the variable that was set")
}

// A secret may come from a file (Docker and Kubernetes secrets).
func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	key := atrest.Generate("k1")
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}
	t.Setenv("BOXOFFICE_ADMIN_KEY_FILE", write("admin", "admin-from-file\n"))
	t.Setenv("BOXOFFICE_SECRETS_KEY_FILE", write("secrets", key+"\n"))
	t.Setenv("BOXOFFICE_WEBHOOK_SECRETS_FILE", write("webhooks", "whsec_a,whsec_b"))
	c, err := config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "admin-from-file", c.AdminKey)
	require.Equal(t, []string{"whsec_a", "whsec_b"}, c.WebhookSecrets)
	require.NotNil(t, c.SecretsKey)
	require.Equal(t, "sealed:k1:", c.SecretsKey.CurrentPrefix())

	t.Setenv("BOXOFFICE_ADMIN_KEY", "from-the-variable")
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "from-the-variable", c.AdminKey, "the variable wins over its file")

	t.Setenv("BOXOFFICE_TICKET_SECRET_FILE", filepath.Join(dir, "missing"))
	_, err = config.FromEnv()
	require.ErrorContains(t, err, "BOXOFFICE_TICKET_SECRET_FILE")
	t.Setenv("BOXOFFICE_TICKET_SECRET_FILE", "")

	t.Setenv("BOXOFFICE_ADDR_FILE", write("addr", "0.0.0.0:1"))
	c, err = config.FromEnv()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Addr, "only secrets are read from files")
}
