package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Live is one room's state for the console's live sale view.
type Live struct {
	Settings        Settings
	Rate            float64 // λ after feedback
	Reason          string  // why λ is below L ÷ W, or admission holds
	Waiting         int64   // placed, not yet admitted
	AdmittedThrough int64
	SoldOut         bool
	Joined          int64
	Admitted        int64
	Active          int64   // admitted, within their access window, still in
	WaitP50         float64 // seconds those waiting have waited so far
	WaitP90         float64
	WaitMax         float64
	AdmittedWaitP50 float64 // seconds from joining to admission, last 15 minutes
	AdmittedWaitP90 float64
}

// ReadLive reads one product's room; db.ErrNotFound when it has none.
func ReadLive(ctx context.Context, q db.DBTX, productID uuid.UUID) (Live, error) {
	var l Live
	var settings []byte
	err := q.QueryRow(ctx, `
		SELECT settings, rate_per_second, coalesce(rate_reason, ''), greatest(next_position - admitted_through, 0),
		       admitted_through, sold_out
		FROM waiting_rooms WHERE product_id = $1`, productID).
		Scan(&settings, &l.Rate, &l.Reason, &l.Waiting, &l.AdmittedThrough, &l.SoldOut)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, db.ErrNotFound
	}
	if err != nil {
		return l, fmt.Errorf("waiting room of %s: %w", productID, err)
	}
	if err := json.Unmarshal(settings, &l.Settings); err != nil {
		return l, fmt.Errorf("waiting room settings of %s: %w", productID, err)
	}
	err = q.QueryRow(ctx, `
		SELECT count(*), count(admitted_at),
		       count(*) FILTER (WHERE admitted_at > now() - make_interval(secs => $2) AND ended_at IS NULL),
		       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM now() - joined_at))
		                FILTER (WHERE admitted_at IS NULL AND ended_at IS NULL), 0),
		       coalesce(percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM now() - joined_at))
		                FILTER (WHERE admitted_at IS NULL AND ended_at IS NULL), 0),
		       coalesce(extract(epoch FROM now() - min(joined_at) FILTER (WHERE admitted_at IS NULL AND ended_at IS NULL)), 0),
		       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM admitted_at - joined_at))
		                FILTER (WHERE admitted_at > now() - interval '15 minutes'), 0),
		       coalesce(percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM admitted_at - joined_at))
		                FILTER (WHERE admitted_at > now() - interval '15 minutes'), 0)
		FROM queue_entries WHERE product_id = $1`, productID, l.Settings.accessTTL().Seconds()).
		Scan(&l.Joined, &l.Admitted, &l.Active, &l.WaitP50, &l.WaitP90, &l.WaitMax, &l.AdmittedWaitP50, &l.AdmittedWaitP90)
	if err != nil {
		return l, fmt.Errorf("waiting room entries of %s: %w", productID, err)
	}
	return l, nil
}

// Flow is a room's joins and admissions per bucket.
type Flow struct {
	Joined   []int64
	Admitted []int64
	Waiting  []int64 // joined and not yet admitted or gone at each bucket's end
}

// ReadFlow counts joins and admissions per bucket of step from from.
func ReadFlow(ctx context.Context, q db.DBTX, productID uuid.UUID, from time.Time, step time.Duration, n int) (Flow, error) {
	f := Flow{Joined: make([]int64, n), Admitted: make([]int64, n), Waiting: make([]int64, n)}
	end := from.Add(time.Duration(n) * step)
	var waiting int64
	if err := q.QueryRow(ctx, `
		SELECT count(*) FROM queue_entries
		WHERE product_id = $1 AND joined_at < $2 AND (admitted_at IS NULL OR admitted_at >= $2)
		  AND (ended_at IS NULL OR ended_at >= $2)`, productID, from).Scan(&waiting); err != nil {
		return f, fmt.Errorf("waiting at %s: %w", from, err)
	}
	gone := make([]int64, n)
	rows, err := q.Query(ctx, `
		SELECT kind, i, count(*) FROM (
			SELECT 'j' AS kind, `+db.Bucket("joined_at")+` AS i
			FROM queue_entries WHERE product_id = $1 AND joined_at >= $2 AND joined_at < $4
			UNION ALL
			SELECT 'a', `+db.Bucket("admitted_at")+`
			FROM queue_entries WHERE product_id = $1 AND admitted_at >= $2 AND admitted_at < $4
			UNION ALL
			SELECT 'l', `+db.Bucket("ended_at")+`
			FROM queue_entries WHERE product_id = $1 AND admitted_at IS NULL AND ended_at >= $2 AND ended_at < $4
		) x GROUP BY 1, 2`, productID, from, step.Seconds(), end)
	if err != nil {
		return f, fmt.Errorf("room flow of %s: %w", productID, err)
	}
	err = db.ReadBuckets(rows, n, 1, func(kind string, i int, v []int64) {
		switch kind {
		case "j":
			f.Joined[i] = v[0]
		case "a":
			f.Admitted[i] = v[0]
		case "l":
			gone[i] = v[0]
		}
	})
	if err != nil {
		return f, fmt.Errorf("room flow of %s: %w", productID, err)
	}
	for i := range n {
		waiting += f.Joined[i] - f.Admitted[i] - gone[i]
		f.Waiting[i] = max(waiting, 0)
	}
	return f, nil
}

// FirstJoin is when the product's first entrant joined (nil: nobody yet).
func FirstJoin(ctx context.Context, q db.DBTX, productID uuid.UUID) (*time.Time, error) {
	var t *time.Time
	if err := q.QueryRow(ctx, `SELECT min(joined_at) FROM queue_entries WHERE product_id = $1`, productID).Scan(&t); err != nil {
		return nil, fmt.Errorf("first join of %s: %w", productID, err)
	}
	return t, nil
}
