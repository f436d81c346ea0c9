// Package dbtest gives each test a private, migrated PostgreSQL schema in the
// test database named by TEST_DATABASE_URL (set by `make test`), so tests run
// in parallel against the real database and never touch development data.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/config"
	"boxoffice/internal/db"
	"boxoffice/migrations"
)

// DefaultURL is used when TEST_DATABASE_URL is unset: the machine's local
// server, in a database of its own.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/boxoffice_test?sslmode=disable"

// ensureDatabase creates the test database once per process and remembers
// the outcome, so every test sees the first failure, not only the first test.
var ensureDatabase = sync.OnceValues(func() (string, error) {
	url := config.TestDatabaseURL(DefaultURL)
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
	s, err := Create(context.Background(), URL(t), "t_", maxConns)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Drop(ctx); err != nil {
			t.Logf("drop schema %s: %v", s.Name, err)
		}
	})
	return s
}

// Create makes a schema named prefix + random hex in the database at url,
// migrates it and returns it with a pool whose search_path points at it.
// Tests (NewSchema) and benchmarks share it.
func Create(ctx context.Context, url, prefix string, maxConns int32) (*Schema, error) {
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	name := prefix + hex.EncodeToString(buf)

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to create schema: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+name)
	_ = admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	s := &Schema{Name: name, URL: url}
	s.Pool, err = db.Open(ctx, url, db.PoolOptions{MaxConns: maxConns, Schema: name})
	if err == nil {
		var m *migrations.Migrator
		if m, err = migrations.New(s.Pool, migrations.Options{}); err == nil {
			err = m.Up(ctx)
			_ = m.Close()
		}
	}
	if err != nil {
		_ = s.Drop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("migrate schema %s: %w", name, err)
	}
	return s, nil
}

// Drop closes the schema's pool and drops the schema.
func (s *Schema) Drop(ctx context.Context) error {
	if s.Pool != nil {
		s.Pool.Close()
	}
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA "+s.Name+" CASCADE")
	return err
}

// QueryCounter is a pgx tracer that counts the queries of a pool (set it
// as db.PoolOptions.Tracer): tests that promise "no query per poll" check it.
type QueryCounter struct{ n atomic.Int64 }

// Count is how many queries have started.
func (c *QueryCounter) Count() int64 { return c.n.Load() }

func (c *QueryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *QueryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
