// Package config reads BoxOffice's configuration from the environment, once,
// in main. Every field is documented with its variable and default; README
// lists them too.
package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config is the whole process configuration.
type Config struct {
	// DatabaseURL is the PostgreSQL URL. DATABASE_URL; default
	// postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable.
	DatabaseURL string
	// Addr is the API listen address. BOXOFFICE_ADDR; default 127.0.0.1:8080.
	Addr string
	// AdminKey is the platform admin bearer key. BOXOFFICE_ADMIN_KEY; no
	// default (`dev` generates and prints one; `serve` refuses to start
	// without one).
	AdminKey string
	// Workers is how many claim jobs (products) are drained at once per
	// process. BOXOFFICE_WORKERS; default 8.
	Workers int
	// ClaimBatchSize is how many requests one claim transaction decides at
	// most. BOXOFFICE_CLAIM_BATCH; default 1000.
	ClaimBatchSize int
	// DBMaxConns caps the database pool. BOXOFFICE_DB_MAX_CONNS; default 20.
	DBMaxConns int
	// SweepInterval is how often expired holds are swept.
	// BOXOFFICE_SWEEP_INTERVAL; default 2s.
	SweepInterval time.Duration
	// AuditInterval is how often the invariant auditor runs.
	// BOXOFFICE_AUDIT_INTERVAL; default 1m.
	AuditInterval time.Duration
	// RequeueAfter is how long a request may stay QUEUED before the repair job
	// enqueues its product's claim job again. BOXOFFICE_REQUEUE_AFTER; default 30s.
	RequeueAfter time.Duration
	// LogLevel is debug, info, warn or error. BOXOFFICE_LOG_LEVEL; default info.
	LogLevel string
}

// DefaultDatabaseURL is used when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable"

// FromEnv reads the configuration from the environment and validates it.
func FromEnv() (*Config, error) {
	c := &Config{
		DatabaseURL: env("DATABASE_URL", DefaultDatabaseURL),
		Addr:        env("BOXOFFICE_ADDR", "127.0.0.1:8080"),
		AdminKey:    os.Getenv("BOXOFFICE_ADMIN_KEY"),
		LogLevel:    env("BOXOFFICE_LOG_LEVEL", "info"),
	}
	var errs []error
	intVar := func(dst *int, name string, def int) {
		*dst = def
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = n
		}
	}
	durVar := func(dst *time.Duration, name string, def time.Duration) {
		*dst = def
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*dst = d
		}
	}
	intVar(&c.Workers, "BOXOFFICE_WORKERS", 8)
	intVar(&c.ClaimBatchSize, "BOXOFFICE_CLAIM_BATCH", 1000)
	intVar(&c.DBMaxConns, "BOXOFFICE_DB_MAX_CONNS", 20)
	durVar(&c.SweepInterval, "BOXOFFICE_SWEEP_INTERVAL", 2*time.Second)
	durVar(&c.AuditInterval, "BOXOFFICE_AUDIT_INTERVAL", time.Minute)
	durVar(&c.RequeueAfter, "BOXOFFICE_REQUEUE_AFTER", 30*time.Second)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// Validate reports configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.Workers < 1 || c.Workers > 1000 {
		errs = append(errs, errors.New("BOXOFFICE_WORKERS must be between 1 and 1000"))
	}
	if c.ClaimBatchSize < 1 || c.ClaimBatchSize > 10000 {
		errs = append(errs, errors.New("BOXOFFICE_CLAIM_BATCH must be between 1 and 10000"))
	}
	if c.DBMaxConns < 4 {
		errs = append(errs, errors.New("BOXOFFICE_DB_MAX_CONNS must be at least 4"))
	}
	if c.SweepInterval < 100*time.Millisecond {
		errs = append(errs, errors.New("BOXOFFICE_SWEEP_INTERVAL must be at least 100ms"))
	}
	if c.AuditInterval < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_AUDIT_INTERVAL must be at least 1s"))
	}
	if c.RequeueAfter < time.Second {
		errs = append(errs, errors.New("BOXOFFICE_REQUEUE_AFTER must be at least 1s"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, errors.New("BOXOFFICE_LOG_LEVEL must be debug, info, warn or error"))
	}
	return errors.Join(errs...)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
