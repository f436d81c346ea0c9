package reservation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
)

// Hold states.
const (
	HoldActive    = "ACTIVE"
	HoldConverted = "CONVERTED"
	HoldExpired   = "EXPIRED"
	HoldReleased  = "RELEASED"
)

// ErrHoldConverted is returned when releasing a hold that became an order.
var ErrHoldConverted = errors.New("hold already converted into an order")

// Hold is a buyer's temporary ownership of some numbers.
type Hold struct {
	ID        uuid.UUID `json:"id"`
	ProductID uuid.UUID `json:"productId"`
	RequestID uuid.UUID `json:"requestId"`
	State     string    `json:"state"`
	Numbers   []int32   `json:"numbers"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Release lets a buyer give a hold back at once: its claims are deleted, the
// bits cleared and the counters fixed in one transaction. Releasing a hold
// that has already ended returns it unchanged, so a retried DELETE is safe.
func (s *Service) Release(ctx context.Context, tenantID uuid.UUID, buyerID string, holdID uuid.UUID) (*Hold, error) {
	var h Hold
	err := db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		if err := boundFree(ctx, tx); err != nil {
			return err
		}
		var expired bool
		err := tx.QueryRow(ctx, `
			SELECT id, product_id, request_id, state, numbers, expires_at, expires_at <= now()
			FROM holds WHERE id = $1 AND tenant_id = $2 AND buyer_id = $3
			FOR UPDATE`, holdID, tenantID, buyerID).
			Scan(&h.ID, &h.ProductID, &h.RequestID, &h.State, &h.Numbers, &h.ExpiresAt, &expired)
		if err != nil {
			return fmt.Errorf("lock hold %s: %w", holdID, db.NotFound(err))
		}
		switch {
		case h.State == HoldConverted:
			return ErrHoldConverted
		case h.State != HoldActive:
			return nil
		case expired:
			// Leave it to the sweeper, which also frees claims taken over
			// meanwhile; to the buyer it is simply expired.
			h.State = HoldExpired
			return nil
		}
		freed, err := freeClaims(ctx, tx, h.ProductID, []uuid.UUID{holdID})
		if err != nil {
			return err
		}
		if err := endHolds(ctx, tx, []uuid.UUID{holdID}, HoldReleased, StatusReleased); err != nil {
			return err
		}
		h.State = HoldReleased
		return inventory.Apply(ctx, tx, h.ProductID, inventory.Change{Clear: freed, HeldDelta: -len(freed)})
	})
	if err != nil {
		return nil, err
	}
	if h.State == HoldReleased {
		s.metrics.HoldReleased()
	}
	return &h, nil
}

// freeClaims deletes the HELD claims that still belong to the given holds of
// one product and returns their numbers. A number of an expired hold that
// another claim has taken over belongs to that claim now and is left alone.
// It waits for a claims row another transaction holds (a release's own,
// live hold's rows are no one else's).
//
// It must stay cheap however stale the planner's statistics are: a product
// whose tables grew since the last ANALYZE once got a nested loop scanning
// holds for every claims row, minutes with the product's claims locked. So
// the holds' numbers are read by the holds' primary key, and the claims are
// deleted by theirs, (product_id, number), in batches of freeBatch numbers
// in number order (the order claims are inserted, and so locked, in). The
// caller's transaction begins with boundFree.
func freeClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, holdIDs []uuid.UUID) ([]int32, error) {
	return deleteClaims(ctx, tx, productID, holdIDs, freeClaimsSQL)
}

// freeExpiredClaims is freeClaims for the sweeper, which holds the
// product's inventory row: a claims row another transaction holds is
// skipped, never waited for (see expireProduct).
func freeExpiredClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, holdIDs []uuid.UUID) ([]int32, error) {
	return deleteClaims(ctx, tx, productID, holdIDs, freeUnlockedClaimsSQL)
}

func deleteClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, holdIDs []uuid.UUID, sql string) ([]int32, error) {
	rows, err := tx.Query(ctx, freeHoldNumbersSQL, holdIDs, productID)
	if err != nil {
		return nil, fmt.Errorf("free claims: numbers of the holds: %w", err)
	}
	var numbers []int32
	var owners []uuid.UUID
	var n int32
	var owner uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&n, &owner}, func() error {
		numbers, owners = append(numbers, n), append(owners, owner)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("free claims: numbers of the holds: %w", err)
	}
	var freed []int32
	for i := 0; i < len(numbers); i += freeBatch {
		j := min(i+freeBatch, len(numbers))
		rows, err := tx.Query(ctx, sql, productID, numbers[i:j], owners[i:j])
		if err != nil {
			return nil, fmt.Errorf("free claims: %w", err)
		}
		batch, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return nil, fmt.Errorf("free claims: %w", err)
		}
		freed = append(freed, batch...)
	}
	return freed, nil
}

// holdsWithoutClaims returns those of the holds that no claims row (in this
// transaction's view) names any more: the sweeper ends only those, and
// leaves a hold whose claim it skipped for the next sweep.
func holdsWithoutClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, holdIDs []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		SELECT h.id FROM holds h
		WHERE h.id = ANY($1) AND NOT EXISTS (
			SELECT 1 FROM unnest(h.numbers) AS n(number)
			JOIN claims c ON c.product_id = $2 AND c.number = n.number AND c.hold_id = h.id)`, holdIDs, productID)
	if err != nil {
		return nil, fmt.Errorf("holds freed: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("holds freed: %w", err)
	}
	return ids, nil
}

