package product

// What other packages may read of a product row inside their own
// transactions (the Store serves whole products to the API).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/tenant"
)

// Price is a product's unit price.
type Price struct {
	Cents    int64
	Currency string
}

// Quote is what some numbers cost together, each at its seat's price
// level or the product's price plus the booking fee, and how people name
// them in the store's language ("North · Row A · Seat 7"; "Number 7" on a
// numbered product), in the numbers' order.
type Quote struct {
	Price // fees included
	Seats []string
	// Each is each number's price, fee excluded, in the numbers' order.
	Each []int64
	// Fee is the booking fee per ticket, FeeCents all the numbers' fees.
	Fee, FeeCents int64
}

// QuoteFor reads the product's price, fee and seat map once for all.
func QuoteFor(ctx context.Context, q db.DBTX, id uuid.UUID, numbers []int32) (Quote, error) {
	var base Price
	var fee int64
	var layout []byte
	var lang string
	err := q.QueryRow(ctx, `SELECT price_cents, fee_cents, currency, layout, `+tenant.StoreLanguageSQL("tenant_id")+`
		FROM products WHERE id = $1`, id).
		Scan(&base.Cents, &fee, &base.Currency, &layout, &lang)
	if err != nil {
		return Quote{}, fmt.Errorf("price of product %s: %w", id, db.NotFound(err))
	}
	l, err := decodeLayout(layout)
	if err != nil {
		return Quote{}, err
	}
	return quote(l, base, fee, numbers, SeatWordsIn(lang)), nil
}

// Quote prices numbers of p from what p carries (a cached product: its
// prices and map cannot change once a number is held).
func (p *Product) Quote(numbers []int32) Quote {
	return quote(p.Layout, Price{Cents: p.PriceCents, Currency: p.Currency}, p.FeeCents, numbers, SeatWordsIn(p.Language))
}

// quote is the one pricing rule: each number at its seat's level or the
// base price, plus the fee.
func quote(l *Layout, base Price, fee int64, numbers []int32, w SeatWords) Quote {
	out := Quote{Price: Price{Currency: base.Currency}, Seats: l.LabelsIn(numbers, w), Fee: fee, FeeCents: fee * int64(len(numbers))}
	for _, n := range numbers {
		p := l.Price(int(n), base.Cents)
		out.Each = append(out.Each, p)
		out.Cents += p + fee
	}
	return out
}

// decodeLayout reads a layout column (nil for numbered products), numbered.
func decodeLayout(b []byte) (*Layout, error) {
	if b == nil {
		return nil, nil
	}
	l := &Layout{}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("decode layout: %w", err)
	}
	l.Number()
	return l, nil
}

// NameOf returns a product's name.
func NameOf(ctx context.Context, q db.DBTX, id uuid.UUID) (string, error) {
	var name string
	if err := q.QueryRow(ctx, `SELECT name FROM products WHERE id = $1`, id).Scan(&name); err != nil {
		return "", fmt.Errorf("name of product %s: %w", id, db.NotFound(err))
	}
	return name, nil
}

// RefundPolicyOf returns whether a product's refunded seats go back on
// sale (Resell) or stay off it (Keep).
func RefundPolicyOf(ctx context.Context, q db.DBTX, id uuid.UUID) (string, error) {
	var policy string
	if err := q.QueryRow(ctx, `SELECT refund_policy FROM products WHERE id = $1`, id).Scan(&policy); err != nil {
		return "", fmt.Errorf("refund policy of product %s: %w", id, db.NotFound(err))
	}
	return policy, nil
}

// Cancellation is a product's policy for shoppers cancelling their own
// orders: until HoursBefore hours before doors (or the start), for FeeCents
// per ticket.
type Cancellation struct {
	HoursBefore int   `json:"hoursBefore" minimum:"0" maximum:"8760"`
	FeeCents    int64 `json:"feeCents" minimum:"0" maximum:"100000000" doc:"Kept per ticket"`
	// Off, in a change, turns shoppers' cancellation off.
	Off bool `json:"off,omitempty" doc:"In a change: shoppers may no longer cancel"`
}

