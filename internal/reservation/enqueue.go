package reservation

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Ref names a recorded request for the queue.
type Ref struct {
	ID        uuid.UUID `json:"requestId"`
	ProductID uuid.UUID `json:"productId"`
	TenantID  uuid.UUID `json:"tenantId"`
	// Trace is the accept's traceparent, carried beside the body (SQS
	// message attributes), never in it.
	Trace *string `json:"-"`
}

// Enqueuer hands recorded requests to the claim workers. River enqueues
// inside the accept transaction; SQS cannot join it, so its requests are
// published after commit and the repair job covers the gap.
type Enqueuer interface {
	// Transactional reports whether EnqueueTx enqueues with the accept
	// transaction's commit; if not, requests are published after commit.
	Transactional() bool
	// EnqueueTx runs inside the accept transaction.
	EnqueueTx(ctx context.Context, tx pgx.Tx, ref Ref) error
	// Publish enqueues committed requests: after commit, and from the repair job.
	Publish(ctx context.Context, refs []Ref) error
}

// RiverEnqueuer enqueues the unique per-product claim job (see ClaimArgs).
type RiverEnqueuer struct {
	Client *river.Client[pgx.Tx]
}

// Transactional is true: the job commits with the request.
func (RiverEnqueuer) Transactional() bool { return true }

// EnqueueTx makes sure a claim job will look at the product's queue after
// the accept transaction commits, inserting one only when none is pending
// (see markJobPending).
func (e RiverEnqueuer) EnqueueTx(ctx context.Context, tx pgx.Tx, ref Ref) error {
	needed, err := markJobPending(ctx, tx, ref.ProductID)
	if err != nil || !needed {
		return err
	}
	if _, err := e.Client.InsertTx(ctx, tx, ClaimArgs{ProductID: ref.ProductID, TenantID: ref.TenantID}, nil); err != nil {
		return fmt.Errorf("enqueue claim job: %w", err)
	}
	return nil
}

// Publish inserts one claim job per product; products whose job already
// waits or runs are skipped by River's uniqueness.
func (e RiverEnqueuer) Publish(ctx context.Context, refs []Ref) error {
	seen := map[uuid.UUID]bool{}
	var params []river.InsertManyParams
	for _, r := range refs {
		if !seen[r.ProductID] {
			seen[r.ProductID] = true
			params = append(params, river.InsertManyParams{Args: ClaimArgs{ProductID: r.ProductID, TenantID: r.TenantID}})
		}
	}
	if len(params) == 0 {
		return nil
	}
	// Product order, like the accept path, so concurrent inserts never
	// lock two products' unique job rows in opposite orders.
	slices.SortFunc(params, func(a, b river.InsertManyParams) int {
		pa, pb := a.Args.(ClaimArgs).ProductID, b.Args.(ClaimArgs).ProductID
		return bytes.Compare(pa[:], pb[:])
	})
	if _, err := e.Client.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("enqueue claim jobs: %w", err)
	}
	return nil
}
