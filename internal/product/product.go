// Package product holds the numbered things a tenant sells: seated events and
// numbered items, with their price, limits, hold time and on-sale time. It
// owns the products table; rows.go is what other packages may read of it.
package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/tenant"
	"boxoffice/internal/waitingroom"
)

// Kinds of product.
const (
	KindSeated   = "seated"
	KindNumbered = "numbered"
)

// Defaults and bounds for new products.
const (
	DefaultPerBuyerLimit = 6
	DefaultHoldSeconds   = 480
	MaxCapacity          = 10_000_000
)

// Publication states: a DRAFT is the tenant's only; a PUBLISHED product is
// in the store and on sale from its on-sale time; a CLOSED one is shown and
// sells nothing more; a CANCELLED date is shown as cancelled, sells nothing
// and admits no one (its orders are refunded).
const (
	Draft     = "DRAFT"
	Published = "PUBLISHED"
	Closed    = "CLOSED"
	Cancelled = "CANCELLED"
)

// Refund policies: whether a refunded seat goes back on sale.
const (
	Resell = "resell"
	Keep   = "keep"
)

// ErrSlugTaken is returned when the tenant already has a product with the slug.
var ErrSlugTaken = errors.New("product slug already taken")

// ErrLayoutKind is returned for a layout on a numbered product or a seated
// product without one.
var ErrLayoutKind = errors.New("seated products need a layout; numbered products take none")

