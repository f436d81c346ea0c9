package waitingroom

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Feedback sets when admission slows: past either threshold the rate is
// halved, and it comes back as soon as the figure recovers.
type Feedback struct {
	// SlowClaimsAfter: the product's oldest QUEUED request is older than
	// this (the claim pipeline's latency and backlog in one figure).
	// Default 5s.
	SlowClaimsAfter time.Duration
	// PaymentTroubleAt: this many payment outcomes are unresolved. Default 10.
	PaymentTroubleAt int64
}

const feedbackReduction = 0.5

// TickResult summarises one controller pass over one room.
type TickResult struct {
	ProductID uuid.UUID
	Drawn     int64
	Admitted  int64
	Reclaimed int64 // admitted slots taken back for going unused
	Rate      float64
	Reason    string
	SoldOut   bool
}

// Tick runs the admission controller once over every room: the draw at
// opening, then admission at λ = L ÷ W per second, lowered while claims fall
// behind or payments are in trouble, held when the stock left is spoken for,
// and stopped (SOLD_OUT) when nothing is left. Run by one leader (a River
// periodic job).
func (s *Service) Tick(ctx context.Context) ([]TickResult, error) {
	rows, err := s.pool.Query(ctx, `SELECT product_id FROM waiting_rooms ORDER BY product_id`)
	if err != nil {
		return nil, fmt.Errorf("list waiting rooms: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	var out []TickResult
	for _, id := range ids {
		r, err := s.tick(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Service) tick(ctx context.Context, productID uuid.UUID) (TickResult, error) {
	res := TickResult{ProductID: productID}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var settingsJSON, seed []byte
		var onSale, drawn bool
		var through, next, perBuyer int64
		var seconds, carry float64
		err := tx.QueryRow(ctx, `
			SELECT p.waiting_room, p.on_sale_at <= now(), r.drawn_at IS NOT NULL, r.seed, r.admitted_through,
			       r.next_position, p.per_buyer_limit, extract(epoch FROM now() - r.updated_at)::float8
			FROM waiting_rooms r JOIN products p ON p.id = r.product_id
			WHERE r.product_id = $1 FOR UPDATE OF r`, productID).
			Scan(&settingsJSON, &onSale, &drawn, &seed, &through, &next, &perBuyer, &seconds)
		if err != nil {
			return fmt.Errorf("lock waiting room %s: %w", productID, err)
		}
		var settings Settings
		if err := jsonUnmarshal(settingsJSON, &settings); err != nil {
			return err
		}
		if !onSale {
			return tx.QueryRow(ctx, `UPDATE waiting_rooms SET updated_at = now() WHERE product_id = $1 RETURNING 0`, productID).Scan(new(int))
		}
		if !drawn {
			n, err := draw(ctx, tx, productID, seed)
			if err != nil {
				return err
			}
			res.Drawn, next = n, n
			// Arrivals after opening but before this draw follow, in order.
			tag, err := tx.Exec(ctx, `
				WITH ordered AS (
					SELECT id, $2 + row_number() OVER (ORDER BY joined_at, id) AS pos
					FROM queue_entries WHERE product_id = $1 AND position IS NULL)
				UPDATE queue_entries e SET position = o.pos FROM ordered o WHERE e.id = o.id`, productID, n)
			if err != nil {
				return fmt.Errorf("place later arrivals: %w", err)
			}
			next += tag.RowsAffected()
			if _, err := tx.Exec(ctx, `UPDATE waiting_rooms SET drawn_at = now(), pre_open_count = $2, next_position = $3 WHERE product_id = $1`,
				productID, n, next); err != nil {
				return err
			}
			seconds = 0 // admission starts now
		}

		// Slots admitted but unused past the reclaim time go to the next in
		// line: a crowd that closed its tabs must not stall the room until
		// its access tokens expire. Polls cannot be the signal (they never
		// reach the database); a reservation is.
		tag, err := tx.Exec(ctx, `
			UPDATE queue_entries e SET reclaimed_at = now(), ended_at = now()
			WHERE e.product_id = $1 AND e.ended_at IS NULL AND e.position <= $2
			  AND e.admitted_at < now() - make_interval(secs => $3)
			  AND NOT EXISTS (SELECT 1 FROM reservation_requests r
			                  WHERE r.tenant_id = e.tenant_id AND r.buyer_id = e.buyer_id AND r.product_id = $1)`,
			productID, through, settings.reclaimAfter().Seconds())
		if err != nil {
			return fmt.Errorf("reclaim unused slots: %w", err)
		}
		res.Reclaimed = tag.RowsAffected()

		var active, available, oldestQueued, unknownPayments int64
		err = tx.QueryRow(ctx, `
			SELECT
			  (SELECT count(*) FROM queue_entries e
			   WHERE e.product_id = $1 AND e.position <= $2 AND e.ended_at IS NULL
			     AND e.admitted_at > now() - make_interval(secs => $3)
			     AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.product_id = $1 AND o.buyer_id = e.buyer_id AND o.status = 'CONFIRMED')),
			  (SELECT available FROM inventory WHERE product_id = $1),
			  coalesce((SELECT extract(epoch FROM now() - min(created_at))::bigint FROM reservation_requests
			            WHERE product_id = $1 AND status = 'QUEUED'), 0),
			  (SELECT count(*) FROM payment_attempts WHERE status = 'UNKNOWN')`,
			productID, through, settings.accessTTL().Seconds()).Scan(&active, &available, &oldestQueued, &unknownPayments)
		if err != nil {
			return fmt.Errorf("admission figures: %w", err)
		}
		rate, reason := settings.Rate(), ""
		switch {
		case time.Duration(oldestQueued)*time.Second > s.feedback.SlowClaimsAfter:
			rate, reason = rate*feedbackReduction, "claims falling behind"
		case unknownPayments >= s.feedback.PaymentTroubleAt:
			rate, reason = rate*feedbackReduction, "payment outcomes unresolved"
		}
		s.mu.Lock()
		carry = s.carry[productID]
		s.mu.Unlock()
		n, carry, why := Admit(AdmitInput{Rate: rate, Seconds: seconds, Carry: carry, Active: active,
			Capacity: int64(settings.ActiveShoppers), Waiting: next - through, Available: available, PerBuyer: perBuyer})
		s.mu.Lock()
		s.carry[productID] = carry
		s.mu.Unlock()
		if why != "" && reason != "" {
			reason += "; " + why
		} else if why != "" {
			reason = why
		}
		if n > 0 {
			if _, err := tx.Exec(ctx, `
				UPDATE queue_entries SET admitted_at = now()
				WHERE product_id = $1 AND position > $2 AND position <= $3`, productID, through, through+n); err != nil {
				return fmt.Errorf("admit: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO admission_steps (product_id, through) VALUES ($1, $2)`, productID, through+n); err != nil {
				return fmt.Errorf("record admission: %w", err)
			}
		}
		res.Admitted, res.Rate, res.Reason, res.SoldOut = n, rate, reason, available <= 0
		_, err = tx.Exec(ctx, `
			UPDATE waiting_rooms SET admitted_through = $2, sold_out = $3, rate_per_second = $4, rate_reason = $5, updated_at = now()
			WHERE product_id = $1`, productID, through+n, available <= 0, rate, nullString(reason))
		return err
	})
	return res, err
}

// draw orders the entrants present before opening and gives them positions
// 1..n.
func draw(ctx context.Context, tx pgx.Tx, productID uuid.UUID, seed []byte) (int64, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM queue_entries WHERE product_id = $1 AND pre_open FOR UPDATE`, productID)
	if err != nil {
		return 0, fmt.Errorf("entrants in the draw: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return 0, err
	}
	order := Draw(seed, ids)
	positions := make([]int64, len(order))
	for i := range order {
		positions[i] = int64(i + 1)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE queue_entries e SET position = u.pos
		FROM unnest($2::uuid[], $3::bigint[]) AS u(id, pos) WHERE e.id = u.id AND e.product_id = $1`,
		productID, order, positions); err != nil {
		return 0, fmt.Errorf("record the draw: %w", err)
	}
	return int64(len(order)), nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
