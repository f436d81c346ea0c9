// Package codes owns the codes a tenant hands out: lists of discount codes
// with their terms, and each code's uses. A use is taken in the order's
// transaction (checkout calls Reserve there), so a code's last use cannot
// be taken twice; it is final when the order is confirmed and given back
// when the order fails for good or its hold runs out.
package codes

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Kinds of list.
const (
	KindDiscount = "DISCOUNT" // money off an order's tickets
	KindPresale  = "PRESALE"  // a window before the general sale, open to the codes' holders
)

// List is a list of codes with its terms and how it has been used.
type List struct {
	ID             uuid.UUID  `json:"id"`
	Kind           string     `json:"kind" enum:"DISCOUNT,PRESALE"`
	Name           string     `json:"name"`
	ProductID      *uuid.UUID `json:"productId,omitempty" doc:"The product its codes are for; absent: every product of the tenant"`
	PercentOff     *int       `json:"percentOff,omitempty" doc:"Percent off the tickets' prices (fees are not discounted)"`
	AmountOffCents *int64     `json:"amountOffCents,omitempty" doc:"Amount off an order's tickets, at most their prices"`
	UsesPerCode    int        `json:"usesPerCode" doc:"Orders one discount code may be used for; buyers one presale code lets in"`
	PerBuyer       int        `json:"perBuyer" doc:"Orders one buyer may use the list's codes for"`
	ValidFrom      *time.Time `json:"validFrom,omitempty" doc:"A presale's window opens"`
	ValidUntil     *time.Time `json:"validUntil,omitempty" doc:"A presale's window closes"`
	CreatedAt      time.Time  `json:"createdAt"`
	Codes          int        `json:"codes" doc:"How many codes the list has"`
	Used           int        `json:"used" doc:"Uses final: confirmed orders; for a presale, buyers let in"`
	Reserved       int        `json:"reserved" doc:"Uses held by orders being paid"`
	DiscountCents  int64      `json:"discountCents" doc:"What the final uses took off"`
}

// Terms are what a new list is.
type Terms struct {
	Kind           string // KindDiscount (the default) or KindPresale
	Name           string
	ProductID      *uuid.UUID
	PercentOff     *int
	AmountOffCents *int64
	UsesPerCode    int
	PerBuyer       int
	ValidFrom      *time.Time
	ValidUntil     *time.Time
}

// ErrCodeTaken is returned when a code to add exists already in the
// tenant's codes.
var ErrCodeTaken = errors.New("code already exists")

// ErrBadCode is returned for a code that is not 3 to 40 letters, digits
// or dashes.
var ErrBadCode = errors.New("a code is 3 to 40 letters, digits or dashes")

var codeShape = regexp.MustCompile(`^[A-Z0-9-]{3,40}$`)

