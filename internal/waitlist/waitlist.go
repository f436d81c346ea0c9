// Package waitlist owns the products' waiting lists: shoppers who join a
// sold-out product's line, and the offers made to them, in order, when
// numbers come back. It keeps the line and the offers only: the numbers an
// offer withholds are counted in the inventory row by the reservation
// package, whose transactions call these functions.
package waitlist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Entry states.
const (
	Waiting   = "WAITING"   // in line
	Offered   = "OFFERED"   // may reserve up to the offer's numbers until it expires
	Converted = "CONVERTED" // the offer became a hold
	Expired   = "EXPIRED"   // the offer ran out unused
	Declined  = "DECLINED"  // the shopper turned the offer down
	Left      = "LEFT"      // the shopper left the line before an offer
)

// ErrNotOnList is returned when a buyer has no place in a product's line.
var ErrNotOnList = errors.New("not on the waiting list")

// Entry is a buyer's place in a product's line, as the shopper sees it.
type Entry struct {
	ID        uuid.UUID `json:"id"`
	ProductID uuid.UUID `json:"productId"`
	TenantID  uuid.UUID `json:"-"`
	BuyerID   string    `json:"-"`
	Email     string    `json:"email"`
	Quantity  int       `json:"quantity" doc:"How many numbers the shopper wants"`
	State     string    `json:"state" enum:"WAITING,OFFERED,CONVERTED,EXPIRED,DECLINED,LEFT"`
	// Position is 1 for the next in line; 0 once out of the line.
	Position int       `json:"position" doc:"1: next in line; 0 once no longer waiting"`
	JoinedAt time.Time `json:"joinedAt"`
	Offer    *Offer    `json:"offer,omitempty" doc:"Set once an offer was made"`
}

// Offer is the right to reserve up to Quantity numbers until ExpiresAt.
type Offer struct {
	Quantity  int       `json:"quantity"`
	ExpiresAt time.Time `json:"expiresAt"`
}

const entryColumns = `e.id, e.product_id, e.tenant_id, e.buyer_id, e.email, e.quantity, e.state, e.joined_at,
	e.offered_quantity, e.offer_expires_at,
	CASE WHEN e.state = 'WAITING' THEN (SELECT count(*) FROM waitlist_entries o
		WHERE o.product_id = e.product_id AND o.state = 'WAITING' AND o.seq <= e.seq) ELSE 0 END`

func scanEntry(row pgx.Row) (*Entry, error) {
	var e Entry
	var offered *int
	var expires *time.Time
	if err := row.Scan(&e.ID, &e.ProductID, &e.TenantID, &e.BuyerID, &e.Email, &e.Quantity, &e.State, &e.JoinedAt,
		&offered, &expires, &e.Position); err != nil {
		return nil, err
	}
	if offered != nil && expires != nil {
		e.Offer = &Offer{Quantity: *offered, ExpiresAt: *expires}
	}
	return &e, nil
}

// Join puts the buyer in the product's line for quantity numbers, or
// returns their place if they already have one (created false).
func Join(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyerID, email string, quantity int) (*Entry, bool, error) {
	tag, err := q.Exec(ctx, `
		INSERT INTO waitlist_entries (id, tenant_id, product_id, buyer_id, email, quantity)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (product_id, buyer_id) WHERE state IN ('WAITING', 'OFFERED') DO NOTHING`,
		db.NewID(), tenantID, productID, buyerID, email, quantity)
	if err != nil {
		return nil, false, fmt.Errorf("join the waiting list of %s: %w", productID, err)
	}
	e, err := Get(ctx, q, productID, buyerID)
	return e, tag.RowsAffected() == 1, err
}