// freeBatch is how many numbers one DELETE of freeClaims looks up.
const freeBatch = 1000

// freeTimeouts bound the transactions that free claims (the sweeper's and a
// shopper's release): each holds a product's claims rows, which the
// product's claims wait for. A sweep that cannot take its locks soon gives
// up (the next sweep retries; claims already treat expired holds as free),
// and no statement runs on for long. Sequential scans are priced out so
// that stale statistics cannot turn a lookup by key into a scan, and each
// statement is planned for its parameters (see planClaim).
const freeTimeouts = `SET LOCAL lock_timeout = '2s'; SET LOCAL statement_timeout = '5s'; SET LOCAL enable_seqscan = off;
	SET LOCAL plan_cache_mode = force_custom_plan`

// boundFree applies freeTimeouts to tx, first thing in a transaction that
// frees claims.
func boundFree(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, freeTimeouts); err != nil {
		return fmt.Errorf("bound the statements freeing claims: %w", err)
	}
	return nil
}

// freeHoldNumbersSQL lists the numbers of the holds $1 of product $2, each
// with its hold, in number order.
const freeHoldNumbersSQL = `
	SELECT n.number, h.id FROM holds h CROSS JOIN LATERAL unnest(h.numbers) AS n(number)
	WHERE h.id = ANY($1) AND h.product_id = $2
	ORDER BY n.number`

// freeClaimsSQL deletes, of the numbers $2 (ascending, each with its hold
// in $3), the claims still HELD by that hold, and returns their numbers.
const freeClaimsSQL = `
	DELETE FROM claims c
	USING unnest($2::int[], $3::uuid[]) AS x(number, hold_id)
	WHERE c.product_id = $1 AND c.number = x.number AND c.hold_id = x.hold_id AND c.state = 'HELD'
	RETURNING c.number`

// freeUnlockedClaimsSQL is freeClaimsSQL skipping the rows another
// transaction has locked.
const freeUnlockedClaimsSQL = `
	DELETE FROM claims c
	WHERE c.product_id = $1 AND c.number IN (
		SELECT l.number FROM unnest($2::int[], $3::uuid[]) AS x(number, hold_id)
		JOIN claims l ON l.product_id = $1 AND l.number = x.number AND l.hold_id = x.hold_id AND l.state = 'HELD'
		ORDER BY l.number
		FOR UPDATE OF l SKIP LOCKED)
	RETURNING c.number`

// endHolds moves ACTIVE holds to holdState, their requests to requestStatus,
// and writes one outbox event per hold.
func endHolds(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, holdState, requestStatus string) error {
	rows, err := tx.Query(ctx, `
		WITH ended AS (
			UPDATE holds SET state = $2, ended_at = now()
			WHERE id = ANY($1) AND state = 'ACTIVE'
			RETURNING id, tenant_id, product_id, request_id, buyer_id, numbers
		), requests AS (
			UPDATE reservation_requests r SET status = $3
			FROM ended WHERE r.id = ended.request_id AND r.status = 'HELD'
		)
		SELECT id, tenant_id, product_id, request_id, buyer_id, numbers FROM ended`, ids, holdState, requestStatus)
	if err != nil {
		return fmt.Errorf("end holds as %s: %w", holdState, err)
	}
	topic := "hold." + strings.ToLower(holdState)
	var events []outbox.New
	var id, tenantID, productID, requestID uuid.UUID
	var buyer string
	var numbers []int32
	_, err = pgx.ForEachRow(rows, []any{&id, &tenantID, &productID, &requestID, &buyer, &numbers}, func() error {
		events = append(events, outbox.New{TenantID: tenantID, Topic: topic, Payload: map[string]any{
			"holdId": id, "requestId": requestID, "productId": productID, "buyerId": buyer, "numbers": slices.Clone(numbers)}})
		return nil
	})
	if err != nil {
		return fmt.Errorf("end holds as %s: %w", holdState, err)
	}
	return outbox.Add(ctx, tx, events...)
}
