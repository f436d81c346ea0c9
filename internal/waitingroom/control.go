package waitingroom

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Controlling a room while its sale runs: admission's pace and pause
// (settings every step reads, so the controller follows within a step),
// and the line itself — who is in it, and taking one shopper out. None of
// it touches the draw: the seed, its commitment and the drawn places stay
// as published.

// Tune replaces a room's settings whatever its state, in the product's
// transaction (the product keeps its copy in the same one).
func Tune(ctx context.Context, tx pgx.Tx, productID uuid.UUID, settings Settings) error {
	b, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("encode waiting room settings: %w", err)
	}
	tag, err := tx.Exec(ctx, `UPDATE waiting_rooms SET settings = $2 WHERE product_id = $1`, productID, b)
	if err != nil {
		return fmt.Errorf("tune waiting room %s: %w", productID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("waiting room %s: %w", productID, db.ErrNotFound)
	}
	return nil
}

// SetPerBuyerLimit follows a change of the product's per-buyer limit, in
// the product's transaction.
func SetPerBuyerLimit(ctx context.Context, tx pgx.Tx, productID uuid.UUID, n int) error {
	if _, err := tx.Exec(ctx, `UPDATE waiting_rooms SET per_buyer_limit = $2 WHERE product_id = $1`, productID, n); err != nil {
		return fmt.Errorf("per-buyer limit of room %s: %w", productID, err)
	}
	return nil
}

// QueueCounts are a room's entrants by where they are.
type QueueCounts struct {
	Waiting   int64 `json:"waiting" doc:"In line, not admitted yet (before the draw: entered)"`
	Admitted  int64 `json:"admitted" doc:"Admitted, no reservation yet"`
	Reserved  int64 `json:"reserved" doc:"Admitted and reserved"`
	Left      int64 `json:"left"`
	Reclaimed int64 `json:"reclaimed"`
	Removed   int64 `json:"removed"`
}

// QueueEntry is one entrant as the organiser sees them.
type QueueEntry struct {
	ID         uuid.UUID  `json:"id"`
	BuyerID    string     `json:"buyerId"`
	Position   int64      `json:"position,omitempty" doc:"Absent before the draw"`
	State      string     `json:"state" enum:"WAITING,ADMITTED,RESERVED,LEFT,RECLAIMED,REMOVED"`
	JoinedAt   time.Time  `json:"joinedAt"`
	PreOpen    bool       `json:"preOpen" doc:"Entered before the opening: in the draw"`
	AdmittedAt *time.Time `json:"admittedAt,omitempty"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
}

// QueueView is a room's line for its organiser.
type QueueView struct {
	Counts          QueueCounts  `json:"counts"`
	NowServing      int64        `json:"nowServing"`
	RatePerSecond   float64      `json:"ratePerSecond" doc:"Admission's pace at the last step (0 while paused)"`
	RateReason      string       `json:"rateReason,omitempty" doc:"Why it is below L ÷ W, when it is"`
	Drawn           bool         `json:"drawn"`
	Settings        Settings     `json:"settings"`
	Entries         []QueueEntry `json:"entries" doc:"The buyer searched for, or the next in line"`
	EntriesSearched bool         `json:"entriesSearched,omitempty"`
}

// entryState names an entry's place (e: queue_entries, r: waiting_rooms).
const entryState = `CASE WHEN e.reclaimed_at IS NOT NULL THEN 'RECLAIMED'
	WHEN e.removed_at IS NOT NULL THEN 'REMOVED'
	WHEN e.ended_at IS NOT NULL THEN 'LEFT'
	WHEN e.reserved_at IS NOT NULL THEN 'RESERVED'
	WHEN e.position <= r.admitted_through THEN 'ADMITTED'
	ELSE 'WAITING' END`

// Queue reads a tenant's room: its counts by state and either the entries
// of the buyers named (a search) or the next 50 in line.
func (s *Service) Queue(ctx context.Context, tenantID, productID uuid.UUID, buyers []string) (*QueueView, error) {
	v := &QueueView{Entries: []QueueEntry{}, EntriesSearched: buyers != nil}
	var settings []byte
	var rateReason *string
	err := s.pool.QueryRow(ctx, `
		SELECT r.settings, r.admitted_through, r.rate_per_second, r.rate_reason, r.drawn_at IS NOT NULL,
		       count(e.id) FILTER (WHERE `+entryState+` = 'WAITING'),
		       count(e.id) FILTER (WHERE `+entryState+` = 'ADMITTED'),
		       count(e.id) FILTER (WHERE `+entryState+` = 'RESERVED'),
		       count(e.id) FILTER (WHERE `+entryState+` = 'LEFT'),
		       count(e.id) FILTER (WHERE `+entryState+` = 'RECLAIMED'),
		       count(e.id) FILTER (WHERE `+entryState+` = 'REMOVED')
		FROM waiting_rooms r LEFT JOIN queue_entries e ON e.product_id = r.product_id
		WHERE r.product_id = $1 AND r.tenant_id = $2
		GROUP BY r.product_id`, productID, tenantID).
		Scan(&settings, &v.NowServing, &v.RatePerSecond, &rateReason, &v.Drawn, &v.Counts.Waiting, &v.Counts.Admitted,
			&v.Counts.Reserved, &v.Counts.Left, &v.Counts.Reclaimed, &v.Counts.Removed)
	if err != nil {
		return nil, fmt.Errorf("waiting room %s: %w", productID, db.NotFound(err))
	}
	if rateReason != nil {
		v.RateReason = *rateReason
	}
	if err := jsonUnmarshal(settings, &v.Settings); err != nil {
		return nil, err
	}
	where, args := `AND `+entryState+` = 'WAITING' ORDER BY e.position NULLS LAST, e.joined_at LIMIT 50`, []any{productID}
	if buyers != nil {
		where, args = `AND e.buyer_id = ANY($2) ORDER BY e.joined_at LIMIT 50`, []any{productID, buyers}
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.id, e.buyer_id, coalesce(e.position, 0), `+entryState+`, e.joined_at, e.pre_open, e.admitted_at, e.ended_at
		FROM queue_entries e JOIN waiting_rooms r ON r.product_id = e.product_id
		WHERE e.product_id = $1 `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("entries of %s: %w", productID, err)
	}
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueueEntry])
	if err != nil {
		return nil, fmt.Errorf("entries of %s: %w", productID, err)
	}
	if entries != nil {
		v.Entries = entries
	}
	return v, nil
}

// RemoveEntry takes a shopper out of a tenant's room: their turn ends
// (REMOVED) — a place in line is skipped, an admitted slot freed, and their
// access token stops working within a second. Removing an entry whose turn
// is over changes nothing.
func (s *Service) RemoveEntry(ctx context.Context, tenantID, productID, entryID uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE queue_entries SET removed_at = CASE WHEN ended_at IS NULL THEN now() ELSE removed_at END,
		       ended_at = coalesce(ended_at, now())
		WHERE id = $1 AND product_id = $2 AND tenant_id = $3`, entryID, productID, tenantID)
	if err != nil {
		return fmt.Errorf("remove queue entry %s: %w", entryID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("queue entry %s: %w", entryID, db.ErrNotFound)
	}
	return nil
}
