package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Attempt is one try of a delivery.
type Attempt struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"statusCode,omitempty" doc:"What the endpoint answered; absent when nothing came back"`
	Error      string    `json:"error,omitempty" doc:"Why nothing came back (timed out, refused…)"`
	DurationMS int       `json:"durationMs"`
	Excerpt    string    `json:"excerpt,omitempty" doc:"The start of the endpoint's answer (512 bytes at most)"`
	Manual     bool      `json:"manual,omitempty" doc:"A redelivery asked for by hand"`
}

// Delivery is one event sent to one endpoint.
type Delivery struct {
	ID          uuid.UUID  `json:"id" format:"uuid"`
	MessageID   string     `json:"messageId" doc:"Its webhook-id header, the same on every attempt"`
	EventType   string     `json:"eventType"`
	Sequence    int64      `json:"sequence"`
	Status      string     `json:"status" enum:"PENDING,DELIVERED,FAILED"`
	Attempts    int        `json:"attempts"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
	LastAttempt *Attempt   `json:"lastAttempt,omitempty"`
}

// DeliveryDetail is a delivery with its body and every attempt.
type DeliveryDetail struct {
	Delivery
	Body         json.RawMessage `json:"body" doc:"The body as sent"`
	AttemptsList []Attempt       `json:"attemptLog"`
}

const selectDelivery = `
	SELECT d.id, d.event_type, d.sequence, d.status, d.attempts, d.created_at, d.delivered_at,
	       a.at, a.status_code, a.error, a.duration_ms, a.excerpt, a.manual
	FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
	LEFT JOIN LATERAL (SELECT * FROM webhook_attempts WHERE delivery_id = d.id ORDER BY id DESC LIMIT 1) a ON true`

func scanDelivery(row pgx.Row) (*Delivery, error) {
	var d Delivery
	var at *time.Time
	var a Attempt
	var errText, excerpt *string
	var ms *int
	var manual *bool
	err := row.Scan(&d.ID, &d.EventType, &d.Sequence, &d.Status, &d.Attempts, &d.CreatedAt, &d.DeliveredAt,
		&at, &a.StatusCode, &errText, &ms, &excerpt, &manual)
	if err != nil {
		return nil, err
	}
	d.MessageID = MessageID(d.ID)
	if at != nil {
		a.At, a.Error, a.DurationMS, a.Excerpt, a.Manual = *at, *errText, *ms, *excerpt, *manual
		d.LastAttempt = &a
	}
	return &d, nil
}

// Deliveries returns an endpoint's deliveries, newest first, up to limit,
// older than before (a delivery id) when given.
func (s *Service) Deliveries(ctx context.Context, tenantID, endpointID uuid.UUID, before *uuid.UUID, limit int) ([]*Delivery, error) {
	if _, err := s.Get(ctx, tenantID, endpointID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, selectDelivery+`
		WHERE d.endpoint_id = $1 AND ($2::uuid IS NULL OR d.id < $2) ORDER BY d.id DESC LIMIT $3`, endpointID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	return out, nil
}

// DeliveryOf returns one delivery with its body and attempts.
func (s *Service) DeliveryOf(ctx context.Context, tenantID, endpointID, id uuid.UUID) (*DeliveryDetail, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, selectDelivery+` WHERE d.id = $1 AND d.endpoint_id = $2 AND e.tenant_id = $3`,
		id, endpointID, tenantID))
	if err != nil {
		return nil, fmt.Errorf("webhook delivery %s: %w", id, db.NotFound(err))
	}
	out := &DeliveryDetail{Delivery: *d}
	var body string
	if err := s.pool.QueryRow(ctx, `SELECT body FROM webhook_deliveries WHERE id = $1`, id).Scan(&body); err != nil {
		return nil, fmt.Errorf("webhook delivery %s: %w", id, db.NotFound(err))
	}
	out.Body = json.RawMessage(body)
	rows, err := s.pool.Query(ctx, `
		SELECT at, status_code, error, duration_ms, excerpt, manual FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("webhook attempts: %w", err)
	}
	out.AttemptsList, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Attempt])
	if err != nil {
		return nil, fmt.Errorf("webhook attempts: %w", err)
	}
	return out, nil
}

// Redeliver sends a delivery again now, once, under its webhook-id (a
// receiver that processed it drops the copy).
func (s *Service) Redeliver(ctx context.Context, tenantID, endpointID, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var enabled bool
		err := tx.QueryRow(ctx, `
			SELECT e.enabled FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.id = $1 AND e.id = $2 AND e.tenant_id = $3`, id, endpointID, tenantID).Scan(&enabled)
		if err != nil {
			return fmt.Errorf("webhook delivery %s: %w", id, db.NotFound(err))
		}
		if !enabled {
			return ErrDisabled
		}
		if _, err := s.jobs.InsertTx(ctx, tx, DeliverArgs{DeliveryID: id, Manual: true}, nil); err != nil {
			return fmt.Errorf("enqueue redelivery: %w", err)
		}
		return nil
	})
}

// SendTest delivers a webhook.test event to the endpoint (whatever its
// subscription), as any event: signed, retried, logged.
func (s *Service) SendTest(ctx context.Context, tenantID, endpointID uuid.UUID) (uuid.UUID, error) {
	id := db.NewID()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var enabled bool
		var seq int64
		err := tx.QueryRow(ctx, `
			UPDATE webhook_endpoints SET sequence = sequence + 1 WHERE id = $1 AND tenant_id = $2
			RETURNING enabled, sequence`, endpointID, tenantID).Scan(&enabled, &seq)
		if err != nil {
			return fmt.Errorf("webhook endpoint %s: %w", endpointID, db.NotFound(err))
		}
		if !enabled {
			return ErrDisabled
		}
		data, err := json.Marshal(map[string]any{"endpointId": endpointID, "message": "A test event from BoxOffice"})
		if err != nil {
			return err
		}
		body, err := json.Marshal(envelope{Type: TestType, Timestamp: time.Now().UTC(), Sequence: seq, Data: data})
		if err != nil {
			return fmt.Errorf("encode test event: %w", err)
		}
		return insert(ctx, tx, s.jobs, []delivery{{id: id, endpointID: endpointID, eventType: TestType, sequence: seq, body: string(body)}})
	})
	return id, err
}
