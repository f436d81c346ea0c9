package waitingroom

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// A presale of a product with a waiting room is a round of its room: the
// code holders who enter before its window opens are drawn at the opening,
// over the round's own committed seed, and placed after everyone placed
// before them; holders who come later queue in order; admission runs while
// the window is open. The general sale's draw comes after, and places its
// entrants after all of them: a presale entrant not served in the window
// keeps the place.

// AddPresale gives the product's room a round for a presale window, in the
// transaction that makes the window's code list. Lists with the same
// window share one round.
func AddPresale(ctx context.Context, tx pgx.Tx, productID uuid.UUID, opens, closes time.Time) error {
	seed := NewSeed()
	_, err := tx.Exec(ctx, `
		INSERT INTO presale_rounds (id, product_id, opens_at, closes_at, seed, commitment)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (product_id, opens_at, closes_at) DO NOTHING`,
		db.NewID(), productID, opens, closes, seed, Commitment(seed))
	if err != nil {
		return fmt.Errorf("presale round of %s: %w", productID, err)
	}
	return nil
}

// JoinPresale puts the buyer in the line of the presale round of the
// window, in the transaction where their code let them in. A buyer already
// in the general sale's line, not yet placed, moves to the round; one
// already placed keeps the place. After the round's draw, a newcomer is
// placed at the end of the line at once. A window whose list predates the
// room gets its round now.
func (s *Service) JoinPresale(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyer string, opens, closes time.Time) (Entry, bool, error) {
	e := Entry{ProductID: productID, TenantID: tenantID, BuyerID: buyer}
	// The draws lock the room row: holding it makes this entry either
	// part of a draw or placed after it, never left out.
	err := tx.QueryRow(ctx, `SELECT product_id FROM waiting_rooms WHERE product_id = $1 AND tenant_id = $2 FOR UPDATE`,
		productID, tenantID).Scan(new(uuid.UUID))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, ErrNoRoom
	}
	if err != nil {
		return e, false, fmt.Errorf("lock waiting room: %w", err)
	}
	if err := AddPresale(ctx, tx, productID, opens, closes); err != nil {
		return e, false, err
	}
	var drawn, before bool
	err = tx.QueryRow(ctx, `
		SELECT id, drawn_at IS NOT NULL, opens_at > now() FROM presale_rounds
		WHERE product_id = $1 AND opens_at = $2 AND closes_at = $3`, productID, opens, closes).Scan(&e.Round, &drawn, &before)
	if err != nil {
		return e, false, fmt.Errorf("presale round: %w", err)
	}
	var round *uuid.UUID
	var position *int64
	err = tx.QueryRow(ctx, `SELECT id, round_id, position FROM queue_entries WHERE product_id = $1 AND buyer_id = $2`,
		productID, buyer).Scan(&e.ID, &round, &position)
	switch {
	case err == nil && (round != nil || position != nil):
		// In a round already, or placed: the place stays what it is.
		e.Round = uuid.Nil
		if round != nil {
			e.Round = *round
		}
		if position != nil {
			e.Position = *position
		}
		return e, false, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return e, false, fmt.Errorf("look up queue entry: %w", err)
	}
	created := errors.Is(err, pgx.ErrNoRows)
	if drawn {
		if err := tx.QueryRow(ctx, `UPDATE waiting_rooms SET next_position = next_position + 1 WHERE product_id = $1
			RETURNING next_position`, productID).Scan(&e.Position); err != nil {
			return e, false, fmt.Errorf("place presale entrant: %w", err)
		}
	}
	place := &e.Position
	if !drawn {
		place = nil
	}
	if created {
		e.ID = db.NewID()
		_, err = tx.Exec(ctx, `
			INSERT INTO queue_entries (id, product_id, tenant_id, buyer_id, pre_open, round_id, position)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.ID, productID, tenantID, buyer, before, e.Round, place)
	} else {
		_, err = tx.Exec(ctx, `UPDATE queue_entries SET round_id = $2, pre_open = $3, position = $4 WHERE id = $1`,
			e.ID, e.Round, before, place)
	}
	if err != nil {
		return e, false, fmt.Errorf("join presale line: %w", err)
	}
	return e, created, nil
}

// drawRounds runs the draw of each presale round whose window has opened,
// placing its entrants from next+1 on; it returns the positions given and
// whether a window is open now.
func drawRounds(ctx context.Context, tx pgx.Tx, productID uuid.UUID, next int64) (placed int64, open bool, err error) {
	rows, err := tx.Query(ctx, `
		SELECT id, seed FROM presale_rounds WHERE product_id = $1 AND drawn_at IS NULL AND opens_at <= now()
		ORDER BY opens_at, id FOR UPDATE`, productID)
	if err != nil {
		return next, false, fmt.Errorf("presale rounds due: %w", err)
	}
	type due struct {
		ID   uuid.UUID
		Seed []byte
	}
	rounds, err := pgx.CollectRows(rows, pgx.RowToStructByPos[due])
	if err != nil {
		return next, false, fmt.Errorf("presale rounds due: %w", err)
	}
	for _, r := range rounds {
		placed, entrants, err := drawAndPlace(ctx, tx, productID, &r.ID, r.Seed, next)
		if err != nil {
			return next, false, err
		}
		if _, err := tx.Exec(ctx, `UPDATE presale_rounds SET drawn_at = now(), entrants = $2, draw_offset = $3 WHERE id = $1`,
			r.ID, entrants, next); err != nil {
			return next, false, fmt.Errorf("record presale draw: %w", err)
		}
		next = placed
	}
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM presale_rounds WHERE product_id = $1 AND drawn_at IS NOT NULL
		AND closes_at > now())`, productID).Scan(&open)
	if err != nil {
		return next, false, fmt.Errorf("presale open: %w", err)
	}
	return next, open, nil
}