// Product is one sale.
type Product struct {
	ID            uuid.UUID `json:"id"`
	TenantID      uuid.UUID `json:"tenantId"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Description   string    `json:"description"`
	ImageURL      string    `json:"imageUrl"`
	Kind          string    `json:"kind"`
	Capacity      int       `json:"capacity"`
	Layout        *Layout   `json:"layout,omitempty"`
	LayoutVersion int       `json:"layoutVersion" doc:"Grows each time the seat map is replaced (only before the first hold)"`
	PriceCents    int64     `json:"priceCents"`
	FeeCents      int64     `json:"feeCents" doc:"Booking fee per ticket, on top of its price"`
	// Language is the tenant's store language: what seats are named in.
	Language      string                `json:"-"`
	Currency      string                `json:"currency"`
	PerBuyerLimit int                   `json:"perBuyerLimit"`
	HoldSeconds   int                   `json:"holdSeconds"`
	OnSaleAt      time.Time             `json:"onSaleAt"`
	WaitingRoom   *waitingroom.Settings `json:"waitingRoom,omitempty"`
	Publication   string                `json:"publication" enum:"DRAFT,PUBLISHED,CLOSED,CANCELLED"`
	CancelledAt   *time.Time            `json:"cancelledAt,omitempty" doc:"When the date was cancelled (publication CANCELLED)"`
	CancelReason  string                `json:"cancelReason,omitempty" doc:"Why, as buyers were told"`
	RefundPolicy  string                `json:"refundPolicy" enum:"resell,keep" doc:"Whether a refunded seat goes back on sale (resell) or stays off sale (keep)"`
	OffSaleAt     *time.Time            `json:"offSaleAt,omitempty" doc:"When the sale ends (absent: when the tenant closes it)"`
	Cancellation  *Cancellation         `json:"shopperCancellation,omitempty" doc:"Whether and until when shoppers may cancel their own orders, and the fee (absent: they may not)"`
	Transfers     *Transfers            `json:"transfers,omitempty" doc:"Whether and until when ticket holders may hand tickets to someone else, and how many times (absent: they may not)"`
	EventID       uuid.UUID             `json:"eventId" doc:"The event this is a date of; description and imageUrl are the event's"`
	Event         *Event                `json:"event"`
	Dates
	CreatedAt   time.Time  `json:"createdAt"`
	RehearsalOf *uuid.UUID `json:"rehearsalOf,omitempty" doc:"Set on a rehearsal's shadow copy: the product it rehearses"`
}

// HiddenFromBuyers reports whether buyers may not see the product: a
// draft, or a rehearsal's shadow (on sale to synthetic buyers only).
func (p *Product) HiddenFromBuyers() bool { return p.Publication == Draft || p.RehearsalOf != nil }

// CreateParams describes a new product; zero values take the defaults.
type CreateParams struct {
	TenantID      uuid.UUID
	Slug          string
	Name          string
	Description   string
	ImageURL      string
	Kind          string
	Capacity      int
	Layout        *Layout
	PriceCents    int64
	FeeCents      int64
	Currency      string
	PerBuyerLimit int
	HoldSeconds   int
	OnSaleAt      time.Time
	WaitingRoom   *waitingroom.Settings
	// Publication is PUBLISHED (the default) or DRAFT.
	Publication string
	// RefundPolicy is Resell (the default) or Keep.
	RefundPolicy string
	// EventID makes the product a date of an existing event; without it
	// the product gets an event of its own, from Event when set, else from
	// its name, slug, description and image.
	EventID *uuid.UUID
	Event   *EventParams
	Dates
	OffSaleAt *time.Time
	// Cancellation lets shoppers cancel their own orders (nil: never).
	Cancellation *Cancellation
	// Transfers lets ticket holders hand tickets on (nil: never).
	Transfers *Transfers
	// RehearsalOf makes a rehearsal's shadow of that product: a draft,
	// outside the tenant's quota and lists.
	RehearsalOf *uuid.UUID
}

// Store reads and writes products.
type Store struct {
	pool  *pgxpool.Pool
	quota tenant.Quota
}

// NewStore returns a Store on pool; quota is what tenants without one of
// their own may create (BOXOFFICE_TENANT_MAX_PRODUCTS and _CAPACITY).
func NewStore(pool *pgxpool.Pool, quota tenant.Quota) *Store { return &Store{pool: pool, quota: quota} }

// QuotaError is returned when a product would take a tenant over its quota.
type QuotaError struct {
	Quota          tenant.Quota
	Products       int
	Capacity       int64
	AddingCapacity int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("tenant quota exceeded: %d of %d products, %d + %d of %d numbers",
		e.Products, e.Quota.Products, e.Capacity, e.AddingCapacity, e.Quota.Capacity)
}

// Create inserts the product and its empty inventory row in one transaction.
func (s *Store) Create(ctx context.Context, p CreateParams) (*Product, error) {
	if p.PerBuyerLimit == 0 {
		p.PerBuyerLimit = DefaultPerBuyerLimit
	}
	if p.HoldSeconds == 0 {
		p.HoldSeconds = DefaultHoldSeconds
	}
	if p.RefundPolicy == "" {
		p.RefundPolicy = Resell
	}
	switch p.Publication {
	case "":
		p.Publication = Published
	case Published, Draft:
	default:
		return nil, ErrPublication
	}
	switch {
	case p.Kind == KindSeated && p.Layout == nil, p.Kind == KindNumbered && p.Layout != nil:
		return nil, ErrLayoutKind
	case p.Layout != nil:
		if err := p.Layout.Validate(p.Capacity); err != nil {
			return nil, err
		}
	}
	opens := p.OnSaleAt
	if opens.IsZero() {
		opens = time.Now()
	}
	if err := checkDates(p.Dates, opens, p.OffSaleAt); err != nil {
		return nil, err
	}
	var room []byte
	if p.WaitingRoom != nil && p.WaitingRoom.Enabled {
		room, _ = json.Marshal(p.WaitingRoom)
	}
	var layout []byte
	if p.Layout != nil {
		var err error
		if layout, err = json.Marshal(p.Layout); err != nil {
			return nil, fmt.Errorf("encode layout: %w", err)
		}
	}
	id := uuid.New()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A rehearsal's shadow counts too while it exists: its numbers
		// are as real to the database as a sale's.
		if err := s.checkQuota(ctx, tx, p); err != nil {
			return err
		}
		var onSale any = p.OnSaleAt
		if p.OnSaleAt.IsZero() {
			onSale = nil
		}
		eventID, err := s.eventFor(ctx, tx, p)
		if err != nil {
			return err
		}
		var opensAt time.Time
		err = tx.QueryRow(ctx, `
			INSERT INTO products (id, tenant_id, slug, name, event_id, kind, capacity, layout,
			                      price_cents, currency, per_buyer_limit, hold_seconds, on_sale_at, waiting_room, publication,
			                      rehearsal_of, refund_policy, starts_at, doors_at, ends_at, off_sale_at,
			                      cancel_hours_before, cancel_fee_cents, transfer_hours_before, transfer_max, fee_cents)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, coalesce($13, now()), $14, $15, $16, $17, $18, $19,
			        $20, $21, $22, $23, $24, $25, $26)
			RETURNING on_sale_at`,
			id, p.TenantID, p.Slug, p.Name, eventID, p.Kind, p.Capacity, layout,
			p.PriceCents, p.Currency, p.PerBuyerLimit, p.HoldSeconds, onSale, room, p.Publication, p.RehearsalOf,
			p.RefundPolicy, p.StartsAt, p.DoorsAt, p.EndsAt, p.OffSaleAt, p.Cancellation.hours(), p.Cancellation.fee(),
			p.Transfers.hours(), p.Transfers.max(), p.FeeCents).Scan(&opensAt)
		if db.IsUniqueViolation(err, "products_tenant_id_slug_key") {
			return ErrSlugTaken
		}
		if err != nil {
			return fmt.Errorf("insert product: %w", err)
		}
		if room != nil {
			if err := waitingroom.Create(ctx, tx, waitingroom.Room{ProductID: id, TenantID: p.TenantID,
				OpensAt: opensAt, PerBuyerLimit: p.PerBuyerLimit, Settings: *p.WaitingRoom}); err != nil {
				return err
			}
		}
		return inventory.Create(ctx, tx, id, p.Capacity)
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, p.TenantID, id)
}

// Reschedule moves the on-sale time of a product that is not on sale yet
// (a time in the past opens it at once), and its waiting room's opening
// with it.
func (s *Store) Reschedule(ctx context.Context, tenantID, id uuid.UUID, onSaleAt time.Time) (*Product, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var onSale, room bool
		err := tx.QueryRow(ctx, `
			SELECT on_sale_at <= now(), waiting_room IS NOT NULL FROM products
			WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID).Scan(&onSale, &room)
		if err != nil {
			return fmt.Errorf("product %s: %w", id, db.NotFound(err))
		}
		if onSale {
			return ErrAlreadyOnSale
		}
		if _, err := tx.Exec(ctx, `UPDATE products SET on_sale_at = $2 WHERE id = $1`, id, onSaleAt); err != nil {
			return fmt.Errorf("reschedule product %s: %w", id, err)
		}
		if room {
			return waitingroom.Reschedule(ctx, tx, id, onSaleAt)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, tenantID, id)
}

