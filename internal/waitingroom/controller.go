package waitingroom

import (
	"boxoffice/internal/db"
	"boxoffice/internal/metrics"
	"context"
	"fmt"
	"slices"
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

// Signals are the figures admission reads from tables other packages own:
// the stock left, the claim backlog, who has reserved or bought, and the
// payments in doubt. The application wires them in (internal/admission).
type Signals interface {
	// Available is the product's count of numbers neither held nor sold.
	Available(ctx context.Context, q db.DBTX, productID uuid.UUID) (int64, error)
	// OldestQueuedAge is how long the product's oldest undecided request
	// has waited.
	OldestQueuedAge(ctx context.Context, q db.DBTX, productID uuid.UUID) (time.Duration, error)
	// Reserved returns which buyers have made a request for the product.
	Reserved(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error)
	// Taken returns how many numbers count against each buyer's
	// per-buyer limit on the product: held, bought or received.
	Taken(ctx context.Context, q db.DBTX, productID uuid.UUID, buyers []string) (map[string]int64, error)
	// Bought returns which buyers have a confirmed order for the product.
	Bought(ctx context.Context, q db.DBTX, tenantID, productID uuid.UUID, buyers []string) (map[string]bool, error)
	// PaymentsInDoubt counts payment outcomes not yet known.
	PaymentsInDoubt(ctx context.Context, q db.DBTX) (int64, error)
}

// reclaimBatch bounds how many unused admitted slots one pass looks at.
const reclaimBatch = 5000

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
// and stopped (SOLD_OUT) when nothing is left. Every work process runs it
// each second: a room's step locks the room's row and admits for the time
// since the room's last step, whoever took it, so processes admit at one
// pace between them.
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
		var tenantID uuid.UUID
		err := tx.QueryRow(ctx, `
			SELECT settings, opens_at <= now(), drawn_at IS NOT NULL, seed, admitted_through,
			       next_position, per_buyer_limit, greatest(extract(epoch FROM now() - updated_at), 0)::float8, tenant_id
			FROM waiting_rooms WHERE product_id = $1 FOR UPDATE`, productID).
			Scan(&settingsJSON, &onSale, &drawn, &seed, &through, &next, &perBuyer, &seconds, &tenantID)
		if err != nil {
			return fmt.Errorf("lock waiting room %s: %w", productID, err)
		}
		var settings Settings
		if err := jsonUnmarshal(settingsJSON, &settings); err != nil {
			return err
		}
		// Presale rounds first: their windows open before the general sale.
		placed, presaleOpen, err := drawRounds(ctx, tx, productID, next)
		if err != nil {
			return err
		}
		if placed != next {
			res.Drawn += placed - next
			next, seconds = placed, 0
			if _, err := tx.Exec(ctx, `UPDATE waiting_rooms SET next_position = $2 WHERE product_id = $1`, productID, next); err != nil {
				return fmt.Errorf("record presale draws: %w", err)
			}
		}
		if onSale && !drawn {
			placed, entrants, err := drawAndPlace(ctx, tx, productID, nil, seed, next)
			if err != nil {
				return err
			}
			res.Drawn += entrants
			if _, err := tx.Exec(ctx, `
				UPDATE waiting_rooms SET drawn_at = now(), pre_open_count = $2, next_position = $3, draw_offset = $4
				WHERE product_id = $1`, productID, entrants, placed, next); err != nil {
				return err
			}
			next, seconds = placed, 0 // admission starts now
		}
		if !onSale && !presaleOpen {
			return tx.QueryRow(ctx, `UPDATE waiting_rooms SET updated_at = now() WHERE product_id = $1 RETURNING 0`, productID).Scan(new(int))
		}

		reclaimed, err := s.reclaim(ctx, tx, tenantID, productID, through, settings.reclaimAfter())
		if err != nil {
			return err
		}
		res.Reclaimed = reclaimed

		active, wanted, err := s.active(ctx, tx, tenantID, productID, through, settings.accessTTL(), perBuyer)
		if err != nil {
			return err
		}
		available, err := s.signals.Available(ctx, tx, productID)
		if err != nil {
			return err
		}
		oldestQueued, err := s.signals.OldestQueuedAge(ctx, tx, productID)
		if err != nil {
			return err
		}
		unknownPayments, err := s.signals.PaymentsInDoubt(ctx, tx)
		if err != nil {
			return err
		}
		rate, reason := settings.Rate(), ""
		switch {
		case settings.Paused:
			rate, reason = 0, "paused by the organiser"
		case oldestQueued > s.feedback.SlowClaimsAfter:
			rate, reason = rate*feedbackReduction, "claims falling behind"
		case unknownPayments >= s.feedback.PaymentTroubleAt:
			rate, reason = rate*feedbackReduction, "payment outcomes unresolved"
		}
		s.mu.Lock()
		carry = s.carry[productID]
		s.mu.Unlock()
		n, carry, why := Admit(AdmitInput{Rate: rate, Seconds: seconds, Carry: carry, Active: active,
			Wanted: wanted, Capacity: int64(settings.ActiveShoppers), Waiting: next - through, Available: available, PerBuyer: perBuyer})
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

// reclaim gives the slots of admitted shoppers who have not reserved within
// the reclaim time to the next in line: a crowd that closed its tabs must not
// stall the room until its access tokens expire. Polls cannot be the signal
// (they never reach the database); a reservation is. An entry seen reserving
// is marked and never looked at again.
func (s *Service) reclaim(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, through int64, after time.Duration) (int64, error) {
	rows, err := tx.Query(ctx, `
		SELECT buyer_id FROM queue_entries
		WHERE product_id = $1 AND ended_at IS NULL AND reserved_at IS NULL AND position <= $2
		  AND admitted_at < now() - make_interval(secs => $3)
		ORDER BY position LIMIT $4`, productID, through, after.Seconds(), reclaimBatch)
	if err != nil {
		return 0, fmt.Errorf("unused slots: %w", err)
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(candidates) == 0 {
		return 0, err
	}
	reserved, err := s.signals.Reserved(ctx, tx, tenantID, productID, candidates)
	if err != nil {
		return 0, err
	}
	var used, unused []string
	for _, b := range candidates {
		if reserved[b] {
			used = append(used, b)
		} else {
			unused = append(unused, b)
		}
	}
	if len(used) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE queue_entries SET reserved_at = now() WHERE product_id = $1 AND buyer_id = ANY($2)`,
			productID, used); err != nil {
			return 0, fmt.Errorf("mark reserving shoppers: %w", err)
		}
	}
	if len(unused) == 0 {
		return 0, nil
	}
	tag, err := tx.Exec(ctx, `
		UPDATE queue_entries SET reclaimed_at = now(), ended_at = now()
		WHERE product_id = $1 AND buyer_id = ANY($2)`, productID, unused)
	if err != nil {
		return 0, fmt.Errorf("reclaim unused slots: %w", err)
	}
	return tag.RowsAffected(), nil
}

// active counts the admitted shoppers still shopping — within their access
// time, turn not ended, not yet bought — and how many numbers they may
// still take between them: each the per-buyer limit less what already
// counts against it. The numbers they hold are already out of the stock
// left, so counting them again would hold back a shopper who could be
// served.
func (s *Service) active(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, through int64, ttl time.Duration,
	perBuyer int64) (active, wanted int64, err error) {
	rows, err := tx.Query(ctx, `
		SELECT buyer_id FROM queue_entries
		WHERE product_id = $1 AND position <= $2 AND ended_at IS NULL
		  AND admitted_at > now() - make_interval(secs => $3)`, productID, through, ttl.Seconds())
	if err != nil {
		return 0, 0, fmt.Errorf("active shoppers: %w", err)
	}
	shopping, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(shopping) == 0 {
		return 0, 0, err
	}
	bought, err := s.signals.Bought(ctx, tx, tenantID, productID, shopping)
	if err != nil {
		return 0, 0, err
	}
	shopping = slices.DeleteFunc(shopping, func(b string) bool { return bought[b] })
	taken, err := s.signals.Taken(ctx, tx, productID, shopping)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range shopping {
		wanted += max(perBuyer-taken[b], 0)
	}
	return int64(len(shopping)), wanted, nil
}

// drawAndPlace runs a draw — the general sale's (round nil) or a presale
// round's — over the entrants present before its opening, giving them
// positions after, then places in arrival order those who came after the
// opening but before the draw ran. It returns the last position given and
// the draw's entrants.
func drawAndPlace(ctx context.Context, tx pgx.Tx, productID uuid.UUID, round *uuid.UUID, seed []byte, after int64) (int64, int64, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM queue_entries WHERE product_id = $1 AND round_id IS NOT DISTINCT FROM $2 AND pre_open FOR UPDATE`,
		productID, round)
	if err != nil {
		return 0, 0, fmt.Errorf("entrants in the draw: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return 0, 0, err
	}
	order := Draw(seed, ids)
	positions := make([]int64, len(order))
	for i := range order {
		positions[i] = after + int64(i+1)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE queue_entries e SET position = u.pos
		FROM unnest($2::uuid[], $3::bigint[]) AS u(id, pos) WHERE e.id = u.id AND e.product_id = $1`,
		productID, order, positions); err != nil {
		return 0, 0, fmt.Errorf("record the draw: %w", err)
	}
	drawn := after + int64(len(order))
	tag, err := tx.Exec(ctx, `
		WITH ordered AS (
			SELECT id, $3 + row_number() OVER (ORDER BY joined_at, id) AS pos
			FROM queue_entries WHERE product_id = $1 AND position IS NULL AND round_id IS NOT DISTINCT FROM $2)
		UPDATE queue_entries e SET position = o.pos FROM ordered o WHERE e.id = o.id`, productID, round, drawn)
	if err != nil {
		return 0, 0, fmt.Errorf("place later arrivals: %w", err)
	}
	return drawn + tag.RowsAffected(), int64(len(order)), nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Figures are one room's admission state, as operators watch it.
type Figures struct {
	ProductID       uuid.UUID
	RatePerSecond   float64
	Reason          string
	Waiting         int64
	AdmittedThrough int64
	SoldOut         bool
}

// ReadFigures returns the rooms of one tenant (every tenant's with
// uuid.Nil), in product order.
func ReadFigures(ctx context.Context, q db.DBTX, tenantID uuid.UUID) ([]Figures, error) {
	var tenant *uuid.UUID
	if tenantID != uuid.Nil {
		tenant = &tenantID
	}
	rows, err := q.Query(ctx, `
		SELECT product_id, rate_per_second, coalesce(rate_reason, ''), greatest(next_position - admitted_through, 0),
		       admitted_through, sold_out
		FROM waiting_rooms
		WHERE $1::uuid IS NULL OR tenant_id = $1 ORDER BY product_id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("waiting rooms: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Figures])
	if err != nil {
		return nil, fmt.Errorf("waiting rooms: %w", err)
	}
	return out, nil
}

// stepTimeout bounds one admission step.
const stepTimeout = 30 * time.Second

// RunAdmission steps every room (Tick) each second until ctx ends,
// recording each room's rate and admissions in m. Every work process runs
// it, not River's elected leader: when a leader dies River elects another
// only after 15–20 s, and nobody would be admitted meanwhile. A room's step
// locks the room's row and admits for the time since its last step,
// whoever took it, so the steps of several processes keep one pace between
// them and a dead process's share goes on in the others'. It never waits
// behind a queue.
func (s *Service) RunAdmission(ctx context.Context, m *metrics.Metrics) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
		results, err := s.Tick(stepCtx)
		cancel()
		for _, r := range results {
			if r.Drawn > 0 {
				s.logger.InfoContext(ctx, "waiting room drawn", "product", r.ProductID, "entrants", r.Drawn)
			}
			m.Admission(r.ProductID.String(), r.Rate, r.Admitted)
		}
		if err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "admission step failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
