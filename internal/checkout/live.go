package checkout

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Live is one product's orders and payments right now.
type Live struct {
	OrdersByStatus   map[string]int64
	PaymentsInFlight int64   // attempts PENDING at the provider
	PaymentsUnknown  int64   // attempts whose outcome is not known yet
	OldestUnresolved float64 // seconds since the oldest of those changed
	CapturesFailing  int64   // authorized orders whose capture failed
	RevenueCents     int64   // confirmed orders
	PaidPerMinute    int64   // orders confirmed in the last minute
}

// ReadLive reads one product's orders and payment attempts.
func ReadLive(ctx context.Context, q db.DBTX, productID uuid.UUID) (Live, error) {
	l := Live{OrdersByStatus: map[string]int64{}}
	rows, err := q.Query(ctx, `SELECT status, count(*) FROM orders WHERE product_id = $1 GROUP BY 1`, productID)
	if err != nil {
		return l, fmt.Errorf("orders of %s: %w", productID, err)
	}
	var status string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { l.OrdersByStatus[status] = n; return nil }); err != nil {
		return l, fmt.Errorf("orders of %s: %w", productID, err)
	}
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE capture_status = 'FAILED'),
		       coalesce(sum(amount_cents - refunded_cents) FILTER (WHERE confirmed_at IS NOT NULL), 0),
		       count(*) FILTER (WHERE confirmed_at > now() - interval '1 minute')
		FROM orders WHERE product_id = $1`, productID).Scan(&l.CapturesFailing, &l.RevenueCents, &l.PaidPerMinute)
	if err != nil {
		return l, fmt.Errorf("orders of %s: %w", productID, err)
	}
	err = q.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE a.status = 'PENDING'), count(*) FILTER (WHERE a.status = 'UNKNOWN'),
		       coalesce(extract(epoch FROM now() - min(a.updated_at)), 0)
		FROM payment_attempts a JOIN orders o ON o.id = a.order_id
		WHERE o.product_id = $1 AND a.status IN ('PENDING', 'UNKNOWN')`, productID).
		Scan(&l.PaymentsInFlight, &l.PaymentsUnknown, &l.OldestUnresolved)
	if err != nil {
		return l, fmt.Errorf("payment attempts of %s: %w", productID, err)
	}
	return l, nil
}

// Flow is a product's orders per bucket.
type Flow struct {
	Ordered      []int64 // orders started
	Paid         []int64 // orders confirmed
	RevenueCents []int64 // of those
	Failed       []int64 // orders failed or expired unpaid
	// Refunds and RefundedCents are the refunds done in each bucket and
	// what they gave back (revenue is counted when paid, refunds when made).
	Refunds       []int64
	RefundedCents []int64
}

// ReadFlow counts a product's orders per bucket of step from from.
func ReadFlow(ctx context.Context, q db.DBTX, productID uuid.UUID, from time.Time, step time.Duration, n int) (Flow, error) {
	f := Flow{Ordered: make([]int64, n), Paid: make([]int64, n), RevenueCents: make([]int64, n), Failed: make([]int64, n),
		Refunds: make([]int64, n), RefundedCents: make([]int64, n)}
	end := from.Add(time.Duration(n) * step)
	rows, err := q.Query(ctx, `
		SELECT kind, i, count(*), sum(amount)::bigint FROM (
			SELECT 'o' AS kind, `+db.Bucket("created_at")+` AS i, 0::bigint AS amount
			FROM orders WHERE product_id = $1 AND created_at >= $2 AND created_at < $4
			UNION ALL
			SELECT 'p', `+db.Bucket("confirmed_at")+`, amount_cents
			FROM orders WHERE product_id = $1 AND confirmed_at >= $2 AND confirmed_at < $4
			UNION ALL
			SELECT 'f', `+db.Bucket("updated_at")+`, 0
			FROM orders WHERE product_id = $1 AND status IN ('FAILED', 'EXPIRED') AND updated_at >= $2 AND updated_at < $4
			UNION ALL
			SELECT 'r', `+db.Bucket("r.refunded_at")+`, r.amount_cents
			FROM refunds r JOIN orders o ON o.id = r.order_id
			WHERE o.product_id = $1 AND r.refunded_at >= $2 AND r.refunded_at < $4
		) x GROUP BY 1, 2`, productID, from, step.Seconds(), end)
	if err != nil {
		return f, fmt.Errorf("order flow of %s: %w", productID, err)
	}
	err = db.ReadBuckets(rows, n, 2, func(kind string, i int, v []int64) {
		switch kind {
		case "o":
			f.Ordered[i] = v[0]
		case "p":
			f.Paid[i], f.RevenueCents[i] = v[0], v[1]
		case "f":
			f.Failed[i] = v[0]
		case "r":
			f.Refunds[i], f.RefundedCents[i] = v[0], v[1]
		}
	})
	if err != nil {
		return f, fmt.Errorf("order flow of %s: %w", productID, err)
	}
	return f, nil
}
