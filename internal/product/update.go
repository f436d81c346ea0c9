package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/waitingroom"
)

// Errors of a product change, each a rule a box office keeps.
var (
	// ErrPublication: an unknown publication, or a published or closed
	// product sent back to DRAFT.
	ErrPublication = errors.New("invalid publication: a product is created DRAFT or PUBLISHED, and never goes back to DRAFT")
	// ErrPriceLocked: the price and the fee cannot change once a number is
	// held or sold.
	ErrPriceLocked = errors.New("the price and the booking fee cannot change once a number is held or sold")
	// ErrOnSaleInPast: the on-sale time cannot move into the past.
	ErrOnSaleInPast = errors.New("the on-sale time cannot move into the past")
)

// ErrAlreadyOnSale is returned when moving the on-sale time, or changing
// the waiting room, of a product that is already on sale.
var ErrAlreadyOnSale = errors.New("product already on sale")

// ErrDateCancelled is returned for a change to a cancelled date, or a
// purchase of one.
var ErrDateCancelled = errors.New("this date is cancelled")

// ErrRehearsalShadow refuses to publish a rehearsal's shadow copy.
var ErrRehearsalShadow = errors.New("a rehearsal's shadow copy is never published")

// Update is a change to a product; nil fields stay as they are.
type Update struct {
	Name        *string
	Description *string
	ImageURL    *string
	PriceCents  *int64
	FeeCents    *int64
	OnSaleAt    *time.Time
	// WaitingRoom turns the room on (Enabled), changes its settings, or
	// turns it off; before the sale opens only.
	WaitingRoom *waitingroom.Settings
	Publication *string
	// RefundPolicy applies to refunds asked for from now on.
	RefundPolicy *string
	// StartsAt, DoorsAt and EndsAt move the date; once a number is sold,
	// every ticket holder is told. OffSaleAt ends the sale then.
	StartsAt, DoorsAt, EndsAt, OffSaleAt *time.Time
	// Cancellation sets the shoppers' cancellation policy; one with
	// Off set turns it off.
	Cancellation *Cancellation
	// Transfers sets the ticket holders' transfer policy; one with Off set
	// turns it off.
	Transfers *Transfers
	// PerBuyerLimit and HoldSeconds apply to the claims from now on (holds
	// already made keep their expiry).
	PerBuyerLimit, HoldSeconds *int
}

