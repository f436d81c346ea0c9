package reservation

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Live is one product's requests and holds right now, as the console's
// live sale view shows them. Rates are over the last ten seconds, latency
// and batch size over the last minute.
type Live struct {
	ByStatus        map[string]int64
	Rejections      map[string]int64 // REJECTED requests by reason
	Queued          int64
	OldestQueued    *time.Time
	DeadLettered    int64
	DecidedPerSec   float64 // requests decided (held or rejected) per second
	HeldPerSec      float64 // numbers held per second
	BatchSize       float64 // holds per claim transaction
	LatencyP50      float64 // seconds from accept to decision
	LatencyP99      float64
	HoldsActive     int64
	HoldsExpiring   int64 // ACTIVE holds ending within a minute
	ExpiryLag       float64
	BuyersHolding   int64
	ExpiredRecently int64 // holds expired in the last minute
}

// ReadLive reads one product's live figures.
func ReadLive(ctx context.Context, q db.DBTX, productID uuid.UUID) (Live, error) {
	l := Live{ByStatus: map[string]int64{}, Rejections: map[string]int64{}}
	rows, err := q.Query(ctx, `
		SELECT status, coalesce(reason, ''), count(*) FROM reservation_requests
		WHERE product_id = $1 GROUP BY 1, 2`, productID)
	if err != nil {
		return l, fmt.Errorf("requests of %s by status: %w", productID, err)
	}
	var status, reason string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&status, &reason, &n}, func() error {
		l.ByStatus[status] += n
		if status == "REJECTED" {
			l.Rejections[reason] += n
		}
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("requests of %s by status: %w", productID, err)
	}
	l.Queued = l.ByStatus["QUEUED"]
	err = q.QueryRow(ctx, `
		SELECT min(created_at), count(*) FILTER (WHERE dead_lettered_at IS NOT NULL)
		FROM reservation_requests WHERE product_id = $1 AND status = 'QUEUED'`, productID).
		Scan(&l.OldestQueued, &l.DeadLettered)
	if err != nil {
		return l, fmt.Errorf("oldest queued request of %s: %w", productID, err)
	}
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE processed_at > now() - interval '10 seconds') / 10.0,
		       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - created_at)), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - created_at)), 0)
		FROM reservation_requests
		WHERE product_id = $1 AND processed_at > now() - interval '1 minute'`, productID).
		Scan(&l.DecidedPerSec, &l.LatencyP50, &l.LatencyP99)
	if err != nil {
		return l, fmt.Errorf("claim rate of %s: %w", productID, err)
	}
	// A claim transaction's holds share its start time (created_at is
	// now()), so distinct creation times count transactions.
	err = q.QueryRow(ctx, `
		SELECT coalesce(sum(cardinality(numbers)) FILTER (WHERE created_at > now() - interval '10 seconds'), 0) / 10.0,
		       coalesce(count(*)::float8 / nullif(count(DISTINCT created_at), 0), 0)
		FROM holds WHERE product_id = $1 AND created_at > now() - interval '1 minute'`, productID).
		Scan(&l.HeldPerSec, &l.BatchSize)
	if err != nil {
		return l, fmt.Errorf("hold rate of %s: %w", productID, err)
	}
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'ACTIVE'),
		       count(*) FILTER (WHERE state = 'ACTIVE' AND expires_at < now() + interval '1 minute'),
		       coalesce(extract(epoch FROM now() - min(expires_at) FILTER (WHERE state = 'ACTIVE' AND expires_at < now())), 0),
		       count(DISTINCT buyer_id) FILTER (WHERE state = 'ACTIVE'),
		       count(*) FILTER (WHERE state = 'EXPIRED' AND ended_at > now() - interval '1 minute')
		FROM holds
		WHERE product_id = $1 AND (state = 'ACTIVE' OR ended_at > now() - interval '1 minute')`, productID).
		Scan(&l.HoldsActive, &l.HoldsExpiring, &l.ExpiryLag, &l.BuyersHolding, &l.ExpiredRecently)
	if err != nil {
		return l, fmt.Errorf("holds of %s: %w", productID, err)
	}
	return l, nil
}

