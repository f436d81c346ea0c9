// Package outbox names the events BoxOffice writes in its transactions
// (holds created, expired, released; orders confirmed) as they leave the
// database for their consumers.
package outbox

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
)

// Event is one outbox row.
type Event struct {
	ID       int64           `json:"id"`
	TenantID uuid.UUID       `json:"tenantId"`
	Topic    string          `json:"topic"`
	Payload  json.RawMessage `json:"payload"`
}

// Publisher hands events to an external queue (SQS). Publishing twice is
// allowed: consumers are idempotent.
type Publisher interface {
	PublishEvents(ctx context.Context, events []Event) error
}
