// Package db opens the PostgreSQL pool, names what a pool and a transaction
// both offer (DBTX, which every table owner's functions take) and translates
// database errors into the few cases the domain cares about.
package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a row the caller asked for does not exist (or
// belongs to another tenant, which the caller must not be able to tell apart).
var ErrNotFound = errors.New("not found")

// PoolOptions tunes Open.
type PoolOptions struct {
	// MaxConns caps the pool. Default: pgxpool's default (max(4, cores)).
	MaxConns int32
	// MinConns are opened in the background at start and kept open.
	MinConns int32
	// Schema, when set, becomes the search_path of every connection, which is
	// how tests isolate themselves in a private schema.
	Schema string
	// Tracer, when set, sees every query (tests count them).
	Tracer pgx.QueryTracer
	// LockTimeout and StatementTimeout set the sessions' lock_timeout and
	// statement_timeout (0: the server's). A lock wait or statement past
	// them fails with an error IsBusy recognises.
	LockTimeout, StatementTimeout time.Duration
	// ConnectionCheck sets client_connection_check_interval: during a long
	// statement the server checks this often that the client is still
	// there, so a killed process's statement ends instead of running on
	// with its locks.
	ConnectionCheck time.Duration
	// IdleInTransaction sets idle_in_transaction_session_timeout: a session
	// left in a transaction this long by its client (a frozen process) is
	// ended by the server, and its locks with it.
	IdleInTransaction time.Duration
	// Fence, when set, refuses connections to a stale writer and every
	// query while two hosts accept writes (see Fence).
	Fence *Fence
}

// ExecEach runs statements in order in tx, each with args: a sequence of
// deletes or updates that belong together.
func ExecEach(ctx context.Context, tx pgx.Tx, statements []string, args ...any) error {
	for _, q := range statements {
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// Open connects to url and checks the connection.
func Open(ctx context.Context, url string, opts PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.MinConns > 0 {
		cfg.MinConns = opts.MinConns
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	for name, d := range map[string]time.Duration{"lock_timeout": opts.LockTimeout,
		"statement_timeout": opts.StatementTimeout, "client_connection_check_interval": opts.ConnectionCheck,
		"idle_in_transaction_session_timeout": opts.IdleInTransaction} {
		if d > 0 {
			cfg.ConnConfig.RuntimeParams[name] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	cfg.ConnConfig.Tracer = opts.Tracer
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerUUID(conn.TypeMap())
		if opts.Fence != nil {
			return opts.Fence.afterConnect(ctx, conn)
		}
		return nil
	}
	if opts.Fence != nil {
		cfg.PrepareConn = opts.Fence.prepareConn
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A process that starts while two hosts accept writes starts paused:
	// it answers (503) and waits for the fence to clear.
	if err := pool.Ping(pingCtx); err != nil && !errors.Is(err, ErrFenced) {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}

// EnsureDatabase creates the database named in url when it does not exist, by
// connecting to the same server's "postgres" database. It lets `make run` and
// `make test` start from a bare server.
func EnsureDatabase(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	name := cfg.Database
	if name == "" || name == "postgres" {
		return nil
	}
	cfg.Database = "postgres"
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	// Another process (a parallel test binary) may create it meanwhile:
	// PostgreSQL then answers duplicate_database, or a unique violation on
	// pg_database's name index when both inserts raced.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == pgerrcode.DuplicateDatabase || pgErr.Code == pgerrcode.UniqueViolation) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// IsUniqueViolation reports whether err is PostgreSQL's unique_violation,
// optionally on the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.UniqueViolation {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// IsForeignKeyViolation reports whether err is PostgreSQL's
// foreign_key_violation: the row referred to does not exist.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.ForeignKeyViolation
}

// IsUndefinedDatabase reports whether err says the database named in the
// URL does not exist.
func IsUndefinedDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InvalidCatalogName
}

// Redact returns url with its password hidden, for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// IsBusy reports whether err says the database was there but the work
// waited too long: a lock wait past lock_timeout, a statement past
// statement_timeout, or the caller's deadline during a query. A
// connection that could not be made is unavailable, not busy.
func IsBusy(err error) bool {
	if err == nil {
		return false
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == pgerrcode.LockNotAvailable || pgErr.Code == pgerrcode.QueryCanceled
	}
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// IsBadText reports whether PostgreSQL refused a string it cannot store: a
// NUL character, or bytes that are not UTF-8. The input that carried it is
// the caller's mistake, not the server's.
func IsBadText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) &&
		(pgErr.Code == pgerrcode.CharacterNotInRepertoire || pgErr.Code == pgerrcode.UntranslatableCharacter ||
			pgErr.Code == pgerrcode.InvalidTextRepresentation && strings.Contains(pgErr.Message, "UTF8"))
}

// IsUnavailable reports whether err says the database could not be reached
// or refused service for now (connection lost, shutting down, starting up,
// out of connections), as opposed to a fault of the request itself.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow,
			pgerrcode.TooManyConnections, pgerrcode.ReadOnlySQLTransaction:
			return true
		}
		return pgerrcode.IsConnectionException(pgErr.Code)
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection that died mid-conversation in words only.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "unexpected EOF")
}

// NotFound turns pgx.ErrNoRows into ErrNotFound and leaves other errors alone.
func NotFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// DBTX is what both a pool and a transaction offer: the functions that own
// a table take one, so a caller can run them alone or inside its own
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}
