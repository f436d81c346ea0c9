package reservation

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/inventory"
	"boxoffice/internal/waitlist"
)

// Violation is one broken invariant of one product.
type Violation struct {
	ProductID uuid.UUID `json:"productId"`
	Rule      string    `json:"rule"`
	Detail    string    `json:"detail"`
}

func (v Violation) String() string {
	return fmt.Sprintf("product %s: %s: %s", v.ProductID, v.Rule, v.Detail)
}

// Audit checks that one product's inventory row agrees with its claims, in
// one consistent snapshot (it lives here, with the claims, and reads the
// inventory row through its owner):
//   - popcount(bitmap) = held + sold = number of claims rows,
//   - the bitmap has every page, each of its size and counting its set bits,
//   - held and sold equal the claims rows in each state,
//   - available = capacity - held - sold - offered,
//   - offered = the numbers the waiting list's outstanding offers withhold,
//   - the bits set are exactly the numbers that have a claims row.
//
// No number can be in two claims: the primary key of claims forbids it.
func Audit(ctx context.Context, tx pgx.Tx, productID uuid.UUID) ([]Violation, error) {
	snap, err := inventory.Get(ctx, tx, productID)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT number, state FROM claims WHERE product_id = $1`, productID)
	if err != nil {
		return nil, fmt.Errorf("audit claims of %s: %w", productID, err)
	}
	defer rows.Close()
	bits := snap.Bits()
	var claimed, held, sold, missing int
	var n int32
	var state string
	for rows.Next() {
		if err := rows.Scan(&n, &state); err != nil {
			return nil, fmt.Errorf("audit claims of %s: %w", productID, err)
		}
		claimed++
		if state == "SOLD" {
			sold++
		} else {
			held++
		}
		if n < 1 || int(n) > snap.Capacity || !bits.Test(uint(n-1)) {
			missing++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit claims of %s: %w", productID, err)
	}

	var out []Violation
	add := func(rule, format string, args ...any) {
		out = append(out, Violation{ProductID: productID, Rule: rule, Detail: fmt.Sprintf(format, args...)})
	}
	pop := int(bits.Count())
	if pop != snap.Held+snap.Sold {
		add("bitmap_counters", "popcount %d != held %d + sold %d", pop, snap.Held, snap.Sold)
	}
	if claimed != snap.Held+snap.Sold {
		add("claims_counters", "claims rows %d != held %d + sold %d", claimed, snap.Held, snap.Sold)
	}
	if held != snap.Held || sold != snap.Sold {
		add("claims_states", "claims held %d sold %d, counters held %d sold %d", held, sold, snap.Held, snap.Sold)
	}
	if snap.Available != snap.Capacity-snap.Held-snap.Sold-snap.Offered {
		add("available", "available %d != capacity %d - held %d - sold %d - offered %d",
			snap.Available, snap.Capacity, snap.Held, snap.Sold, snap.Offered)
	}
	withheld, err := waitlist.Withheld(ctx, tx, productID)
	if err != nil {
		return nil, err
	}
	if withheld != snap.Offered {
		add("offered", "offered %d != %d numbers in outstanding offers", snap.Offered, withheld)
	}
	if len(snap.Pages) != inventory.PageCount(snap.Capacity) {
		add("pages", "%d bitmap pages for %d numbers, want %d", len(snap.Pages), snap.Capacity, inventory.PageCount(snap.Capacity))
	}
	for i, p := range snap.Pages {
		want := (p.Last(snap.Capacity) - p.First() + 8) / 8
		if p.Index != i || len(p.Bits) != want {
			add("pages", "page %d (at %d) has %d bytes, want %d", p.Index, i, len(p.Bits), want)
		} else if n := int(inventory.Decode(p.Bits, len(p.Bits)*8).Count()); n != p.Taken {
			add("pages", "page %d counts %d taken, its bits %d", p.Index, p.Taken, n)
		}
	}
	if missing > 0 {
		add("claims_without_bit", "%d claimed numbers have a clear bit", missing)
	}
	return out, nil
}

// Check is a further audit of one product, run in the same snapshot as
// Audit by the owner of other tables (checkout's tickets and money).
type Check func(ctx context.Context, tx pgx.Tx, productID uuid.UUID) ([]Violation, error)

// AuditAll audits every product, each in its own repeatable-read snapshot so
// that concurrent claims never show up as false alarms, with Audit and then
// each of checks.
func AuditAll(ctx context.Context, db *pgxpool.Pool, checks ...Check) ([]Violation, int, error) {
	ids, err := inventory.Products(ctx, db)
	if err != nil {
		return nil, 0, err
	}
	var out []Violation
	for _, id := range ids {
		err := pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error {
				for _, check := range append([]Check{Audit}, checks...) {
					v, err := check(ctx, tx, id)
					if err != nil {
						return err
					}
					out = append(out, v...)
				}
				return nil
			})
		if err != nil {
			return nil, 0, err
		}
	}
	return out, len(ids), nil
}
