package waitlist

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Made is an offer just made.
type Made struct {
	EntryID   uuid.UUID
	TenantID  uuid.UUID
	Quantity  int
	ExpiresAt time.Time
}

// MakeOffers offers up to free numbers to the product's line, first come
// first served: each in turn is offered what they asked for, or what is
// left, for ttl. It runs in the caller's transaction, which holds the
// product's inventory row and withholds the numbers offered. Entries
// another transaction holds are passed over until the next round.
func MakeOffers(ctx context.Context, tx pgx.Tx, productID uuid.UUID, free int, ttl time.Duration) ([]Made, error) {
	if free <= 0 {
		return nil, nil
	}
	// Each place in line wants at least one number, so free places is the
	// most that can be offered.
	rows, err := tx.Query(ctx, `
		SELECT id, tenant_id, quantity FROM waitlist_entries
		WHERE product_id = $1 AND state = 'WAITING'
		ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED`, productID, free)
	if err != nil {
		return nil, fmt.Errorf("the line of %s: %w", productID, err)
	}
	var made []Made
	var id, tenantID uuid.UUID
	var want int
	_, err = pgx.ForEachRow(rows, []any{&id, &tenantID, &want}, func() error {
		if free > 0 {
			n := min(want, free)
			free -= n
			made = append(made, Made{EntryID: id, TenantID: tenantID, Quantity: n})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the line of %s: %w", productID, err)
	}
	if len(made) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(made))
	quantities := make([]int32, len(made))
	for i, m := range made {
		ids[i], quantities[i] = m.EntryID, int32(m.Quantity)
	}
	var expires time.Time
	err = tx.QueryRow(ctx, `
		WITH o AS (
			UPDATE waitlist_entries e
			SET state = 'OFFERED', offered_quantity = u.quantity, offered_at = now(),
			    offer_expires_at = now() + make_interval(secs => $3)
			FROM unnest($1::uuid[], $2::int[]) AS u(id, quantity)
			WHERE e.id = u.id
			RETURNING e.offer_expires_at)
		SELECT max(offer_expires_at) FROM o`, ids, quantities, ttl.Seconds()).Scan(&expires)
	if err != nil {
		return nil, fmt.Errorf("make offers for %s: %w", productID, err)
	}
	for i := range made {
		made[i].ExpiresAt = expires
	}
	return made, nil
}

// EndDueOffers marks the product's offers past their time EXPIRED, in the
// caller's transaction (which holds the inventory row), and returns the
// numbers they withheld. An offer a claim is spending right now is passed
// over: the claim decides it.
func EndDueOffers(ctx context.Context, tx pgx.Tx, productID uuid.UUID) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		WITH due AS (
			SELECT id FROM waitlist_entries
			WHERE product_id = $1 AND state = 'OFFERED' AND offer_expires_at <= now()
			FOR UPDATE SKIP LOCKED),
		ended AS (
			UPDATE waitlist_entries e SET state = 'EXPIRED', ended_at = now()
			FROM due WHERE e.id = due.id
			RETURNING e.offered_quantity)
		SELECT coalesce(sum(offered_quantity), 0)::int FROM ended`, productID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("end due offers of %s: %w", productID, err)
	}
	return n, nil
}

// ProductsToServe lists the products whose line has someone waiting or an
// offer past its time.
func ProductsToServe(ctx context.Context, q db.DBTX) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT DISTINCT product_id FROM waitlist_entries
		WHERE state = 'WAITING' OR (state = 'OFFERED' AND offer_expires_at <= now())`)
	if err != nil {
		return nil, fmt.Errorf("waiting lists to serve: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("waiting lists to serve: %w", err)
	}
	return ids, nil
}

// HeldOffer is an offer as a claim spending it reads it.
type HeldOffer struct {
	ID       uuid.UUID
	BuyerID  string
	Quantity int
	// Live is true while the offer is OFFERED and not past its time.
	Live bool
}

// LockOffers locks the offers a claim's requests name, in id order (before
// the claim takes the inventory row), and returns them by id.
func LockOffers(ctx context.Context, tx pgx.Tx, productID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]HeldOffer, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT id, buyer_id, coalesce(offered_quantity, 0), state = 'OFFERED' AND offer_expires_at > now()
		FROM waitlist_entries WHERE id = ANY($1) AND product_id = $2
		ORDER BY id FOR UPDATE`, ids, productID)
	if err != nil {
		return nil, fmt.Errorf("lock offers: %w", err)
	}
	out := make(map[uuid.UUID]HeldOffer, len(ids))
	var o HeldOffer
	_, err = pgx.ForEachRow(rows, []any{&o.ID, &o.BuyerID, &o.Quantity, &o.Live}, func() error { out[o.ID] = o; return nil })
	if err != nil {
		return nil, fmt.Errorf("lock offers: %w", err)
	}
	return out, nil
}

// Convert marks offers spent: each became the hold beside it.
func Convert(ctx context.Context, tx pgx.Tx, offers, holds []uuid.UUID) error {
	if len(offers) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		UPDATE waitlist_entries e SET state = 'CONVERTED', hold_id = u.hold_id, ended_at = now()
		FROM unnest($1::uuid[], $2::uuid[]) AS u(id, hold_id) WHERE e.id = u.id`, offers, holds)
	if err != nil {
		return fmt.Errorf("spend offers: %w", err)
	}
	return nil
}
