// Package ops gathers what operators watch: queue backlog by backend, the
// age of the oldest work, requests by status, and discarded River jobs.
package ops

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/checkout"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/riverjobs"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/waitingroom"
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
	Health       *Health       `json:"health,omitempty" doc:"Platform only: what the alert rules watch"`
}

// Health are the figures that page someone when they grow (platform-wide).
type Health struct {
	PaymentsUnresolved           int64   `json:"paymentsUnresolved" doc:"payment attempts pending or unknown"`
	PaymentsOldestUnresolvedSecs float64 `json:"paymentsOldestUnresolvedSeconds"`
	ExpiryBacklogSeconds         float64 `json:"expiryBacklogSeconds" doc:"how long the longest-expired ACTIVE hold is past its expiry"`
	OutboxLagSeconds             float64 `json:"outboxLagSeconds" doc:"age of the oldest unpublished outbox event"`
	CheckoutPaused               bool    `json:"checkoutPaused" doc:"new checkouts refused (by an operator, or after too many unknown payment outcomes)"`
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
	if scope.platform() {
		h := &Health{}
		if h.PaymentsUnresolved, h.PaymentsOldestUnresolvedSecs, err = checkout.Unresolved(ctx, r.pool); err != nil {
			return nil, err
		}
		if h.ExpiryBacklogSeconds, err = reservation.ExpiryBacklog(ctx, r.pool); err != nil {
			return nil, err
		}
		if h.OutboxLagSeconds, err = outbox.Lag(ctx, r.pool); err != nil {
			return nil, err
		}
		if h.CheckoutPaused, _, err = checkout.Paused(ctx, r.pool); err != nil {
			return nil, err
		}
		rep.Health = h
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
	// A tenant sees the claim jobs of its own products only.
	var products []uuid.UUID
	if !scope.platform() {
		var err error
		if products, err = product.IDsOf(ctx, r.pool, scope.TenantID); err != nil {
			return nil, err
		}
	}
	counts, err := riverjobs.QueueCounts(ctx, r.pool, reservation.ClaimArgs{}.Kind(), !scope.platform(), products)
	if err != nil {
		return nil, err
	}
	out := make([]RiverQueue, len(counts))
	for i, c := range counts {
		out[i] = RiverQueue(c)
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
	f, err := reservation.ReadFigures(ctx, r.pool, scope.TenantID)
	if err != nil {
		return Requests{}, err
	}
	req := Requests{ByStatus: f.ByStatus, DeadLettered: f.DeadLettered}
	if f.OldestQueued != nil {
		req.OldestQueuedAgeSeconds = time.Since(*f.OldestQueued).Seconds()
	}
	return req, nil
}

func (r *Reporter) rooms(ctx context.Context, scope Scope) ([]WaitingRoom, error) {
	figures, err := waitingroom.ReadFigures(ctx, r.pool, scope.TenantID)
	if err != nil {
		return nil, err
	}
	out := make([]WaitingRoom, len(figures))
	for i, f := range figures {
		out[i] = WaitingRoom(f)
	}
	return out, nil
}
