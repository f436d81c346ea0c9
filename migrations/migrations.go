// Package migrations owns the database schema: BoxOffice's own tables as
// numbered SQL files and River's tables through River's migrator, all applied
// in order by goose so that one tool decides what is current.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var sqlFiles embed.FS

// riverVersion is the River schema version migration 1 brings the database to.
// Pinned so that upgrading the River module never changes an applied
// migration: a newer River schema arrives as a new numbered migration.
const riverVersion = 8

// Options tunes a Migrator.
type Options struct {
	// Lock takes a PostgreSQL advisory lock while migrating so that several
	// processes starting at once apply each migration once. Tests, which
	// migrate private schemas in parallel, turn it off. Default false.
	Lock bool
	// Logger receives progress. Default: discard.
	Logger *slog.Logger
}

// Migrator applies and inspects migrations on one pool.
type Migrator struct {
	provider *goose.Provider
	db       *sql.DB
}

// New returns a Migrator over pool. The pool's search_path decides the schema.
func New(pool *pgxpool.Pool, opts Options) (*Migrator, error) {
	db := stdlib.OpenDBFromPool(pool)
	providerOpts := []goose.ProviderOption{
		goose.WithGoMigrations(riverMigration()),
		goose.WithDisableGlobalRegistry(true),
	}
	if opts.Logger != nil {
		providerOpts = append(providerOpts, goose.WithSlog(opts.Logger))
	}
	if opts.Lock {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		providerOpts = append(providerOpts, goose.WithSessionLocker(locker))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles, providerOpts...)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("migration provider: %w", err)
	}
	return &Migrator{provider: provider, db: db}, nil
}

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context) error {
	if _, err := m.provider.Up(ctx); err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// DownTo rolls migrations back until version is the last applied: tests of
// a migration move an existing database back before it and up again.
func (m *Migrator) DownTo(ctx context.Context, version int64) error {
	if _, err := m.provider.DownTo(ctx, version); err != nil {
		return fmt.Errorf("migrate down to %d: %w", version, err)
	}
	return nil
}

// Current reports whether the database has every migration this binary knows.
func (m *Migrator) Current(ctx context.Context) (bool, error) {
	pending, err := m.provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("migration status: %w", err)
	}
	return !pending, nil
}

// Close releases the database handle (not the pool).
func (m *Migrator) Close() error { return m.db.Close() }

// riverMigration is migration 1: River's own tables, applied by River's
// migrator so River records its versions as usual. It runs outside goose's
// transaction because River's versions must each commit before the next
// (version 6 uses an enum value version 4 adds), and River wraps each version
// in a transaction of its own.
func riverMigration() *goose.Migration {
	run := func(direction rivermigrate.Direction, target int) func(context.Context, *sql.DB) error {
		return func(ctx context.Context, db *sql.DB) error {
			migrator, err := rivermigrate.New(riverdatabasesql.New(db), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return fmt.Errorf("river migrator: %w", err)
			}
			_, err = migrator.Migrate(ctx, direction, &rivermigrate.MigrateOpts{TargetVersion: target})
			if err != nil {
				return fmt.Errorf("river migrate %s to %d: %w", direction, target, err)
			}
			return nil
		}
	}
	return goose.NewGoMigration(1,
		&goose.GoFunc{RunDB: run(rivermigrate.DirectionUp, riverVersion)},
		&goose.GoFunc{RunDB: run(rivermigrate.DirectionDown, -1)},
	)
}
