package reservation

// What other packages may ask of the requests, holds and claims this package
// owns. Each function takes a db.DBTX, so it runs alone or inside the
// caller's transaction; none of them decides a request (only the claim
// transaction does).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// ErrHoldChanged is returned when a hold's numbers are no longer all its own
// (a claim took one over after it expired): nothing is sold then.
var ErrHoldChanged = errors.New("hold's numbers are no longer all held")

// BuyerHold is a hold as checkout sees it, locked in its transaction.
type BuyerHold struct {
	ID        uuid.UUID
	TenantID  uuid.UUID
	ProductID uuid.UUID
	RequestID uuid.UUID
	BuyerID   string
	Numbers   []int32
	// Active is true while the hold is ACTIVE and not past its expiry.
	Active    bool
	ExpiresAt time.Time
}

// LockHold locks a hold for the caller's transaction (db.ErrNotFound when
// it does not exist). It comes first in the common lock order: hold,
// claims, inventory.
func LockHold(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*BuyerHold, error) {
	h := BuyerHold{ID: id}
	err := tx.QueryRow(ctx, `
		SELECT tenant_id, product_id, request_id, buyer_id, numbers, state = 'ACTIVE' AND expires_at > now(), expires_at
		FROM holds WHERE id = $1 FOR UPDATE`, id).
		Scan(&h.TenantID, &h.ProductID, &h.RequestID, &h.BuyerID, &h.Numbers, &h.Active, &h.ExpiresAt)
	if err != nil {
		return nil, fmt.Errorf("lock hold %s: %w", id, db.NotFound(err))
	}
	return &h, nil
}

// ExtendHold moves a locked hold's expiry, and its claims', later by d.
func ExtendHold(ctx context.Context, tx pgx.Tx, h *BuyerHold, d time.Duration) error {
	if _, err := tx.Exec(ctx, `UPDATE holds SET expires_at = expires_at + make_interval(secs => $2) WHERE id = $1`,
		h.ID, d.Seconds()); err != nil {
		return fmt.Errorf("extend hold: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE claims SET expires_at = expires_at + make_interval(secs => $3)
		WHERE product_id = $1 AND number = ANY($2) AND hold_id = $4 AND state = 'HELD'`,
		h.ProductID, h.Numbers, d.Seconds(), h.ID); err != nil {
		return fmt.Errorf("extend claims: %w", err)
	}
	return nil
}

// ConvertHold sells a locked, active hold: its claims become SOLD, the hold
// and its request CONVERTED. The counters are the caller's to move (held →
// sold, inventory last in the lock order). If any number is no longer the
// hold's it returns ErrHoldChanged and the caller must roll back.
func ConvertHold(ctx context.Context, tx pgx.Tx, h *BuyerHold) error {
	tag, err := tx.Exec(ctx, `
		UPDATE claims SET state = 'SOLD', expires_at = NULL
		WHERE product_id = $1 AND number = ANY($2) AND hold_id = $3 AND state = 'HELD'`, h.ProductID, h.Numbers, h.ID)
	if err != nil {
		return fmt.Errorf("sell claims: %w", err)
	}
	if int(tag.RowsAffected()) != len(h.Numbers) {
		return fmt.Errorf("hold %s: %d of %d claims: %w", h.ID, tag.RowsAffected(), len(h.Numbers), ErrHoldChanged)
	}
	if _, err := tx.Exec(ctx, `UPDATE holds SET state = 'CONVERTED', ended_at = now() WHERE id = $1`, h.ID); err != nil {
		return fmt.Errorf("convert hold: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE reservation_requests SET status = 'CONVERTED' WHERE id = $1`, h.RequestID); err != nil {
		return fmt.Errorf("convert request: %w", err)
	}
	return nil
}

// HoldProduct returns the product of a buyer's hold, and whether a
// waiting-list offer made it (db.ErrNotFound when the buyer has no such
// hold).
func HoldProduct(ctx context.Context, q db.DBTX, tenantID uuid.UUID, buyerID string, holdID uuid.UUID) (productID uuid.UUID, offered bool, err error) {
	err = q.QueryRow(ctx, `
		SELECT h.product_id, r.offer_id IS NOT NULL
		FROM holds h JOIN reservation_requests r ON r.id = h.request_id
		WHERE h.id = $1 AND h.tenant_id = $2 AND h.buyer_id = $3`, holdID, tenantID, buyerID).Scan(&productID, &offered)
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("read hold %s: %w", holdID, db.NotFound(err))
	}
	return productID, offered, nil
}