func (c *Cancellation) hours() *int {
	if c == nil || c.Off {
		return nil
	}
	return &c.HoursBefore
}

func (c *Cancellation) fee() int64 {
	if c == nil || c.Off {
		return 0
	}
	return c.FeeCents
}

// CancellationTerms are whether a shopper may cancel an order of the
// product now (the database's clock), and the fee per ticket.
type CancellationTerms struct {
	Open     bool
	Deadline *time.Time
	FeeCents int64
}

// Until is when shoppers stop being able to cancel their orders of a date:
// HoursBefore hours before its doors (or its start). Nil when they may not:
// the policy is off, or the date is not set.
func (c *Cancellation) Until(d Dates) *time.Time {
	return hoursBefore(d, c.hours())
}

// hoursBefore is the moment hours before a date's doors, or its start when
// doors are not set: where shoppers' cancellations and transfers close. Nil
// without hours or a date.
func hoursBefore(d Dates, hours *int) *time.Time {
	at := cmp.Or(d.DoorsAt, d.StartsAt)
	if hours == nil || at == nil {
		return nil
	}
	t := at.Add(-time.Duration(*hours) * time.Hour)
	return &t
}

// CancellationOf reads a product's cancellation terms: closed when the
// policy is off or no date is set.
func CancellationOf(ctx context.Context, q db.DBTX, id uuid.UUID) (CancellationTerms, error) {
	var d Dates
	var hours *int
	var now time.Time
	var t CancellationTerms
	err := q.QueryRow(ctx, `SELECT doors_at, starts_at, cancel_hours_before, cancel_fee_cents, now() FROM products WHERE id = $1`,
		id).Scan(&d.DoorsAt, &d.StartsAt, &hours, &t.FeeCents, &now)
	if err != nil {
		return t, fmt.Errorf("cancellation terms of %s: %w", id, db.NotFound(err))
	}
	t.Deadline = hoursBefore(d, hours)
	t.Open = t.Deadline != nil && now.Before(*t.Deadline)
	return t, nil
}

// Transfers is a product's policy for ticket holders handing a ticket to
// someone else: until HoursBefore hours before doors (or the start), each
// seat's ticket at most MaxTimes times.
type Transfers struct {
	HoursBefore int `json:"hoursBefore" minimum:"0" maximum:"8760"`
	MaxTimes    int `json:"maxTimes,omitempty" minimum:"0" maximum:"10" doc:"How many times a seat's ticket may change hands (default 1)"`
	// Off, in a change, turns transfers off.
	Off bool `json:"off,omitempty" doc:"In a change: tickets may no longer be transferred"`
}

func (t *Transfers) hours() *int {
	if t == nil || t.Off {
		return nil
	}
	return &t.HoursBefore
}

// Until is when a date's tickets stop being their holders' to give away:
// HoursBefore hours before its doors (or its start); nil without a date.
func (t *Transfers) Until(d Dates) *time.Time {
	return hoursBefore(d, t.hours())
}

func (t *Transfers) max() int {
	if t == nil || t.Off || t.MaxTimes == 0 {
		return 1
	}
	return t.MaxTimes
}

// TransferTerms are whether a ticket of the product may change hands now
// (the database's clock), how many times in all, and the buyer limit the
// receiver is held to.
type TransferTerms struct {
	Open     bool
	Deadline *time.Time
	MaxTimes int
	PerBuyer int
}

// TransferTermsOf reads a product's transfer terms: closed when the policy
// is off or the date cancelled; with no date set, open without a deadline.
func TransferTermsOf(ctx context.Context, q db.DBTX, id uuid.UUID) (TransferTerms, error) {
	var d Dates
	var hours *int
	var publication string
	var now time.Time
	var t TransferTerms
	err := q.QueryRow(ctx, `
		SELECT doors_at, starts_at, transfer_hours_before, transfer_max, per_buyer_limit, publication, now()
		FROM products WHERE id = $1`, id).Scan(&d.DoorsAt, &d.StartsAt, &hours, &t.MaxTimes, &t.PerBuyer, &publication, &now)
	if err != nil {
		return t, fmt.Errorf("transfer terms of %s: %w", id, db.NotFound(err))
	}
	t.Deadline = hoursBefore(d, hours)
	t.Open = hours != nil && publication != Cancelled && (t.Deadline == nil || now.Before(*t.Deadline))
	return t, nil
}

