// Package rehearsal lets a tenant admin play an on-sale before it happens:
// a shadow copy of the product (its own product row, a draft no store or
// list shows), N synthetic buyers arriving over a spread of seconds through
// the real waiting room, the real claim workers and checkout with the
// test-mode payment provider (a simulator, never the real one), on the
// deployment as it runs. What comes back is what the sale would look like:
// time to sell out, the admission rate, the conflict rate, the claim
// backlog and the payment load. It owns the rehearsals table.
package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
)

// Params is what a rehearsal plays.
type Params struct {
	Buyers          int     `json:"buyers" minimum:"1" maximum:"20000" doc:"Synthetic buyers"`
	ActiveShoppers  int     `json:"activeShoppers,omitempty" minimum:"1" maximum:"1000000" doc:"L to rehearse with (default: the product's room, or 200)"`
	ShoppingSeconds int     `json:"shoppingSeconds,omitempty" minimum:"1" maximum:"3600" doc:"W to rehearse with (default: the product's room, or 60)"`
	ArrivalSeconds  int     `json:"arrivalSeconds,omitempty" minimum:"1" maximum:"600" doc:"Buyers arrive spread over this (default 20); a third before opening"`
	PayShare        float64 `json:"payShare,omitempty" minimum:"0" maximum:"1" doc:"Share of buyers with seats who pay (default 0.6); 5 % of payments are declined"`
	DeadlineSeconds int     `json:"deadlineSeconds,omitempty" minimum:"10" maximum:"1800" doc:"Stop after this (default 300)"`
}

// withDefaults fills in what was left out.
func (p Params) withDefaults() Params {
	if p.ArrivalSeconds == 0 {
		p.ArrivalSeconds = 20
	}
	if p.PayShare == 0 {
		p.PayShare = 0.6
	}
	if p.DeadlineSeconds == 0 {
		p.DeadlineSeconds = 300
	}
	return p
}

// Result is what the rehearsal saw.
type Result struct {
	SellOutSeconds       float64  `json:"sellOutSeconds" doc:"From opening until nothing was left (0: not sold out)"`
	SoldOut              bool     `json:"soldOut"`
	Arrived              int64    `json:"arrived"`
	Admitted             int64    `json:"admitted"`
	AdmissionRate        float64  `json:"admissionRate" doc:"Shoppers let in per second while the room admitted"`
	Reserved             int64    `json:"reserved" doc:"Reservation requests accepted"`
	Held                 int64    `json:"held"`
	Rejected             int64    `json:"rejected"`
	Chosen               int64    `json:"chosen" doc:"Requests for seats the buyer chose (the others asked for the best available)"`
	Conflicts            int64    `json:"conflicts" doc:"Requests refused because another buyer had the seat"`
	ConflictRate         float64  `json:"conflictRate" doc:"Conflicts among requests for chosen seats"`
	PeakClaimBacklog     int64    `json:"peakClaimBacklog" doc:"Most requests waiting for a claim at once"`
	ClaimLatencyP99      float64  `json:"claimLatencyP99Seconds" doc:"Accept to decision"`
	Orders               int64    `json:"orders"`
	Paid                 int64    `json:"paid"`
	PeakPaymentsInFlight int64    `json:"peakPaymentsInFlight"`
	PaymentsPerSecond    float64  `json:"paymentsPerSecond" doc:"Peak orders confirmed per second"`
	Seconds              float64  `json:"seconds" doc:"How long the rehearsal ran"`
	Timeline             []Sample `json:"timeline" doc:"Once a second from opening"`
	Notes                []string `json:"notes,omitempty"`
}

// Sample is the shadow sale once a second.
type Sample struct {
	Second    int   `json:"s"`
	Available int   `json:"available"`
	Waiting   int64 `json:"waiting"`
	Admitted  int64 `json:"admitted"`
	Queued    int64 `json:"queued"`
	Paid      int64 `json:"paid"`
}