// eventFor is the event a new product is a date of: the one named (the
// tenant's own), its rehearsal's product's, or a new one of its own.
func (s *Store) eventFor(ctx context.Context, tx pgx.Tx, p CreateParams) (uuid.UUID, error) {
	var id uuid.UUID
	switch {
	case p.EventID != nil:
		err := tx.QueryRow(ctx, `SELECT id FROM events WHERE id = $1 AND tenant_id = $2`, *p.EventID, p.TenantID).Scan(&id)
		if err != nil {
			return uuid.Nil, fmt.Errorf("event %s: %w", *p.EventID, db.NotFound(err))
		}
		return id, nil
	case p.RehearsalOf != nil:
		err := tx.QueryRow(ctx, `SELECT event_id FROM products WHERE id = $1`, *p.RehearsalOf).Scan(&id)
		if err != nil {
			return uuid.Nil, fmt.Errorf("rehearsed product %s: %w", *p.RehearsalOf, db.NotFound(err))
		}
		return id, nil
	case p.Event != nil:
		return createEvent(ctx, tx, p.TenantID, *p.Event)
	}
	// An event of its own, named as the product. The product's slug is
	// unique among products, not events: an event made by hand may have
	// it already.
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = $1 AND slug = $2)`,
		p.TenantID, p.Slug).Scan(&taken); err != nil {
		return uuid.Nil, fmt.Errorf("event slug: %w", err)
	}
	slug := p.Slug
	if taken {
		slug += "-" + db.ShortRef(db.NewID())
	}
	return createEvent(ctx, tx, p.TenantID, EventParams{Slug: slug, Name: p.Name, Description: p.Description, ImageURL: p.ImageURL})
}

// checkDates keeps a date's times in order.
func checkDates(d Dates, onSale time.Time, offSale *time.Time) error {
	switch {
	case d.DoorsAt != nil && (d.StartsAt == nil || d.DoorsAt.After(*d.StartsAt)),
		d.EndsAt != nil && (d.StartsAt == nil || !d.EndsAt.After(*d.StartsAt)),
		offSale != nil && !offSale.After(onSale):
		return ErrDates
	}
	return nil
}

// checkQuota refuses a product that would take its tenant over its quota.
func (s *Store) checkQuota(ctx context.Context, tx pgx.Tx, p CreateParams) error {
	q, err := tenant.LockQuota(ctx, tx, p.TenantID, s.quota)
	if err != nil {
		return err
	}
	var n int
	var capacity int64
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(capacity), 0) FROM products WHERE tenant_id = $1`,
		p.TenantID).Scan(&n, &capacity); err != nil {
		return fmt.Errorf("count tenant's products: %w", err)
	}
	if n+1 > q.Products || capacity+int64(p.Capacity) > q.Capacity {
		return &QuotaError{Quota: q, Products: n, Capacity: capacity, AddingCapacity: p.Capacity}
	}
	return nil
}