// PresaleDraw is what is public about a presale round's draw.
type PresaleDraw struct {
	ID              uuid.UUID  `json:"id" doc:"Read its order at GET /v1/products/{id}/queue/draw?round={id}"`
	OpensAt         time.Time  `json:"opensAt" doc:"The presale window opens and its draw runs"`
	ClosesAt        time.Time  `json:"closesAt"`
	Commitment      string     `json:"commitment" doc:"hex SHA-256 of the round's seed, published before it opens"`
	Seed            string     `json:"seed,omitempty" doc:"hex seed, revealed after the draw"`
	DrawnAt         *time.Time `json:"drawnAt,omitempty"`
	Entrants        int64      `json:"entrants" doc:"Code holders in the draw (so far, before it)"`
	PositionsBefore int64      `json:"positionsBefore" doc:"Positions given before this draw: the draw's first is position positionsBefore + 1"`
}

// presaleDraws lists the room's presale rounds, earliest first.
func (s *Service) presaleDraws(ctx context.Context, productID uuid.UUID) ([]PresaleDraw, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.opens_at, p.closes_at, p.commitment, p.seed, p.drawn_at,
		       CASE WHEN p.drawn_at IS NULL THEN (SELECT count(*) FROM queue_entries e WHERE e.round_id = p.id AND e.pre_open)
		            ELSE p.entrants END, p.draw_offset
		FROM presale_rounds p WHERE p.product_id = $1 ORDER BY p.opens_at, p.id`, productID)
	if err != nil {
		return nil, fmt.Errorf("presale draws of %s: %w", productID, err)
	}
	var out []PresaleDraw
	var d PresaleDraw
	var seed []byte
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.OpensAt, &d.ClosesAt, &d.Commitment, &seed, &d.DrawnAt, &d.Entrants, &d.PositionsBefore},
		func() error {
			d.Seed = ""
			if d.DrawnAt != nil {
				d.Seed = hex.EncodeToString(seed)
			}
			out = append(out, d)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("presale draws of %s: %w", productID, err)
	}
	return out, nil
}

// PresaleDrawOrder is DrawOrder for one of the product's presale rounds.
func (s *Service) PresaleDrawOrder(ctx context.Context, productID, roundID uuid.UUID) ([]uuid.UUID, error) {
	var owner uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT product_id FROM presale_rounds WHERE id = $1`, roundID).Scan(&owner)
	if err == nil && owner != productID {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return nil, fmt.Errorf("presale round %s: %w", roundID, db.NotFound(err))
	}
	return s.DrawOrder(ctx, roundID)
}
