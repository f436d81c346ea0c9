package reservation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/db"
	"boxoffice/internal/metrics"
	"boxoffice/internal/product"
)

// ErrIdempotencyConflict is returned when an idempotency key is reused with a
// different request.
var ErrIdempotencyConflict = errors.New("idempotency key already used for a different request")

// Service records requests and answers status queries.
type Service struct {
	pool     *pgxpool.Pool
	enqueuer Enqueuer
	metrics  *metrics.Metrics
	logger   *slog.Logger
}

// NewService returns a Service that hands requests to enqueuer.
func NewService(pool *pgxpool.Pool, enqueuer Enqueuer, m *metrics.Metrics, logger *slog.Logger) *Service {
	return &Service{pool: pool, enqueuer: enqueuer, metrics: m, logger: logger}
}

// publishTimeout bounds how long an accept waits for a post-commit publish.
// The request is already safe in the database; a slow queue only delays it.
const publishTimeout = 3 * time.Second

// AcceptParams identifies who asks for what.
type AcceptParams struct {
	Product        *product.Product
	BuyerID        string
	IdempotencyKey string
	Params
}

// Accepted is the outcome of Accept.
type Accepted struct {
	Request *Request
	// Replayed is true when the key had been used for this same request.
	Replayed bool
}

// Accept validates and records a reservation request and enqueues its claim
// job in one transaction. A replay of the same key and body returns the
// request already recorded.
func (s *Service) Accept(ctx context.Context, p AcceptParams) (*Accepted, error) {
	if err := p.Validate(p.Product); err != nil {
		return nil, err
	}
	hash := p.hash(p.Product.ID)
	id := db.NewID()
	var numbers []int32
	var quantity, mode any
	if p.Quantity > 0 {
		quantity, mode = p.Quantity, p.Mode
	} else {
		numbers = p.Numbers
	}
	ref := Ref{ID: id, ProductID: p.Product.ID, TenantID: p.Product.TenantID}
	var created *time.Time
	transactional := s.enqueuer.Transactional()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// enqueued_at stays NULL until a non-transactional queue confirms
		// the publish: that is how the repair job finds unpublished requests.
		err := tx.QueryRow(ctx, `
			INSERT INTO reservation_requests (id, tenant_id, product_id, buyer_id, idempotency_key, request_hash,
			                                  numbers, quantity, mode, accept_fewer, enqueued_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11 THEN clock_timestamp() END)
			ON CONFLICT (tenant_id, buyer_id, idempotency_key) DO NOTHING
			RETURNING created_at`,
			id, p.Product.TenantID, p.Product.ID, p.BuyerID, p.IdempotencyKey, hash,
			numbers, quantity, mode, p.AcceptFewer, transactional).Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the key exists: a replay, answered below
		}
		if err != nil {
			return fmt.Errorf("insert reservation request: %w", err)
		}
		return s.enqueuer.EnqueueTx(ctx, tx, ref)
	})
	if err != nil {
		return nil, err
	}
	if created != nil {
		s.metrics.Accepted()
		if !transactional {
			// Committed but not yet queued: publish now. A failure is not the
			// shopper's: the request is safe and the repair job publishes it.
			pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
			defer cancel()
			if err := s.enqueuer.Publish(pubCtx, []Ref{ref}); err != nil {
				s.logger.WarnContext(ctx, "publish after accept failed; the repair job will retry",
					"request", id, "product", p.Product.ID, "error", err)
			}
		}
		return &Accepted{Request: &Request{ID: id, ProductID: p.Product.ID, Status: StatusQueued, CreatedAt: *created}}, nil
	}

	var existingID uuid.UUID
	var existingHash []byte
	err = s.pool.QueryRow(ctx, `
		SELECT id, request_hash FROM reservation_requests
		WHERE tenant_id = $1 AND buyer_id = $2 AND idempotency_key = $3`,
		p.Product.TenantID, p.BuyerID, p.IdempotencyKey).Scan(&existingID, &existingHash)
	if err != nil {
		return nil, fmt.Errorf("read replayed request: %w", err)
	}
	if string(existingHash) != string(hash) {
		return nil, ErrIdempotencyConflict
	}
	req, err := s.Get(ctx, p.Product.TenantID, existingID, p.BuyerID)
	if err != nil {
		return nil, err
	}
	return &Accepted{Request: req, Replayed: true}, nil
}

// Get returns a request of the tenant; when buyerID is not empty the request
// must also be that buyer's. A HELD request whose hold has run out reads as
// EXPIRED even before the sweeper has passed.
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID, buyerID string) (*Request, error) {
	var r Request
	err := s.pool.QueryRow(ctx, `
		SELECT r.id, r.product_id,
		       CASE WHEN r.status = 'HELD' AND h.expires_at <= now() THEN 'EXPIRED' ELSE r.status END,
		       coalesce(r.reason, ''), r.hold_id, h.numbers, h.expires_at, r.created_at, r.processed_at
		FROM reservation_requests r
		LEFT JOIN holds h ON h.id = r.hold_id
		WHERE r.id = $1 AND r.tenant_id = $2 AND ($3 = '' OR r.buyer_id = $3)`,
		id, tenantID, buyerID).
		Scan(&r.ID, &r.ProductID, &r.Status, &r.Reason, &r.HoldID, &r.Numbers, &r.ExpiresAt, &r.CreatedAt, &r.ProcessedAt)
	if err != nil {
		return nil, fmt.Errorf("get reservation %s: %w", id, db.NotFound(err))
	}
	return &r, nil
}
