// Package riverjobs holds every query BoxOffice makes of River's own tables
// (river_job) outside River's client: the claim scheduler's reads of who is
// draining and who waits, the queue figures operators see, and the one
// write, giving rescued jobs back their attempt. River documents none of
// this as API, so it is all here, in one file, and its test pins the River
// schema version the queries were written against (migrations applies
// version 8); a River upgrade that moves the schema fails that test first.
package riverjobs

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// SchemaVersion is the River schema version these queries read.
const SchemaVersion = 8

// JobTenant is, in SQL, the tenant a claim job's args name (a job inserted
// before jobs named their tenant counts as a tenant of its own: its
// product).
const JobTenant = `coalesce(args->>'tenant_id', args->>'product_id')`

// TurnQuery is what the claim scheduler asks of the queue for one drain.
type TurnQuery struct {
	Queue, Kind string
	// Tenant is the drain's tenant, as JobTenant spells it.
	Tenant string
	// PastSlice: the drain has run its slice, so its own tenant's other
	// products and tenants one drain short may have its worker too.
	PastSlice bool
	// HadTurn is the River priority of follow-up jobs; HandOverGrace how
	// long a tenant still counts a drain that handed over.
	HadTurn       int
	HandOverGrace time.Duration
}

// Turn reads whether another claim job waits that the drain owes its worker
// (handOver), and whether the drain's tenant runs more drains than any other
// tenant running one (pace). See schedule.Scheduler.Turn for the rules.
func Turn(ctx context.Context, q db.DBTX, t TurnQuery) (handOver, pace bool, err error) {
	err = q.QueryRow(ctx, `
		WITH jobs AS (
			SELECT state, priority, created_at, `+JobTenant+` AS tenant
			FROM river_job
			WHERE queue = $1 AND kind = $2
			  AND (state = 'running' OR (state = 'available' AND scheduled_at <= now()))),
		drains AS (
			SELECT tenant, count(*) AS n FROM jobs
			WHERE state = 'running'
			   OR (priority = $5 AND created_at > now() - make_interval(secs => $6))
			GROUP BY tenant),
		mine AS (SELECT coalesce((SELECT n FROM drains WHERE tenant = $3), 0) AS n)
		-- Most of the time nothing waits: say so from River's fetch index
		-- alone (AND evaluates the second only when the first holds).
		SELECT EXISTS (
			SELECT 1 FROM river_job
			WHERE state = 'available' AND queue = $1 AND scheduled_at <= now())
		   AND EXISTS (
			SELECT 1 FROM jobs j CROSS JOIN mine
			LEFT JOIN drains d ON d.tenant = j.tenant
			WHERE j.state = 'available'
			  AND CASE WHEN j.tenant = $3 THEN $4
			           ELSE coalesce(d.n, 0) < mine.n - 1 OR ($4 AND coalesce(d.n, 0) < mine.n) END),
		       -- Pace: more drains than any other tenant running one.
		       coalesce((SELECT m.n > max(d.n) FROM drains d, mine m WHERE d.tenant <> $3 GROUP BY m.n), false)`,
		t.Queue, t.Kind, t.Tenant, t.PastSlice, t.HadTurn, t.HandOverGrace.Seconds()).Scan(&handOver, &pace)
	if err != nil {
		return false, false, fmt.Errorf("claim turn: %w", err)
	}
	return handOver, pace, nil
}

// NewSaleWaiting reads whether a claim job that has not had a turn yet
// waits for a worker: of another tenant, or, past the slice, any (one read
// of River's fetch index).
func NewSaleWaiting(ctx context.Context, q db.DBTX, t TurnQuery) (bool, error) {
	var waiting bool
	err := q.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM river_job
			WHERE state = 'available' AND queue = $1 AND priority < $2 AND scheduled_at <= now()
			  AND kind = $3 AND ($5 OR `+JobTenant+` <> $4))`,
		t.Queue, t.HadTurn, t.Kind, t.Tenant, t.PastSlice).Scan(&waiting)
	if err != nil {
		return false, fmt.Errorf("new sale waiting: %w", err)
	}
	return waiting, nil
}

// QueueCount is one River queue's jobs by state.
type QueueCount struct {
	Name                      string
	Available                 int
	Running                   int
	Retryable                 int
	Scheduled                 int
	Discarded                 int
	OldestAvailableAgeSeconds float64
}

// QueueCounts counts River's jobs by queue and state (River's client lists
// jobs but does not count them). With onlyClaims it counts only the claim
// jobs (kind claimKind) of the given products: what a tenant may see.
func QueueCounts(ctx context.Context, q db.DBTX, claimKind string, onlyClaims bool, products []uuid.UUID) ([]QueueCount, error) {
	rows, err := q.Query(ctx, `
		SELECT queue,
		       count(*) FILTER (WHERE state = 'available'),
		       count(*) FILTER (WHERE state = 'running'),
		       count(*) FILTER (WHERE state = 'retryable'),
		       count(*) FILTER (WHERE state = 'scheduled'),
		       count(*) FILTER (WHERE state = 'discarded'),
		       coalesce(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
		FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'discarded')
		  AND (NOT $1 OR (kind = $3 AND (args->>'product_id')::uuid = ANY($2)))
		GROUP BY queue ORDER BY queue`, onlyClaims, products, claimKind)
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueueCount])
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	return out, nil
}

// RefundAttempts gives the rescued jobs ids back one attempt, unless River
// has rescued them more than forgiven times (river:rescue_count in their
// metadata, raised by River's JobRescueMany just before). schema is the
// River client's ("" for the search path).
func RefundAttempts(ctx context.Context, tx pgx.Tx, schema string, ids []int64, forgiven int) error {
	table := "river_job"
	if schema != "" {
		table = pgx.Identifier{schema, "river_job"}.Sanitize()
	}
	_, err := tx.Exec(ctx, `
		UPDATE `+table+` SET attempt = greatest(attempt - 1, 0)
		WHERE id = ANY($1) AND state = 'available'
		  AND coalesce((metadata->>'river:rescue_count')::int, 0) <= $2`, ids, forgiven)
	if err != nil {
		return fmt.Errorf("refund the attempts of rescued jobs: %w", err)
	}
	return nil
}