// Normalize is a code as stored: upper case, without spaces around it.
func Normalize(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// alphabet has no letters that read as digits (O, I, L) nor digits that
// read as letters (0, 1): codes are typed from paper too.
const alphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// Generate makes n random codes of 8 characters, as XXXX-XXXX.
func Generate(n int) []string {
	out := make([]string, n)
	b := make([]byte, 8)
	for i := range out {
		_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
		c := make([]byte, 0, 9)
		for j, x := range b {
			if j == 4 {
				c = append(c, '-')
			}
			c = append(c, alphabet[int(x)%len(alphabet)])
		}
		out[i] = string(c)
	}
	return out
}

// CreateList creates a list with its first codes, in tx.
func CreateList(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, t Terms, codes []string) (uuid.UUID, error) {
	id := db.NewID()
	_, err := tx.Exec(ctx, `
		INSERT INTO code_lists (id, tenant_id, kind, name, product_id, percent_off, amount_off_cents, uses_per_code,
		                        per_buyer, valid_from, valid_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		id, tenantID, cmp.Or(t.Kind, KindDiscount), t.Name, t.ProductID, t.PercentOff, t.AmountOffCents, t.UsesPerCode, t.PerBuyer, t.ValidFrom, t.ValidUntil)
	if err != nil {
		return uuid.Nil, fmt.Errorf("create code list: %w", err)
	}
	return id, AddCodes(ctx, tx, tenantID, id, codes)
}

// AddCodes adds codes to a list, in tx: all of them, or none when one is
// malformed or exists already (ErrCodeTaken names it).
func AddCodes(ctx context.Context, tx pgx.Tx, tenantID, listID uuid.UUID, codes []string) error {
	norm := make([]string, len(codes))
	for i, c := range codes {
		norm[i] = Normalize(c)
		if !codeShape.MatchString(norm[i]) {
			return fmt.Errorf("%w: %q", ErrBadCode, c)
		}
	}
	var taken *string
	err := tx.QueryRow(ctx, `
		WITH wanted AS (SELECT DISTINCT c FROM unnest($3::text[]) AS c),
		     added AS (INSERT INTO codes (tenant_id, code, list_id) SELECT $1, c, $2 FROM wanted
		               ON CONFLICT DO NOTHING RETURNING code)
		SELECT min(c) FROM wanted WHERE c NOT IN (SELECT code FROM added)`, tenantID, listID, norm).Scan(&taken)
	if err != nil {
		return fmt.Errorf("add codes: %w", err)
	}
	if taken != nil {
		return fmt.Errorf("%w: %s", ErrCodeTaken, *taken)
	}
	return nil
}

// live is when a use counts: confirmed, or held by an order still being
// paid.
const live = `(u.state = 'FINAL' OR (u.state = 'RESERVED' AND u.reserved_until > now()))`

const listColumns = `l.id, l.kind, l.name, l.product_id, l.percent_off, l.amount_off_cents, l.uses_per_code, l.per_buyer,
	l.valid_from, l.valid_until, l.created_at,
	(SELECT count(*) FROM codes c WHERE c.list_id = l.id),
	(SELECT count(*) FROM code_uses u WHERE u.list_id = l.id AND u.state = 'FINAL')
	+ (SELECT count(*) FROM presale_uses p WHERE p.list_id = l.id),
	(SELECT count(*) FROM code_uses u WHERE u.list_id = l.id AND u.state = 'RESERVED' AND u.reserved_until > now()),
	(SELECT coalesce(sum(u.discount_cents), 0) FROM code_uses u WHERE u.list_id = l.id AND u.state = 'FINAL')`

func scanList(row pgx.Row) (*List, error) {
	var l List
	err := row.Scan(&l.ID, &l.Kind, &l.Name, &l.ProductID, &l.PercentOff, &l.AmountOffCents, &l.UsesPerCode, &l.PerBuyer,
		&l.ValidFrom, &l.ValidUntil, &l.CreatedAt, &l.Codes, &l.Used, &l.Reserved, &l.DiscountCents)
	return &l, err
}

// Lists returns the tenant's lists, newest first, with their usage.
func Lists(ctx context.Context, q db.DBTX, tenantID uuid.UUID) ([]*List, error) {
	rows, err := q.Query(ctx, `SELECT `+listColumns+` FROM code_lists l WHERE l.tenant_id = $1 ORDER BY l.created_at DESC`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("code lists: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*List, error) { return scanList(r) })
	if err != nil {
		return nil, fmt.Errorf("code lists: %w", err)
	}
	return out, nil
}

// Get returns one of the tenant's lists.
func Get(ctx context.Context, q db.DBTX, tenantID, listID uuid.UUID) (*List, error) {
	l, err := scanList(q.QueryRow(ctx, `SELECT `+listColumns+` FROM code_lists l WHERE l.id = $1 AND l.tenant_id = $2`,
		listID, tenantID))
	if err != nil {
		return nil, fmt.Errorf("code list %s: %w", listID, db.NotFound(err))
	}
	return l, nil
}

// Usage is one code and how it has been used.
type Usage struct {
	Code     string `json:"code"`
	Used     int    `json:"used"`
	Reserved int    `json:"reserved"`
}

// CodesOf returns a list's codes with their uses, in code order.
func CodesOf(ctx context.Context, q db.DBTX, listID uuid.UUID) ([]Usage, error) {
	rows, err := q.Query(ctx, `
		SELECT c.code,
		       count(u.id) FILTER (WHERE u.state = 'FINAL')
		       + (SELECT count(*) FROM presale_uses p WHERE p.tenant_id = c.tenant_id AND p.code = c.code),
		       count(u.id) FILTER (WHERE u.state = 'RESERVED' AND u.reserved_until > now())
		FROM codes c LEFT JOIN code_uses u ON u.tenant_id = c.tenant_id AND u.code = c.code
		WHERE c.list_id = $1 GROUP BY c.tenant_id, c.code ORDER BY c.code`, listID)
	if err != nil {
		return nil, fmt.Errorf("codes of %s: %w", listID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Usage])
	if err != nil {
		return nil, fmt.Errorf("codes of %s: %w", listID, err)
	}
	return out, nil
}

// DiscountsOf returns what confirmed orders' codes took off a product's
// tickets (the sales report shows it).
func DiscountsOf(ctx context.Context, q db.DBTX, productID uuid.UUID) (uses int, cents int64, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), coalesce(sum(discount_cents), 0) FROM code_uses
		WHERE product_id = $1 AND state = 'FINAL'`, productID).Scan(&uses, &cents)
	if err != nil {
		return 0, 0, fmt.Errorf("discounts of %s: %w", productID, err)
	}
	return uses, cents, nil
}