// selectProduct reads products with their event: a derived table named
// products, so callers filter and order by the products' own columns.
var selectProduct = `
	SELECT id, tenant_id, slug, name, description, image_url, kind, capacity, layout, price_cents, currency,
	       per_buyer_limit, hold_seconds, on_sale_at, publication, created_at, waiting_room, layout_version, rehearsal_of,
	       refund_policy, off_sale_at, starts_at, doors_at, ends_at, cancel_hours_before, cancel_fee_cents,
	       event_id, event_slug, event_name, entry_note, venue_name, venue_address, venue_map_url, time_zone,
	       cancelled_at, coalesce(cancel_reason, ''), transfer_hours_before, transfer_max, fee_cents, language
	FROM (SELECT p.*, e.description, e.image_url, e.slug AS event_slug, e.name AS event_name, e.entry_note, e.venue_name,
	             e.venue_address, e.venue_map_url, e.time_zone, ` + tenant.StoreLanguageSQL("p.tenant_id") + ` AS language
	      FROM products p JOIN events e ON e.id = p.event_id) products`

func scanProduct(row pgx.Row) (*Product, error) {
	var p Product
	var e Event
	var cancelHours, transferHours *int
	var cancelFee int64
	var transferMax int
	var layout, room []byte
	err := row.Scan(&p.ID, &p.TenantID, &p.Slug, &p.Name, &p.Description, &p.ImageURL, &p.Kind, &p.Capacity, &layout,
		&p.PriceCents, &p.Currency, &p.PerBuyerLimit, &p.HoldSeconds, &p.OnSaleAt, &p.Publication, &p.CreatedAt, &room, &p.LayoutVersion, &p.RehearsalOf,
		&p.RefundPolicy, &p.OffSaleAt, &p.StartsAt, &p.DoorsAt, &p.EndsAt, &cancelHours, &cancelFee,
		&e.ID, &e.Slug, &e.Name, &e.EntryNote, &e.Venue.Name, &e.Venue.Address, &e.Venue.MapURL, &e.TimeZone,
		&p.CancelledAt, &p.CancelReason, &transferHours, &transferMax, &p.FeeCents, &p.Language)
	if err != nil {
		return nil, err
	}
	e.Description, e.ImageURL = p.Description, p.ImageURL
	p.EventID, p.Event = e.ID, &e
	if cancelHours != nil {
		p.Cancellation = &Cancellation{HoursBefore: *cancelHours, FeeCents: cancelFee}
	}
	if transferHours != nil {
		p.Transfers = &Transfers{HoursBefore: *transferHours, MaxTimes: transferMax}
	}
	if room != nil {
		p.WaitingRoom = &waitingroom.Settings{}
		if err := json.Unmarshal(room, p.WaitingRoom); err != nil {
			return nil, fmt.Errorf("decode waiting room of %s: %w", p.ID, err)
		}
	}
	if layout != nil {
		p.Layout = &Layout{}
		if err := json.Unmarshal(layout, p.Layout); err != nil {
			return nil, fmt.Errorf("decode layout of %s: %w", p.ID, err)
		}
		p.Layout.Number()
	}
	return &p, nil
}

