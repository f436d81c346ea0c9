package product

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/outbox"
)

// Event is what shoppers come for: the show, with its venue and the venue's
// time zone. Each of its dates is a product; a series has several.
type Event struct {
	ID          uuid.UUID `json:"id"`
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	ImageURL    string    `json:"imageUrl"`
	EntryNote   string    `json:"entryNote" doc:"Age limit or entry conditions, as shoppers should read them"`
	Venue       Venue     `json:"venue"`
	TimeZone    string    `json:"timeZone" doc:"IANA time zone of the venue (Europe/Lisbon): every date is shown in it"`
}

// Venue is where an event takes place.
type Venue struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	MapURL  string `json:"mapUrl,omitempty"`
}

// EventParams describe a new event, or (as pointers in EventUpdate) a change.
type EventParams struct {
	Slug        string
	Name        string
	Description string
	ImageURL    string
	EntryNote   string
	Venue       Venue
	TimeZone    string
}

// Errors of events.
var (
	ErrEventSlugTaken = errors.New("event slug already taken")
	ErrTimeZone       = errors.New("unknown time zone: give an IANA name such as Europe/Lisbon")
	ErrDates          = errors.New("dates out of order: doors at or before the start, the end after it, the sale's end after its start")
)

// checkZone refuses a time zone Go cannot load (the faces would show the
// wrong hour).
func checkZone(name string) error {
	if _, err := time.LoadLocation(name); err != nil || name == "" || name == "Local" {
		return ErrTimeZone
	}
	return nil
}

