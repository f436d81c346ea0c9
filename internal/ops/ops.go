// Package ops gathers what operators watch: queue backlog by backend, the
// age of the oldest work, requests by status, and discarded River jobs.
package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/sqsqueue"
)

// Scope limits a report to one tenant; the zero Scope is the platform.
type Scope struct {
	TenantID uuid.UUID
}

func (s Scope) platform() bool { return s.TenantID == uuid.Nil }

// RiverQueue is one River queue's jobs by state.
type RiverQueue struct {
	Name                      string  `json:"name"`
	Available                 int     `json:"available"`
	Running                   int     `json:"running"`
	Retryable                 int     `json:"retryable"`
	Scheduled                 int     `json:"scheduled"`
	Discarded                 int     `json:"discarded"`
	OldestAvailableAgeSeconds float64 `json:"oldestAvailableAgeSeconds"`
}

// Requests counts reservation requests by status.
type Requests struct {
	ByStatus               map[string]int `json:"byStatus"`
	OldestQueuedAgeSeconds float64        `json:"oldestQueuedAgeSeconds"`
	DeadLettered           int            `json:"deadLettered" doc:"QUEUED requests whose message went to the dead-letter queue"`
}

// SQS is the SQS backend's view (platform only: the queues are shared).
type SQS struct {
	Main sqsqueue.QueueStats `json:"main"`
	DLQ  sqsqueue.QueueStats `json:"dlq"`
}

// WaitingRoom is one room's admission state.
type WaitingRoom struct {
	ProductID       uuid.UUID `json:"productId"`
	RatePerSecond   float64   `json:"ratePerSecond" doc:"current λ after feedback"`
	Reason          string    `json:"reason,omitempty" doc:"why admission is slowed or held"`
	Waiting         int64     `json:"waiting" doc:"placed entrants not yet admitted"`
	AdmittedThrough int64     `json:"admittedThrough" doc:"now serving"`
	SoldOut         bool      `json:"soldOut"`
}

// Report is GET /v1/ops/queues.
type Report struct {
	Backend      string        `json:"backend" enum:"river,sqs"`
	River        []RiverQueue  `json:"river"`
	SQS          *SQS          `json:"sqs,omitempty"`
	Requests     Requests      `json:"requests"`
	WaitingRooms []WaitingRoom `json:"waitingRooms"`
}

// Reporter builds reports.
type Reporter struct {
	pool    *pgxpool.Pool
	backend string
	sqs     *sqsqueue.Ops // nil with the River backend
}

// NewReporter returns a Reporter; sqsOps is nil unless the backend is SQS.
func NewReporter(pool *pgxpool.Pool, backend string, sqsOps *sqsqueue.Ops) *Reporter {
	return &Reporter{pool: pool, backend: backend, sqs: sqsOps}
}

// Backend names the queue backend, river or sqs.
func (r *Reporter) Backend() string { return r.backend }

// Report gathers the figures of a scope. Tenant scopes see only their
// products' claim jobs and their requests.
func (r *Reporter) Report(ctx context.Context, scope Scope) (*Report, error) {
	rep := &Report{Backend: r.backend}
	var err error
	if rep.River, err = r.riverQueues(ctx, scope); err != nil {
		return nil, err
	}
	if rep.Requests, err = r.requests(ctx, scope); err != nil {
		return nil, err
	}
	if rep.WaitingRooms, err = r.rooms(ctx, scope); err != nil {
		return nil, err
	}
	if r.sqs != nil && scope.platform() {
		mainQ, dlq, err := r.sqs.Stats(ctx)
		if err != nil {
			return nil, err
		}
		rep.SQS = &SQS{Main: mainQ, DLQ: dlq}
	}
	return rep, nil
}

func (r *Reporter) riverQueues(ctx context.Context, scope Scope) ([]RiverQueue, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT queue,
		       count(*) FILTER (WHERE state = 'available'),
		       count(*) FILTER (WHERE state = 'running'),
		       count(*) FILTER (WHERE state = 'retryable'),
		       count(*) FILTER (WHERE state = 'scheduled'),
		       count(*) FILTER (WHERE state = 'discarded'),
		       coalesce(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
		FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'discarded')
		  AND ($1::uuid IS NULL OR (kind = 'claim_product' AND (args->>'product_id')::uuid IN (
		       SELECT id FROM products WHERE tenant_id = $1)))
		GROUP BY queue ORDER BY queue`, nullable(scope.TenantID))
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RiverQueue, error) {
		var q RiverQueue
		err := row.Scan(&q.Name, &q.Available, &q.Running, &q.Retryable, &q.Scheduled, &q.Discarded, &q.OldestAvailableAgeSeconds)
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("river queue figures: %w", err)
	}
	// Show the queues BoxOffice runs even when they are empty.
	for _, name := range []string{"claims", "maintenance"} {
		if !slices.ContainsFunc(out, func(q RiverQueue) bool { return q.Name == name }) {
			out = append(out, RiverQueue{Name: name})
		}
	}
	slices.SortFunc(out, func(a, b RiverQueue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (r *Reporter) requests(ctx context.Context, scope Scope) (Requests, error) {
	req := Requests{ByStatus: map[string]int{}}
	rows, err := r.pool.Query(ctx, `
		SELECT status, count(*) FROM reservation_requests
		WHERE $1::uuid IS NULL OR tenant_id = $1 GROUP BY status`, nullable(scope.TenantID))
	if err != nil {
		return req, fmt.Errorf("requests by status: %w", err)
	}
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { req.ByStatus[status] = n; return nil }); err != nil {
		return req, fmt.Errorf("requests by status: %w", err)
	}
	var oldest *time.Time
	err = r.pool.QueryRow(ctx, `
		SELECT min(created_at), count(*) FILTER (WHERE dead_lettered_at IS NOT NULL)
		FROM reservation_requests
		WHERE status = 'QUEUED' AND ($1::uuid IS NULL OR tenant_id = $1)`, nullable(scope.TenantID)).
		Scan(&oldest, &req.DeadLettered)
	if err != nil {
		return req, fmt.Errorf("oldest queued request: %w", err)
	}
	if oldest != nil {
		req.OldestQueuedAgeSeconds = time.Since(*oldest).Seconds()
	}
	return req, nil
}

func nullable(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

func (r *Reporter) rooms(ctx context.Context, scope Scope) ([]WaitingRoom, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT w.product_id, w.rate_per_second, coalesce(w.rate_reason, ''), greatest(w.next_position - w.admitted_through, 0),
		       w.admitted_through, w.sold_out
		FROM waiting_rooms w JOIN products p ON p.id = w.product_id
		WHERE $1::uuid IS NULL OR p.tenant_id = $1 ORDER BY w.product_id`, nullable(scope.TenantID))
	if err != nil {
		return nil, fmt.Errorf("waiting rooms: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WaitingRoom])
	if err != nil {
		return nil, fmt.Errorf("waiting rooms: %w", err)
	}
	if out == nil {
		out = []WaitingRoom{}
	}
	return out, nil
}