// Rehearsal is one run.
type Rehearsal struct {
	ID         uuid.UUID  `json:"id"`
	TenantID   uuid.UUID  `json:"tenantId"`
	ProductID  uuid.UUID  `json:"productId"`
	ShadowID   *uuid.UUID `json:"shadowId,omitempty" doc:"The shadow product: watch it on the live sale view while the rehearsal runs; it is deleted when the rehearsal ends"`
	Params     Params     `json:"params"`
	Status     string     `json:"status" enum:"QUEUED,RUNNING,DONE,FAILED"`
	Result     *Result    `json:"result,omitempty"`
	Error      string     `json:"error,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Store keeps rehearsals.
type Store struct {
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
}

// NewStore returns a Store; riverClient queues the runs.
func NewStore(pool *pgxpool.Pool, riverClient *river.Client[pgx.Tx]) *Store {
	return &Store{pool: pool, river: riverClient}
}

// ErrBusy refuses a second rehearsal of a product while one runs.
var ErrBusy = errors.New("a rehearsal of this product is already queued or running")

// Start records a rehearsal and queues its run.
func (s *Store) Start(ctx context.Context, tenantID, productID uuid.UUID, p Params) (*Rehearsal, error) {
	p = p.withDefaults()
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	id := db.NewID()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// One at a time per product: serialise on the product's runs.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, productID); err != nil {
			return err
		}
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM rehearsals WHERE product_id = $1 AND status IN ('QUEUED', 'RUNNING'))`,
			productID).Scan(&busy); err != nil {
			return err
		}
		if busy {
			return ErrBusy
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rehearsals (id, tenant_id, product_id, params) VALUES ($1, $2, $3, $4)`,
			id, tenantID, productID, params); err != nil {
			return err
		}
		_, err := s.river.InsertTx(ctx, tx, Args{ID: id}, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start rehearsal: %w", err)
	}
	return s.Get(ctx, tenantID, id)
}

const selectRehearsal = `
	SELECT id, tenant_id, product_id, shadow_id, params, status, result, coalesce(error, ''), created_at, started_at, finished_at
	FROM rehearsals`

func scan(row pgx.Row) (*Rehearsal, error) {
	var r Rehearsal
	var params, result []byte
	if err := row.Scan(&r.ID, &r.TenantID, &r.ProductID, &r.ShadowID, &params, &r.Status, &result, &r.Error,
		&r.CreatedAt, &r.StartedAt, &r.FinishedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(params, &r.Params); err != nil {
		return nil, fmt.Errorf("rehearsal %s params: %w", r.ID, err)
	}
	if result != nil {
		r.Result = &Result{}
		if err := json.Unmarshal(result, r.Result); err != nil {
			return nil, fmt.Errorf("rehearsal %s result: %w", r.ID, err)
		}
	}
	return &r, nil
}

// Get returns a tenant's rehearsal.
func (s *Store) Get(ctx context.Context, tenantID, id uuid.UUID) (*Rehearsal, error) {
	r, err := scan(s.pool.QueryRow(ctx, selectRehearsal+` WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return nil, fmt.Errorf("rehearsal %s: %w", id, db.NotFound(err))
	}
	return r, nil
}

// List returns a product's rehearsals, newest first.
func (s *Store) List(ctx context.Context, tenantID, productID uuid.UUID) ([]*Rehearsal, error) {
	rows, err := s.pool.Query(ctx, selectRehearsal+` WHERE tenant_id = $1 AND product_id = $2 ORDER BY created_at DESC LIMIT 50`,
		tenantID, productID)
	if err != nil {
		return nil, fmt.Errorf("rehearsals of %s: %w", productID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Rehearsal, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("rehearsals of %s: %w", productID, err)
	}
	if out == nil {
		out = []*Rehearsal{}
	}
	return out, nil
}

// get reads a rehearsal for its run, whatever its tenant.
func (s *Store) get(ctx context.Context, id uuid.UUID) (*Rehearsal, error) {
	r, err := scan(s.pool.QueryRow(ctx, selectRehearsal+` WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("rehearsal %s: %w", id, db.NotFound(err))
	}
	return r, nil
}

// begin marks a run started (false: it already ran, a retried job).
func (s *Store) begin(ctx context.Context, id uuid.UUID) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE rehearsals SET status = 'RUNNING', started_at = now() WHERE id = $1 AND status = 'QUEUED'`, id)
	if err != nil {
		return false, fmt.Errorf("begin rehearsal %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) setShadow(ctx context.Context, id, shadow uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE rehearsals SET shadow_id = $2 WHERE id = $1`, id, shadow); err != nil {
		return fmt.Errorf("rehearsal %s shadow: %w", id, err)
	}
	return nil
}

// finish records the outcome.
func (s *Store) finish(ctx context.Context, id uuid.UUID, res *Result, runErr error) error {
	status, msg := "DONE", ""
	if runErr != nil {
		status, msg = "FAILED", runErr.Error()
	}
	var result []byte
	if res != nil {
		var err error
		if result, err = json.Marshal(res); err != nil {
			return err
		}
	}
	if _, err := s.pool.Exec(ctx, `
		UPDATE rehearsals SET status = $2, result = $3, error = nullif($4, ''), finished_at = now() WHERE id = $1`,
		id, status, result, msg); err != nil {
		return fmt.Errorf("finish rehearsal %s: %w", id, err)
	}
	return nil
}