// Get returns the buyer's latest place in the product's line (ErrNotOnList
// when they never joined).
func Get(ctx context.Context, q db.DBTX, productID uuid.UUID, buyerID string) (*Entry, error) {
	e, err := scanEntry(q.QueryRow(ctx, `SELECT `+entryColumns+` FROM waitlist_entries e
		WHERE e.product_id = $1 AND e.buyer_id = $2 ORDER BY e.seq DESC LIMIT 1`, productID, buyerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotOnList
	}
	if err != nil {
		return nil, fmt.Errorf("waiting list entry of %s: %w", productID, err)
	}
	return e, nil
}

// ByID returns one entry.
func ByID(ctx context.Context, q db.DBTX, id uuid.UUID) (*Entry, error) {
	e, err := scanEntry(q.QueryRow(ctx, `SELECT `+entryColumns+` FROM waitlist_entries e WHERE e.id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("waiting list entry %s: %w", id, db.NotFound(err))
	}
	return e, nil
}

// Leave takes the buyer out of the product's line, in tx: a place in line
// is left, an offer declined. It returns the numbers the offer withheld (0
// for a place in line), which the caller gives back to sale. It locks the
// entry before the caller touches the inventory row, the order a claim
// spending an offer keeps.
func Leave(ctx context.Context, tx pgx.Tx, productID uuid.UUID, buyerID string) (withheld int, err error) {
	var offered *int
	err = tx.QueryRow(ctx, `
		UPDATE waitlist_entries e
		SET state = CASE WHEN e.state = 'OFFERED' THEN 'DECLINED' ELSE 'LEFT' END, ended_at = now()
		FROM (SELECT id, state FROM waitlist_entries
		      WHERE product_id = $1 AND buyer_id = $2 AND state IN ('WAITING', 'OFFERED') FOR UPDATE) old
		WHERE e.id = old.id
		RETURNING CASE WHEN old.state = 'OFFERED' THEN e.offered_quantity END`, productID, buyerID).Scan(&offered)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotOnList
	}
	if err != nil {
		return 0, fmt.Errorf("leave the waiting list of %s: %w", productID, err)
	}
	if offered == nil {
		return 0, nil
	}
	return *offered, nil
}

// AnyoneWaiting reports whether anyone waits in the product's line without an
// offer yet: numbers that come back are theirs, not the next claim's.
func AnyoneWaiting(ctx context.Context, q db.DBTX, productID uuid.UUID) (bool, error) {
	var yes bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM waitlist_entries WHERE product_id = $1 AND state = 'WAITING')`,
		productID).Scan(&yes); err != nil {
		return false, fmt.Errorf("anyone waiting for %s: %w", productID, err)
	}
	return yes, nil
}

// Withheld returns the numbers the product's outstanding offers withhold:
// what the inventory row's offered counter must say (the audit compares).
func Withheld(ctx context.Context, q db.DBTX, productID uuid.UUID) (int, error) {
	var n int
	if err := q.QueryRow(ctx, `SELECT coalesce(sum(offered_quantity), 0)::int FROM waitlist_entries
		WHERE product_id = $1 AND state = 'OFFERED'`, productID).Scan(&n); err != nil {
		return 0, fmt.Errorf("numbers offered for %s: %w", productID, err)
	}
	return n, nil
}

// Summary is a product's line as the console shows it.
type Summary struct {
	Waiting   int `json:"waiting" doc:"In line without an offer"`
	Offered   int `json:"offered" doc:"Offers outstanding"`
	Withheld  int `json:"withheld" doc:"Numbers the outstanding offers withhold from sale"`
	Converted int `json:"converted" doc:"Offers that became holds"`
	Expired   int `json:"expired" doc:"Offers that ran out unused"`
	Declined  int `json:"declined" doc:"Offers turned down"`
	Left      int `json:"left" doc:"Shoppers who left the line before an offer"`
}

// SummaryOf counts a product's line by state.
func SummaryOf(ctx context.Context, q db.DBTX, productID uuid.UUID) (Summary, error) {
	var s Summary
	err := q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'WAITING'), count(*) FILTER (WHERE state = 'OFFERED'),
		       coalesce(sum(offered_quantity) FILTER (WHERE state = 'OFFERED'), 0),
		       count(*) FILTER (WHERE state = 'CONVERTED'), count(*) FILTER (WHERE state = 'EXPIRED'),
		       count(*) FILTER (WHERE state = 'DECLINED'), count(*) FILTER (WHERE state = 'LEFT')
		FROM waitlist_entries WHERE product_id = $1`, productID).
		Scan(&s.Waiting, &s.Offered, &s.Withheld, &s.Converted, &s.Expired, &s.Declined, &s.Left)
	if err != nil {
		return Summary{}, fmt.Errorf("waiting list of %s: %w", productID, err)
	}
	return s, nil
}