// Update applies a tenant admin's change in one transaction, by the rules:
// no price change once a number is held or sold; the on-sale time and the
// waiting room move only before the sale opens, and the on-sale time never
// into the past; a product never goes back to DRAFT. CLOSED stops new
// reservations (the claim rejects what is queued); PUBLISHED reopens.
func (s *Store) Update(ctx context.Context, tenantID, id uuid.UUID, u Update) (*Product, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanProduct(tx.QueryRow(ctx, selectProduct+` WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID))
		if err != nil {
			return fmt.Errorf("product %s: %w", id, db.NotFound(err))
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		if cur.Publication == Cancelled {
			return ErrDateCancelled // a cancelled date stays cancelled
		}
		onSale := cur.Publication == Published && !cur.OnSaleAt.After(now)
		if cur.RehearsalOf != nil && u.Publication != nil && *u.Publication == Published {
			return ErrRehearsalShadow // a shadow never reaches a store
		}
		if u.Publication != nil && *u.Publication != cur.Publication && *u.Publication != Published && *u.Publication != Closed {
			return ErrPublication
		}
		if u.PriceCents != nil && *u.PriceCents != cur.PriceCents || u.FeeCents != nil && *u.FeeCents != cur.FeeCents {
			taken, err := inventory.Taken(ctx, tx, id)
			if err != nil {
				return err
			}
			if taken > 0 {
				return ErrPriceLocked
			}
		}
		if u.OnSaleAt != nil && !u.OnSaleAt.Equal(cur.OnSaleAt) {
			if onSale {
				return ErrAlreadyOnSale
			}
			if u.OnSaleAt.Before(now) {
				return ErrOnSaleInPast
			}
		}
		var room []byte
		if u.WaitingRoom != nil {
			if onSale {
				return ErrAlreadyOnSale
			}
			if room, err = s.changeRoom(ctx, tx, cur, *u.WaitingRoom, u.OnSaleAt); err != nil {
				return err
			}
		}
		dates := cur.Dates
		for _, c := range []struct{ to, from **time.Time }{{&u.StartsAt, &dates.StartsAt}, {&u.DoorsAt, &dates.DoorsAt}, {&u.EndsAt, &dates.EndsAt}} {
			if *c.to != nil {
				*c.from = *c.to
			}
		}
		opens, offSale := cur.OnSaleAt, cur.OffSaleAt
		if u.OnSaleAt != nil {
			opens = *u.OnSaleAt
		}
		if u.OffSaleAt != nil {
			offSale = u.OffSaleAt
		}
		if err := checkDates(dates, opens, offSale); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE products SET name = coalesce($2, name), price_cents = coalesce($3, price_cents),
			       on_sale_at = coalesce($4, on_sale_at), publication = coalesce($5, publication),
			       waiting_room = CASE WHEN $6 THEN $7::jsonb ELSE waiting_room END,
			       refund_policy = coalesce($8, refund_policy), starts_at = $9, doors_at = $10, ends_at = $11,
			       off_sale_at = $12,
			       cancel_hours_before = CASE WHEN $13 THEN $14 ELSE cancel_hours_before END,
			       cancel_fee_cents = CASE WHEN $13 THEN $15 ELSE cancel_fee_cents END,
			       transfer_hours_before = CASE WHEN $16 THEN $17 ELSE transfer_hours_before END,
			       transfer_max = CASE WHEN $16 THEN $18 ELSE transfer_max END,
			       per_buyer_limit = coalesce($19, per_buyer_limit), hold_seconds = coalesce($20, hold_seconds),
			       fee_cents = coalesce($21, fee_cents)
			WHERE id = $1`,
			id, u.Name, u.PriceCents, u.OnSaleAt, u.Publication, u.WaitingRoom != nil, room,
			u.RefundPolicy, dates.StartsAt, dates.DoorsAt, dates.EndsAt, offSale,
			u.Cancellation != nil, u.Cancellation.hours(), u.Cancellation.fee(),
			u.Transfers != nil, u.Transfers.hours(), u.Transfers.max(), u.PerBuyerLimit, u.HoldSeconds, u.FeeCents)
		if err != nil {
			return fmt.Errorf("update product %s: %w", id, err)
		}
		// The description and picture are the event's, shared by its dates.
		if u.Description != nil || u.ImageURL != nil {
			if _, err := tx.Exec(ctx, `
				UPDATE events SET description = coalesce($2, description), image_url = coalesce($3, image_url), updated_at = now()
				WHERE id = $1`, cur.EventID, u.Description, u.ImageURL); err != nil {
				return fmt.Errorf("update event of %s: %w", id, err)
			}
		}
		// A date that moves after tickets were sold is told to their holders.
		if !sameTime(dates.StartsAt, cur.StartsAt) || !sameTime(dates.DoorsAt, cur.DoorsAt) || !sameTime(dates.EndsAt, cur.EndsAt) {
			counts, err := inventory.CountsOf(ctx, tx, []uuid.UUID{id})
			if err != nil {
				return err
			}
			if counts[id].Sold > 0 {
				if err := announceChange(ctx, tx, tenantID, id, "date"); err != nil {
					return err
				}
			}
		}
		if u.PerBuyerLimit != nil {
			// The room admits no more shoppers than the stock left serves
			// at this limit.
			if err := waitingroom.SetPerBuyerLimit(ctx, tx, id, *u.PerBuyerLimit); err != nil {
				return err
			}
		}
		if u.OnSaleAt != nil && u.WaitingRoom == nil && cur.WaitingRoom != nil {
			return waitingroom.Reschedule(ctx, tx, id, *u.OnSaleAt)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, tenantID, id)
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// ErrSeated is returned when giving a seat map to a numbered product.
var ErrSeated = errors.New("only seated products have a seat map")

// SetLayout replaces a seated product's seat map (with its price levels)
// until the first number is held: it must cover the same capacity.
func (s *Store) SetLayout(ctx context.Context, tenantID, id uuid.UUID, l *Layout) (*Product, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scanProduct(tx.QueryRow(ctx, selectProduct+` WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID))
		if err != nil {
			return fmt.Errorf("product %s: %w", id, db.NotFound(err))
		}
		if cur.Kind != KindSeated {
			return ErrSeated
		}
		if err := l.Validate(cur.Capacity); err != nil {
			return err
		}
		taken, err := inventory.Taken(ctx, tx, id)
		if err != nil {
			return err
		}
		if taken > 0 {
			return ErrLayoutLocked
		}
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("encode layout: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE products SET layout = $2, layout_version = layout_version + 1 WHERE id = $1`, id, b)
		if err != nil {
			return fmt.Errorf("set layout of %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, tenantID, id)
}

// ErrLayoutLocked is returned when replacing the seat map once a number is
// held or sold.
var ErrLayoutLocked = errors.New("the seat map cannot change once a number is held or sold")

// changeRoom turns a product's room on, changes it or turns it off, and
// returns the product's new waiting_room column (nil: off).
func (s *Store) changeRoom(ctx context.Context, tx pgx.Tx, cur *Product, settings waitingroom.Settings, onSaleAt *time.Time) ([]byte, error) {
	opens := cur.OnSaleAt
	if onSaleAt != nil {
		opens = *onSaleAt
	}
	switch {
	case !settings.Enabled && cur.WaitingRoom == nil:
		return nil, nil
	case !settings.Enabled:
		return nil, waitingroom.Remove(ctx, tx, cur.ID)
	}
	room, err := json.Marshal(settings)
	if err != nil {
		return nil, fmt.Errorf("encode waiting room: %w", err)
	}
	if cur.WaitingRoom == nil {
		return room, waitingroom.Create(ctx, tx, waitingroom.Room{ProductID: cur.ID, TenantID: cur.TenantID,
			OpensAt: opens, PerBuyerLimit: cur.PerBuyerLimit, Settings: settings})
	}
	return room, waitingroom.Configure(ctx, tx, cur.ID, settings, opens)
}
