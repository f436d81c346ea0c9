// Package dbtest gives each test a private, migrated PostgreSQL schema in the
// test database named by TEST_DATABASE_URL (set by `make test`), so tests run
// in parallel against the real database and never touch development data.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/db"
	"boxoffice/migrations"
)

// DefaultURL is used when TEST_DATABASE_URL is unset: the machine's local
// server, in a database of its own.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/boxoffice_test?sslmode=disable"

// ensureDatabase creates the test database once per process and remembers
// the outcome, so every test sees the first failure, not only the first test.
var ensureDatabase = sync.OnceValues(func() (string, error) {
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		url = DefaultURL
	}
	return url, db.EnsureDatabase(context.Background(), url)
})

// URL returns the test database URL, creating the database once per process.
func URL(t testing.TB) string {
	t.Helper()
	url, err := ensureDatabase()
	require.NoError(t, err, "test database (set TEST_DATABASE_URL or run `make test`)")
	return url
}

// Schema is one test's private schema.
type Schema struct {
	Name string
	Pool *pgxpool.Pool
	URL  string
}

// NewSchema creates a fresh schema, migrates it and returns a pool whose
// search_path points at it. The schema is dropped when the test ends.
func NewSchema(t testing.TB, maxConns int32) *Schema {
	t.Helper()
	ctx := context.Background()
	url := URL(t)

	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	name := "t_" + hex.EncodeToString(buf)

	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+name)
	require.NoError(t, err)
	require.NoError(t, admin.Close(ctx))

	pool, err := db.Open(ctx, url, db.PoolOptions{MaxConns: maxConns, Schema: name})
	require.NoError(t, err)

	m, err := migrations.New(pool, migrations.Options{})
	require.NoError(t, err)
	require.NoError(t, m.Up(ctx))
	require.NoError(t, m.Close())

	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Logf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return &Schema{Name: name, Pool: pool, URL: url}
}
