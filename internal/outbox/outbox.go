// Package outbox owns the outbox table: the events BoxOffice writes in its
// transactions (holds created, expired, released; orders confirmed) and
// hands on to their consumers afterwards. Writers add rows in their own
// transaction with Add; the relay job reads them with Pending and marks them
// with MarkPublished.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Event is one outbox row.
type Event struct {
	ID       int64           `json:"id"`
	TenantID uuid.UUID       `json:"tenantId"`
	Topic    string          `json:"topic"`
	Payload  json.RawMessage `json:"payload"`
	// CreatedAt is when the event happened (its transaction wrote it).
	CreatedAt time.Time `json:"createdAt"`
}

// Publisher hands events to an external queue (SQS). Publishing twice is
// allowed: consumers are idempotent.
type Publisher interface {
	PublishEvents(ctx context.Context, events []Event) error
}

// New is an event to write: its payload is encoded as JSON.
type New struct {
	TenantID uuid.UUID
	Topic    string
	Payload  any
}

// Add writes events in q (the caller's transaction, so an event exists
// exactly when what it reports was committed), in one statement.
func Add(ctx context.Context, q db.DBTX, events ...New) error {
	if len(events) == 0 {
		return nil
	}
	tenants := make([]uuid.UUID, len(events))
	topics := make([]string, len(events))
	payloads := make([]string, len(events))
	for i, ev := range events {
		b, err := json.Marshal(ev.Payload)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", ev.Topic, err)
		}
		tenants[i], topics[i], payloads[i] = ev.TenantID, ev.Topic, string(b)
	}
	_, err := q.Exec(ctx, `
		INSERT INTO outbox (tenant_id, topic, payload)
		SELECT t, tp, p::json FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(t, tp, p)`, tenants, topics, payloads)
	if err != nil {
		return fmt.Errorf("write %d outbox events: %w", len(events), err)
	}
	return nil
}

// Pending returns up to limit unpublished events, oldest first. With lock
// they are locked for the caller's transaction and rows another relay has
// locked are skipped, so two relays never hand on the same row.
func Pending(ctx context.Context, q db.DBTX, limit int, lock bool) ([]Event, error) {
	sql := `SELECT id, tenant_id, topic, payload, created_at FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1`
	if lock {
		sql += ` FOR UPDATE SKIP LOCKED`
	}
	rows, err := q.Query(ctx, sql, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	// The payload is read as bytes: scanned into a json.RawMessage, pgx
	// would check each again with encoding/json, though the database
	// checked it when it was written.
	var events []Event
	var ev Event
	var payload []byte
	_, err = pgx.ForEachRow(rows, []any{&ev.ID, &ev.TenantID, &ev.Topic, &payload, &ev.CreatedAt}, func() error {
		ev.Payload = json.RawMessage(payload)
		events = append(events, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return events, nil
}

// MarkPublished records that the events with ids were handed on.
func MarkPublished(ctx context.Context, q db.DBTX, ids []int64) error {
	if _, err := q.Exec(ctx, `UPDATE outbox SET published_at = now() WHERE id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("mark outbox published: %w", err)
	}
	return nil
}

// Lag is how long the oldest unpublished event has waited (zero when none).
func Lag(ctx context.Context, q db.DBTX) (float64, error) {
	var seconds float64
	err := q.QueryRow(ctx, `
		SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
		FROM outbox WHERE published_at IS NULL`).Scan(&seconds)
	if err != nil {
		return 0, fmt.Errorf("outbox lag: %w", err)
	}
	return seconds, nil
}