// HoldNumbers returns the product and numbers of a buyer's hold, without
// locking it (db.ErrNotFound when the buyer has no such hold).
func HoldNumbers(ctx context.Context, q db.DBTX, tenantID uuid.UUID, buyerID string, holdID uuid.UUID) (uuid.UUID, []int32, error) {
	var productID uuid.UUID
	var numbers []int32
	err := q.QueryRow(ctx, `SELECT product_id, numbers FROM holds WHERE id = $1 AND tenant_id = $2 AND buyer_id = $3`,
		holdID, tenantID, buyerID).Scan(&productID, &numbers)
	if err != nil {
		return uuid.Nil, nil, fmt.Errorf("read hold %s: %w", holdID, db.NotFound(err))
	}
	return productID, numbers, nil
}

// ToRepair returns up to limit QUEUED requests that need publishing again:
// never published after republishAfter, or published longer ago than
// redeliveryWindow. Dead-lettered requests are left to the operator.
// unpublished counts the first kind.
func ToRepair(ctx context.Context, q db.DBTX, republishAfter, redeliveryWindow time.Duration, limit int) (refs []Ref, unpublished int, err error) {
	rows, err := q.Query(ctx, `
		SELECT id, product_id, tenant_id, enqueued_at IS NULL
		FROM reservation_requests
		WHERE status = 'QUEUED' AND dead_lettered_at IS NULL
		  AND ((enqueued_at IS NULL AND created_at < now() - make_interval(secs => $1))
		       OR enqueued_at < now() - make_interval(secs => $2))
		ORDER BY created_at
		LIMIT $3`,
		republishAfter.Seconds(), redeliveryWindow.Seconds(), limit)
	if err != nil {
		return nil, 0, fmt.Errorf("find requests to repair: %w", err)
	}
	var ref Ref
	var never bool
	_, err = pgx.ForEachRow(rows, []any{&ref.ID, &ref.ProductID, &ref.TenantID, &never}, func() error {
		refs = append(refs, ref)
		if never {
			unpublished++
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("find requests to repair: %w", err)
	}
	return refs, unpublished, nil
}

// MarkEnqueued records that the queue has the requests' messages. The
// repair job republishes requests without the mark, or whose mark has grown
// old while they are still QUEUED.
func MarkEnqueued(ctx context.Context, q db.DBTX, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	// Never waiting for a claim that has a row locked: it is deciding the
	// request, and the mark matters only for requests still QUEUED (if that
	// claim rolls back, the repair job publishes the request again, and the
	// duplicate message is harmless). Held briefly, the marks can still make
	// an SQS consumer skip a row; the consumer puts that message back.
	_, err := q.Exec(ctx, `
		UPDATE reservation_requests SET enqueued_at = clock_timestamp()
		WHERE id IN (SELECT id FROM reservation_requests WHERE id = ANY($1)
		             ORDER BY id FOR UPDATE SKIP LOCKED)`, ids)
	if err != nil {
		return fmt.Errorf("mark requests enqueued: %w", err)
	}
	return nil
}

// SetDeadLettered flags QUEUED requests whose messages went to the
// dead-letter queue (the repair job then leaves them to the operator's
// redrive), or clears the flag when they are redriven.
func SetDeadLettered(ctx context.Context, q db.DBTX, ids []uuid.UUID, dead bool) error {
	if len(ids) == 0 {
		return nil
	}
	sql := `UPDATE reservation_requests SET dead_lettered_at = NULL WHERE id = ANY($1)`
	if dead {
		sql = `UPDATE reservation_requests SET dead_lettered_at = now() WHERE id = ANY($1) AND status = 'QUEUED'`
	}
	if _, err := q.Exec(ctx, sql, ids); err != nil {
		return fmt.Errorf("set dead-letter marks: %w", err)
	}
	return nil
}

// NotQueued returns the ids whose requests are no longer QUEUED, or do not
// exist at all (a message nobody can act on).
func NotQueued(ctx context.Context, q db.DBTX, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	// A scalar subquery per id is one primary-key probe each, whatever the
	// planner knows; a join let it scan the table per batch.
	rows, err := q.Query(ctx, `
		SELECT u.id FROM unnest($1::uuid[]) AS u(id)
		WHERE coalesce((SELECT status FROM reservation_requests r WHERE r.id = u.id), '') <> 'QUEUED'`, ids)
	if err != nil {
		return nil, fmt.Errorf("read request outcomes: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("read request outcomes: %w", err)
	}
	out := make(map[uuid.UUID]bool, len(done))
	for _, id := range done {
		out[id] = true
	}
	return out, nil
}

// Figures are the request counts an operator watches.
type Figures struct {
	ByStatus map[string]int
	// OldestQueued is when the oldest QUEUED request was recorded (nil
	// when none is queued).
	OldestQueued *time.Time
	DeadLettered int
}

// ReadFigures counts requests of one tenant (all tenants with uuid.Nil).
func ReadFigures(ctx context.Context, q db.DBTX, tenantID uuid.UUID) (Figures, error) {
	f := Figures{ByStatus: map[string]int{}}
	tenant := nullable(tenantID)
	rows, err := q.Query(ctx, `
		SELECT status, count(*) FROM reservation_requests
		WHERE $1::uuid IS NULL OR tenant_id = $1 GROUP BY status`, tenant)
	if err != nil {
		return f, fmt.Errorf("requests by status: %w", err)
	}
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { f.ByStatus[status] = n; return nil }); err != nil {
		return f, fmt.Errorf("requests by status: %w", err)
	}
	err = q.QueryRow(ctx, `
		SELECT min(created_at), count(*) FILTER (WHERE dead_lettered_at IS NOT NULL)
		FROM reservation_requests
		WHERE status = 'QUEUED' AND ($1::uuid IS NULL OR tenant_id = $1)`, tenant).
		Scan(&f.OldestQueued, &f.DeadLettered)
	if err != nil {
		return f, fmt.Errorf("oldest queued request: %w", err)
	}
	return f, nil
}

// OldestEnqueued is the oldest publish mark of a QUEUED request (nil when
// none): how long the queue has held its oldest message.
func OldestEnqueued(ctx context.Context, q db.DBTX) (*time.Time, error) {
	var oldest *time.Time
	err := q.QueryRow(ctx, `
		SELECT min(enqueued_at) FROM reservation_requests
		WHERE status = 'QUEUED' AND enqueued_at IS NOT NULL`).Scan(&oldest)
	if err != nil {
		return nil, fmt.Errorf("oldest queued request: %w", err)
	}
	return oldest, nil
}

func nullable(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// OldestQueuedAge is how long the QUEUED request at the front of a
// product's queue has waited (zero when none waits): the waiting room slows
// admission when claims fall behind. The front is read in the queue's
// order, which its index keeps, rather than as the smallest created_at,
// which would read the whole queue.
func OldestQueuedAge(ctx context.Context, q db.DBTX, productID uuid.UUID) (time.Duration, error) {
	var seconds float64
	err := q.QueryRow(ctx, `
		SELECT coalesce((
			SELECT extract(epoch FROM now() - created_at)::float8 FROM reservation_requests
			WHERE product_id = $1 AND status = 'QUEUED'
			ORDER BY queued_xid, created_at, id LIMIT 1), 0)`, productID).Scan(&seconds)
	if err != nil {
		return 0, fmt.Errorf("oldest queued request of %s: %w", productID, err)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// BuyersWithRequests returns which of the buyers have made a request for
// the product.
func BuyersWithRequests(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(buyers) == 0 {
		return out, nil
	}
	// One probe of the (tenant, buyer) index per buyer.
	rows, err := q.Query(ctx, `
		SELECT u.buyer FROM unnest($3::text[]) AS u(buyer)
		WHERE EXISTS (SELECT 1 FROM reservation_requests r
		              WHERE r.tenant_id = $1 AND r.buyer_id = u.buyer AND r.product_id = $2)`,
		tenantID, productID, buyers)
	if err != nil {
		return nil, fmt.Errorf("buyers with requests: %w", err)
	}
	var buyer string
	if _, err := pgx.ForEachRow(rows, []any{&buyer}, func() error { out[buyer] = true; return nil }); err != nil {
		return nil, fmt.Errorf("buyers with requests: %w", err)
	}
	return out, nil
}

// Taken returns how many numbers count against the per-buyer limit of
// each of the buyers on the product (buyerCount), without locking: a
// figure to plan by, which the claim transaction counts again under its
// locks.
func Taken(ctx context.Context, q db.DBTX, productID uuid.UUID, buyers []string) (map[string]int64, error) {
	out := make(map[string]int64, len(buyers))
	if len(buyers) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT b.buyer_id, `+buyerCount+` FROM unnest($2::text[]) AS b(buyer_id)`, productID, buyers)
	if err != nil {
		return nil, fmt.Errorf("numbers taken by buyers: %w", err)
	}
	var buyer string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&buyer, &n}, func() error { out[buyer] = n; return nil }); err != nil {
		return nil, fmt.Errorf("numbers taken by buyers: %w", err)
	}
	return out, nil
}

// Queued is a quantity request to load into a backlog.
type Queued struct {
	BuyerID string
	// Numbers asked, or else Quantity picked by Mode.
	Numbers  []int32
	Quantity int
	Mode     string
}

// ImportQueued records QUEUED requests of one product in bulk, in the given
// order, as if accepted and not yet enqueued, and returns their refs: a
// backlog for a drain to decide (the benchmarks load theirs so). Each gets a
// fresh idempotency key.
func ImportQueued(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, reqs []Queued) ([]Ref, error) {
	rows := make([][]any, len(reqs))
	refs := make([]Ref, len(reqs))
	base := time.Now().Add(-time.Minute)
	for i, r := range reqs {
		id := db.NewID()
		refs[i] = Ref{ID: id, ProductID: productID, TenantID: tenantID}
		params := Params{Numbers: r.Numbers, Quantity: r.Quantity, Mode: r.Mode}
		var quantity, mode any
		if r.Numbers == nil {
			quantity, mode = int32(r.Quantity), r.Mode
		}
		rows[i] = []any{id, tenantID, productID, r.BuyerID, uuid.NewString(), params.hash(productID),
			r.Numbers, quantity, mode, base.Add(time.Duration(i) * time.Microsecond)}
	}
	_, err := q.CopyFrom(ctx, pgx.Identifier{"reservation_requests"},
		[]string{"id", "tenant_id", "product_id", "buyer_id", "idempotency_key", "request_hash", "numbers", "quantity", "mode", "created_at"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return nil, fmt.Errorf("import %d queued requests: %w", len(reqs), err)
	}
	return refs, nil
}

// ExpiryBacklog is how long the longest-expired hold still ACTIVE has been
// past its expiry (zero when the sweeper is up to date).
func ExpiryBacklog(ctx context.Context, q db.DBTX) (float64, error) {
	var seconds float64
	err := q.QueryRow(ctx, `
		SELECT coalesce(extract(epoch FROM now() - min(expires_at)), 0)::float8
		FROM holds WHERE state = 'ACTIVE' AND expires_at <= now()`).Scan(&seconds)
	if err != nil {
		return 0, fmt.Errorf("expiry backlog: %w", err)
	}
	return seconds, nil
}