// CreateEvent records a tenant's event.
func (s *Store) CreateEvent(ctx context.Context, tenantID uuid.UUID, p EventParams) (*Event, error) {
	var id uuid.UUID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		id, err = createEvent(ctx, tx, tenantID, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.GetEvent(ctx, tenantID, id)
}

func createEvent(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, p EventParams) (uuid.UUID, error) {
	if p.TimeZone == "" {
		p.TimeZone = "UTC"
	}
	if err := checkZone(p.TimeZone); err != nil {
		return uuid.Nil, err
	}
	id := db.NewID()
	_, err := tx.Exec(ctx, `
		INSERT INTO events (id, tenant_id, slug, name, description, image_url, entry_note, venue_name, venue_address,
		                    venue_map_url, time_zone)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		id, tenantID, p.Slug, p.Name, p.Description, p.ImageURL, p.EntryNote, p.Venue.Name, p.Venue.Address, p.Venue.MapURL,
		p.TimeZone)
	if db.IsUniqueViolation(err, "events_tenant_id_slug_key") {
		return uuid.Nil, ErrEventSlugTaken
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("insert event: %w", err)
	}
	return id, nil
}

const selectEvent = `
	SELECT id, slug, name, description, image_url, entry_note, venue_name, venue_address, venue_map_url, time_zone
	FROM events`

func scanEvent(row pgx.Row) (*Event, error) {
	var e Event
	err := row.Scan(&e.ID, &e.Slug, &e.Name, &e.Description, &e.ImageURL, &e.EntryNote, &e.Venue.Name, &e.Venue.Address,
		&e.Venue.MapURL, &e.TimeZone)
	return &e, err
}

// GetEvent returns a tenant's event (db.ErrNotFound for another tenant's).
func (s *Store) GetEvent(ctx context.Context, tenantID, id uuid.UUID) (*Event, error) {
	e, err := scanEvent(s.pool.QueryRow(ctx, selectEvent+` WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", id, db.NotFound(err))
	}
	return e, nil
}

// ListEvents returns a tenant's events, newest first.
func (s *Store) ListEvents(ctx context.Context, tenantID uuid.UUID, limit int) ([]*Event, error) {
	rows, err := s.pool.Query(ctx, selectEvent+` WHERE tenant_id = $1 ORDER BY created_at DESC, id LIMIT $2`, tenantID, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	if out == nil {
		out = []*Event{}
	}
	return out, nil
}

// EventUpdate is a change to an event; nil fields stay.
type EventUpdate struct {
	Name, Description, ImageURL, EntryNote *string
	Venue                                  *Venue
	TimeZone                               *string
}

// UpdateEvent changes an event. A change of venue or time zone — where or
// when shoppers must be — is told to every ticket holder of its dates: an
// event.changed outbox row per date, in the same transaction.
func (s *Store) UpdateEvent(ctx context.Context, tenantID, id uuid.UUID, u EventUpdate) (*Event, error) {
	if u.TimeZone != nil {
		if err := checkZone(*u.TimeZone); err != nil {
			return nil, err
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanEvent(tx.QueryRow(ctx, selectEvent+` WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID))
		if err != nil {
			return fmt.Errorf("event %s: %w", id, db.NotFound(err))
		}
		venue := cur.Venue
		if u.Venue != nil {
			venue = *u.Venue
		}
		if _, err := tx.Exec(ctx, `
			UPDATE events SET name = coalesce($2, name), description = coalesce($3, description),
			       image_url = coalesce($4, image_url), entry_note = coalesce($5, entry_note), venue_name = $6,
			       venue_address = $7, venue_map_url = $8, time_zone = coalesce($9, time_zone), updated_at = now()
			WHERE id = $1`, id, u.Name, u.Description, u.ImageURL, u.EntryNote, venue.Name, venue.Address, venue.MapURL,
			u.TimeZone); err != nil {
			return fmt.Errorf("update event %s: %w", id, err)
		}
		if venue == cur.Venue && (u.TimeZone == nil || *u.TimeZone == cur.TimeZone) {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT id FROM products WHERE event_id = $1 AND rehearsal_of IS NULL`, id)
		if err != nil {
			return fmt.Errorf("dates of event %s: %w", id, err)
		}
		dates, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return fmt.Errorf("dates of event %s: %w", id, err)
		}
		for _, d := range dates {
			if err := announceChange(ctx, tx, tenantID, d, "venue"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.GetEvent(ctx, tenantID, id)
}

// announceChange writes the event.changed row that tells a date's ticket
// holders (checkout mails them); what says which: "date" or "venue".
func announceChange(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, what string) error {
	return outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "event.changed", Payload: map[string]any{
		"productId": productID, "changeId": db.NewID(), "what": what}})
}

// EventOf returns the event of a product, with the product's dates: what
// tickets, e-mails and calendars say of when and where.
func EventOf(ctx context.Context, q db.DBTX, productID uuid.UUID) (*Event, *Dates, error) {
	var e Event
	var d Dates
	err := q.QueryRow(ctx, `
		SELECT e.id, e.slug, e.name, e.description, e.image_url, e.entry_note, e.venue_name, e.venue_address,
		       e.venue_map_url, e.time_zone, p.starts_at, p.doors_at, p.ends_at
		FROM events e JOIN products p ON p.event_id = e.id WHERE p.id = $1`, productID).
		Scan(&e.ID, &e.Slug, &e.Name, &e.Description, &e.ImageURL, &e.EntryNote, &e.Venue.Name, &e.Venue.Address,
			&e.Venue.MapURL, &e.TimeZone, &d.StartsAt, &d.DoorsAt, &d.EndsAt)
	if err != nil {
		return nil, nil, fmt.Errorf("event of product %s: %w", productID, db.NotFound(err))
	}
	return &e, &d, nil
}

// Dates are when one date of an event happens (each unset until the
// tenant says: "to be announced").
type Dates struct {
	StartsAt *time.Time `json:"startsAt,omitempty"`
	DoorsAt  *time.Time `json:"doorsAt,omitempty"`
	EndsAt   *time.Time `json:"endsAt,omitempty"`
}

// When writes the dates for people, in the venue's time zone: "Sat 14 Mar
// 2027, 20:00 (doors 19:00) Europe/Lisbon", or "Date to be announced".
func (d Dates) When(zone string) string {
	if d.StartsAt == nil {
		return "Date to be announced"
	}
	loc := Location(zone)
	s := d.StartsAt.In(loc).Format("Mon 2 Jan 2006, 15:04")
	if d.DoorsAt != nil {
		s += " (doors " + d.DoorsAt.In(loc).Format("15:04") + ")"
	}
	if d.EndsAt != nil {
		s += " – " + d.EndsAt.In(loc).Format("15:04")
	}
	return s + " " + zone
}

// Location is an event's time zone (UTC should a stored name no longer
// load: every name is checked when it is set).
func Location(zone string) *time.Location {
	if loc, err := time.LoadLocation(zone); err == nil {
		return loc
	}
	return time.UTC
}

// Where writes the venue for people: "Coliseu, Rua das Portas 96, Lisboa".
func (v Venue) Where() string {
	switch {
	case v.Name == "":
		return v.Address
	case v.Address == "":
		return v.Name
	}
	return v.Name + ", " + v.Address
}

// DatesOf returns the products of a tenant's event (its dates), soonest
// first, those without a date last.
func (s *Store) DatesOf(ctx context.Context, tenantID, eventID uuid.UUID) ([]*Product, error) {
	rows, err := s.pool.Query(ctx, selectProduct+` WHERE tenant_id = $1 AND event_id = $2 AND rehearsal_of IS NULL
		ORDER BY starts_at NULLS LAST, created_at, id`, tenantID, eventID)
	if err != nil {
		return nil, fmt.Errorf("dates of event %s: %w", eventID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Product, error) { return scanProduct(r) })
	if err != nil {
		return nil, fmt.Errorf("dates of event %s: %w", eventID, err)
	}
	if out == nil {
		out = []*Product{}
	}
	return out, nil
}