// Flow is a product's requests and holds per bucket.
type Flow struct {
	Accepted []int64 // requests recorded
	Held     []int64 // requests that got a hold
	Rejected []int64 // requests refused (conflicts, limits, sold out)
	Numbers  []int64 // numbers held
	Expired  []int64 // holds that ran out
	Queued   []int64 // requests waiting at each bucket's end
	// Conflicts are rejections because another buyer had the seat.
	Conflicts []int64
}

// ReadFlow counts a product's requests and holds per bucket of step from
// from.
func ReadFlow(ctx context.Context, q db.DBTX, productID uuid.UUID, from time.Time, stepDur time.Duration, n int) (Flow, error) {
	f := Flow{Accepted: make([]int64, n), Held: make([]int64, n), Rejected: make([]int64, n),
		Numbers: make([]int64, n), Expired: make([]int64, n), Queued: make([]int64, n), Conflicts: make([]int64, n)}
	step := stepDur.Seconds()
	end := from.Add(time.Duration(n) * stepDur)
	// Requests waiting when the window opened.
	var queued int64
	if err := q.QueryRow(ctx, `
		SELECT count(*) FROM reservation_requests
		WHERE product_id = $1 AND created_at < $2 AND (processed_at IS NULL OR processed_at >= $2)`,
		productID, from).Scan(&queued); err != nil {
		return f, fmt.Errorf("requests waiting at %s: %w", from, err)
	}
	decided := make([]int64, n)
	rows, err := q.Query(ctx, `
		SELECT kind, i, count(*), sum(conflict) FROM (
			SELECT 'a' AS kind, `+db.Bucket("created_at")+` AS i, 0 AS conflict
			FROM reservation_requests WHERE product_id = $1 AND created_at >= $2 AND created_at < $4
			UNION ALL
			SELECT CASE WHEN status = 'REJECTED' THEN 'r' ELSE 'h' END, `+db.Bucket("processed_at")+`,
			       CASE WHEN reason = $5 THEN 1 ELSE 0 END
			FROM reservation_requests WHERE product_id = $1 AND processed_at >= $2 AND processed_at < $4
		) x GROUP BY 1, 2`, productID, from, step, end, ReasonSeatTaken)
	if err != nil {
		return f, fmt.Errorf("request flow of %s: %w", productID, err)
	}
	err = db.ReadBuckets(rows, n, 2, func(kind string, i int, v []int64) {
		switch kind {
		case "a":
			f.Accepted[i] = v[0]
		case "h":
			f.Held[i], decided[i] = v[0], decided[i]+v[0]
		case "r":
			f.Rejected[i], f.Conflicts[i], decided[i] = v[0], v[1], decided[i]+v[0]
		}
	})
	if err != nil {
		return f, fmt.Errorf("request flow of %s: %w", productID, err)
	}
	for i := range n {
		queued += f.Accepted[i] - decided[i]
		f.Queued[i] = max(queued, 0)
	}
	rows, err = q.Query(ctx, `
		SELECT kind, i, sum(n)::bigint FROM (
			SELECT 'n' AS kind, `+db.Bucket("created_at")+` AS i, cardinality(numbers) AS n
			FROM holds WHERE product_id = $1 AND created_at >= $2 AND created_at < $4
			UNION ALL
			SELECT 'e', `+db.Bucket("ended_at")+`, 1
			FROM holds WHERE product_id = $1 AND state = 'EXPIRED' AND ended_at >= $2 AND ended_at < $4
		) x GROUP BY 1, 2`, productID, from, step, end)
	if err != nil {
		return f, fmt.Errorf("hold flow of %s: %w", productID, err)
	}
	err = db.ReadBuckets(rows, n, 1, func(kind string, i int, v []int64) {
		if kind == "n" {
			f.Numbers[i] = v[0]
		} else {
			f.Expired[i] = v[0]
		}
	})
	if err != nil {
		return f, fmt.Errorf("hold flow of %s: %w", productID, err)
	}
	return f, nil
}