// Terms are what a claim transaction decides by, read in it with the
// database's clock.
type Terms struct {
	Capacity    int
	PerBuyer    int
	HoldSeconds int
	// OnSale is true once on_sale_at has passed and the product is
	// PUBLISHED (a DRAFT is not on sale yet, a CLOSED one no longer).
	OnSale bool
	// Published is true while the product is PUBLISHED (on sale or not
	// yet): a presale may let its code holders in before on_sale_at.
	Published bool
	// Closed is true once the tenant has closed the sale, or its
	// off-sale time has passed.
	Closed bool
	// Cancelled is true once the date is cancelled.
	Cancelled bool
	// LayoutVersion names the seat map the claim may have cached.
	LayoutVersion int
	// Now is the transaction's now(), so hold expiry follows the database
	// clock that the sweeper compares with.
	Now time.Time
}

// TermsOf reads a product's terms.
func TermsOf(ctx context.Context, q db.DBTX, id uuid.UUID) (Terms, error) {
	var t Terms
	err := q.QueryRow(ctx, `
		SELECT capacity, per_buyer_limit, hold_seconds, on_sale_at <= now() AND publication = 'PUBLISHED',
		       publication = 'CLOSED' OR coalesce(off_sale_at <= now(), false), publication = 'CANCELLED',
		       layout_version, now(), publication = 'PUBLISHED'
		FROM products WHERE id = $1`, id).Scan(&t.Capacity, &t.PerBuyer, &t.HoldSeconds, &t.OnSale, &t.Closed,
		&t.Cancelled, &t.LayoutVersion, &t.Now, &t.Published)
	if err != nil {
		return t, fmt.Errorf("read product %s: %w", id, db.NotFound(err))
	}
	return t, nil
}

// IDsOf returns the ids of a tenant's products.
func IDsOf(ctx context.Context, q db.DBTX, tenantID uuid.UUID) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT id FROM products WHERE tenant_id = $1`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("products of tenant %s: %w", tenantID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("products of tenant %s: %w", tenantID, err)
	}
	return ids, nil
}

// IsRehearsal reports whether a product is a rehearsal's shadow: its
// payments go to the test-mode provider.
func IsRehearsal(ctx context.Context, q db.DBTX, id uuid.UUID) (bool, error) {
	var of *uuid.UUID
	if err := q.QueryRow(ctx, `SELECT rehearsal_of FROM products WHERE id = $1`, id).Scan(&of); err != nil {
		return false, fmt.Errorf("product %s: %w", id, db.NotFound(err))
	}
	return of != nil, nil
}

// LayoutOf reads a product's seat map (nil for numbered products) and its
// version.
func LayoutOf(ctx context.Context, q db.DBTX, id uuid.UUID) (*Layout, int, error) {
	var layout []byte
	var version int
	if err := q.QueryRow(ctx, `SELECT layout, layout_version FROM products WHERE id = $1`, id).Scan(&layout, &version); err != nil {
		return nil, 0, fmt.Errorf("layout of product %s: %w", id, db.NotFound(err))
	}
	l, err := decodeLayout(layout)
	return l, version, err
}

// TenantOf returns the tenant a product belongs to.
func TenantOf(ctx context.Context, q db.DBTX, id uuid.UUID) (uuid.UUID, error) {
	var tenantID uuid.UUID
	if err := q.QueryRow(ctx, `SELECT tenant_id FROM products WHERE id = $1`, id).Scan(&tenantID); err != nil {
		return uuid.Nil, fmt.Errorf("tenant of product %s: %w", id, db.NotFound(err))
	}
	return tenantID, nil
}
