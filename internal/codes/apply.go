package codes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Why a code cannot be used.
const (
	Unknown         = "UNKNOWN"            // no such code
	NotYetValid     = "NOT_YET_VALID"      // before the list's validFrom
	Expired         = "EXPIRED"            // after the list's validUntil
	NotForThisEvent = "NOT_FOR_THIS_EVENT" // the list is another product's
	UsedUp          = "USED_UP"            // every use of the code is taken
	UsedByYou       = "USED_BY_YOU"        // the buyer has used the list's codes as often as they may
	Required        = "REQUIRED"           // the presale is open to code holders only
)

// InvalidError is a code that cannot be used, and why.
type InvalidError struct{ Reason, Code string }

func (e *InvalidError) Error() string { return fmt.Sprintf("code %s: %s", e.Code, e.Reason) }

// Applied is a code applied to an order's tickets.
type Applied struct {
	Code  string    `json:"code"`
	List  uuid.UUID `json:"-"`
	Cents int64     `json:"discountCents" doc:"What the code takes off the tickets' prices"`
}

// Use is who uses a code for what: an order of a product's tickets worth
// Subtotal (their prices, without fees).
type Use struct {
	TenantID, ProductID uuid.UUID
	OrderID             uuid.UUID // uuid.Nil to only check (a quote)
	BuyerID, Code       string
	Subtotal            int64
	// Until is when a reserved use stops counting: the end of the order's
	// hold.
	Until time.Time
}

// Check says what the code would take off, without taking a use (a quote
// before paying; Reserve decides).
func Check(ctx context.Context, q db.DBTX, u Use) (Applied, error) {
	return apply(ctx, q, u, false)
}

// Reserve takes one use of the code for the order, in the order's
// transaction: the code's row is locked, so of two orders racing for its
// last use one gets it. An order paid again after a decline takes its use
// again.
func Reserve(ctx context.Context, tx pgx.Tx, u Use) (Applied, error) {
	a, err := apply(ctx, tx, u, true)
	if err != nil {
		return Applied{}, err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO code_uses (id, tenant_id, code, list_id, product_id, order_id, buyer_id, discount_cents, reserved_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (order_id) DO UPDATE SET state = 'RESERVED', reserved_until = EXCLUDED.reserved_until,
		    discount_cents = EXCLUDED.discount_cents, ended_at = NULL`,
		db.NewID(), u.TenantID, a.Code, a.List, u.ProductID, u.OrderID, u.BuyerID, a.Cents, u.Until)
	if err != nil {
		return Applied{}, fmt.Errorf("use code %s: %w", a.Code, err)
	}
	return a, nil
}

func apply(ctx context.Context, q db.DBTX, u Use, lock bool) (Applied, error) {
	code := Normalize(u.Code)
	lockClause := ""
	if lock {
		lockClause = " FOR UPDATE OF c"
	}
	var l List
	var inWindow, started bool
	err := q.QueryRow(ctx, `
		SELECT l.id, l.product_id, l.percent_off, l.amount_off_cents, l.uses_per_code, l.per_buyer,
		       coalesce(l.valid_from <= now(), true), coalesce(l.valid_until > now(), true)
		FROM codes c JOIN code_lists l ON l.id = c.list_id
		WHERE c.tenant_id = $1 AND c.code = $2 AND l.kind = 'DISCOUNT'`+lockClause, u.TenantID, code).
		Scan(&l.ID, &l.ProductID, &l.PercentOff, &l.AmountOffCents, &l.UsesPerCode, &l.PerBuyer, &started, &inWindow)
	invalid := func(reason string) (Applied, error) { return Applied{}, &InvalidError{Reason: reason, Code: code} }
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return invalid(Unknown)
	case err != nil:
		return Applied{}, fmt.Errorf("code %s: %w", code, err)
	case !started:
		return invalid(NotYetValid)
	case !inWindow:
		return invalid(Expired)
	case l.ProductID != nil && *l.ProductID != u.ProductID:
		return invalid(NotForThisEvent)
	}
	if lock {
		// A buyer's orders take their turns on the list: two orders with
		// two of its codes cannot both take the buyer's last use.
		if _, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('boxoffice.codes/' || $1::text || '/' || $2, 0))`,
			l.ID, u.BuyerID); err != nil {
			return Applied{}, fmt.Errorf("code %s: %w", code, err)
		}
	}
	// The uses that count, other than this order's own (paid again after
	// a decline, it takes its use back).
	var ofCode, ofBuyer int
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE u.code = $2), count(*) FILTER (WHERE u.list_id = $3 AND u.buyer_id = $4)
		FROM code_uses u
		WHERE ((u.tenant_id = $1 AND u.code = $2) OR (u.list_id = $3 AND u.buyer_id = $4))
		  AND u.order_id <> $5 AND `+live, u.TenantID, code, l.ID, u.BuyerID, u.OrderID).Scan(&ofCode, &ofBuyer)
	if err != nil {
		return Applied{}, fmt.Errorf("uses of code %s: %w", code, err)
	}
	switch {
	case ofBuyer >= l.PerBuyer:
		return invalid(UsedByYou)
	case ofCode >= l.UsesPerCode:
		return invalid(UsedUp)
	}
	a := Applied{Code: code, List: l.ID}
	if l.PercentOff != nil {
		a.Cents = u.Subtotal * int64(*l.PercentOff) / 100
	} else {
		a.Cents = min(*l.AmountOffCents, u.Subtotal)
	}
	return a, nil
}

// Finalize makes the order's use final: the order is confirmed.
func Finalize(ctx context.Context, tx pgx.Tx, orderID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `UPDATE code_uses SET state = 'FINAL', ended_at = now() WHERE order_id = $1 AND state = 'RESERVED'`,
		orderID); err != nil {
		return fmt.Errorf("finalize code use of %s: %w", orderID, err)
	}
	return nil
}

// Release gives the order's use back: the order failed or ended unpaid.
func Release(ctx context.Context, tx pgx.Tx, orderID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `UPDATE code_uses SET state = 'RELEASED', ended_at = now() WHERE order_id = $1 AND state = 'RESERVED'`,
		orderID); err != nil {
		return fmt.Errorf("release code use of %s: %w", orderID, err)
	}
	return nil
}