// Get returns a product of the tenant; db.ErrNotFound for unknown ids and for
// other tenants' products alike.
func (s *Store) Get(ctx context.Context, tenantID, id uuid.UUID) (*Product, error) {
	p, err := scanProduct(s.pool.QueryRow(ctx, selectProduct+` WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return nil, fmt.Errorf("get product %s: %w", id, db.NotFound(err))
	}
	return p, nil
}

// GetBySlug returns a product of the tenant by its slug.
func (s *Store) GetBySlug(ctx context.Context, tenantID uuid.UUID, slug string) (*Product, error) {
	p, err := scanProduct(s.pool.QueryRow(ctx, selectProduct+` WHERE tenant_id = $1 AND slug = $2`, tenantID, slug))
	if err != nil {
		return nil, fmt.Errorf("get product %q: %w", slug, db.NotFound(err))
	}
	return p, nil
}

// GetAny returns a product whatever its tenant, for internal callers that
// start from a product id they already trust (workers).
func (s *Store) GetAny(ctx context.Context, id uuid.UUID) (*Product, error) {
	p, err := scanProduct(s.pool.QueryRow(ctx, selectProduct+` WHERE id = $1`, id))
	if err != nil {
		return nil, fmt.Errorf("get product %s: %w", id, db.NotFound(err))
	}
	return p, nil
}

// ListInStore returns what the tenant's store shows: its published and
// closed products (never drafts), soonest on sale first.
func (s *Store) ListInStore(ctx context.Context, tenantID uuid.UUID) ([]*Product, error) {
	rows, err := s.pool.Query(ctx, selectProduct+`
		WHERE tenant_id = $1 AND publication <> 'DRAFT' AND rehearsal_of IS NULL
		ORDER BY on_sale_at, created_at, id LIMIT 1000`, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list store products: %w", err)
	}
	defer rows.Close()
	out := []*Product{}
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, fmt.Errorf("list store products: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// List returns the tenant's products, newest first, at most limit.
func (s *Store) List(ctx context.Context, tenantID uuid.UUID, limit int) ([]*Product, error) {
	rows, err := s.pool.Query(ctx, selectProduct+` WHERE tenant_id = $1 AND rehearsal_of IS NULL
		ORDER BY created_at DESC, id LIMIT $2`, tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("list products: %w", err)
	}
	defer rows.Close()
	out := []*Product{}
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, fmt.Errorf("list products: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ListAll returns every tenant's products, newest first, at most limit (the
// platform admin's console).
func (s *Store) ListAll(ctx context.Context, limit int) ([]*Product, error) {
	rows, err := s.pool.Query(ctx, selectProduct+` WHERE rehearsal_of IS NULL ORDER BY created_at DESC, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list all products: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Product, error) { return scanProduct(r) })
}

// ErrNotShadow is returned by PurgeShadow for a product that is no
// rehearsal's shadow.
var ErrNotShadow = errors.New("not a rehearsal's shadow")

// PurgeShadow deletes a rehearsal's shadow product, in tx, after its
// owners' purges have deleted what hangs on it. A real product is refused.
func PurgeShadow(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	tag, err := tx.Exec(ctx, `DELETE FROM products WHERE id = $1 AND rehearsal_of IS NOT NULL`, productID)
	if err != nil {
		return fmt.Errorf("purge shadow %s: %w", productID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("purge %s: %w", productID, ErrNotShadow)
	}
	return nil
}
