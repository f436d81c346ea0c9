package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/waitlist"
)

// ErrNotSoldOut is returned to a shopper joining the waiting list of a
// product that still has numbers for sale: they reserve instead.
var ErrNotSoldOut = errors.New("the product is not sold out: reserve instead")

// JoinWaitlist puts the buyer in the product's line for quantity numbers
// (at most the per-buyer limit), or returns the place they have. The line
// is for sold-out products only.
func (s *Service) JoinWaitlist(ctx context.Context, p *product.Product, buyerID, email string, quantity int) (*waitlist.Entry, bool, error) {
	if quantity < 1 || quantity > p.PerBuyerLimit {
		return nil, false, inputError("QUANTITY_OUT_OF_RANGE", "quantity must be between 1 and the per-buyer limit %d", p.PerBuyerLimit)
	}
	if e, err := waitlist.Get(ctx, s.pool, p.ID, buyerID); err == nil && (e.State == waitlist.Waiting || e.State == waitlist.Offered) {
		return e, false, nil
	}
	available, err := inventory.Available(ctx, s.pool, p.ID)
	if err != nil {
		return nil, false, err
	}
	if available > 0 {
		return nil, false, ErrNotSoldOut
	}
	return waitlist.Join(ctx, s.pool, p.TenantID, p.ID, buyerID, email, quantity)
}

// Waitlist returns the buyer's latest place in the product's line.
func (s *Service) Waitlist(ctx context.Context, productID uuid.UUID, buyerID string) (*waitlist.Entry, error) {
	return waitlist.Get(ctx, s.pool, productID, buyerID)
}

// LeaveWaitlist takes the buyer out of the product's line; an offer they
// held is declined and its numbers go to the next in line (or back on
// sale when no one waits).
func (s *Service) LeaveWaitlist(ctx context.Context, productID uuid.UUID, buyerID string) error {
	return db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		withheld, err := waitlist.Leave(ctx, tx, productID, buyerID)
		if err != nil || withheld == 0 {
			return err
		}
		return inventory.Apply(ctx, tx, productID, inventory.Change{OfferedDelta: -withheld})
	})
}

// WaitlistSummary counts the product's line for the console.
func (s *Service) WaitlistSummary(ctx context.Context, productID uuid.UUID) (waitlist.Summary, error) {
	return waitlist.SummaryOf(ctx, s.pool, productID)
}

// ServeResult is what one pass over the waiting lists did.
type ServeResult struct {
	Offers  int // offers made
	Offered int // numbers they withhold
	Ended   int // offers that ran out
}

// ServeWaitlists hands numbers that came back to the products' lines: for
// each product with people waiting or an offer past its time it sweeps the
// product's expired holds (a lapsed hold's numbers are the line's), ends
// the offers that ran out, and offers what is free to the next in line,
// each offer for ttl — one transaction per product, holding its inventory
// row, so that offers never withhold more numbers than are free. Each offer
// writes a waitlist.offered outbox event (the shopper's mail).
func (c *Claimer) ServeWaitlists(ctx context.Context, ttl time.Duration, sweepLimit int) (ServeResult, error) {
	ids, err := waitlist.ProductsToServe(ctx, c.pool)
	if err != nil {
		return ServeResult{}, err
	}
	var res ServeResult
	for _, id := range ids {
		if _, _, err := c.expireProduct(ctx, id, sweepLimit); err != nil {
			return res, err
		}
		err := db.BeginFenced(ctx, c.pool, func(tx pgx.Tx) error {
			return c.serveWaitlist(ctx, tx, id, ttl, &res)
		})
		if err != nil {
			return res, fmt.Errorf("serve the waiting list of %s: %w", id, err)
		}
	}
	return res, nil
}

func (c *Claimer) serveWaitlist(ctx context.Context, tx pgx.Tx, productID uuid.UUID, ttl time.Duration, res *ServeResult) error {
	if err := inventory.Lock(ctx, tx, productID); err != nil {
		return err
	}
	ended, err := waitlist.EndDueOffers(ctx, tx, productID)
	if err != nil {
		return err
	}
	terms, err := product.TermsOf(ctx, tx, productID)
	if err != nil {
		return err
	}
	var made []waitlist.Made
	if terms.OnSale && !terms.Closed && !terms.Cancelled {
		available, err := inventory.Available(ctx, tx, productID)
		if err != nil {
			return err
		}
		if made, err = waitlist.MakeOffers(ctx, tx, productID, int(available)+ended, ttl); err != nil {
			return err
		}
	}
	offered := 0
	for _, m := range made {
		offered += m.Quantity
		err := outbox.Add(ctx, tx, outbox.New{TenantID: m.TenantID, Topic: "waitlist.offered", Payload: map[string]any{
			"entryId": m.EntryID, "productId": productID, "quantity": m.Quantity, "expiresAt": m.ExpiresAt}})
		if err != nil {
			return err
		}
	}
	res.Offers += len(made)
	res.Offered += offered
	res.Ended += ended
	c.metrics.WaitlistOffers(len(made), ended)
	return inventory.Apply(ctx, tx, productID, inventory.Change{OfferedDelta: offered - ended})
}
