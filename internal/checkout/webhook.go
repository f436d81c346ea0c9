package checkout

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// WebhookEvent is a verified provider event.
type WebhookEvent struct {
	Provider  string
	ID        string
	Type      string
	PaymentID string
	// Key is the authorization's idempotency key, when the event carries it.
	Key     string
	Payload []byte
}

// RecordWebhook stores a verified event durably and enqueues its processing
// in one transaction. It reports false for an event already stored: the
// duplicate is acknowledged and does nothing.
func (s *Service) RecordWebhook(ctx context.Context, ev WebhookEvent) (bool, error) {
	stored := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_events (provider, event_id, type, payment_id, payment_key, payload) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (provider, event_id) DO NOTHING`, ev.Provider, ev.ID, ev.Type, nullable(ev.PaymentID), nullable(ev.Key), ev.Payload)
		if err != nil {
			return fmt.Errorf("store webhook: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		stored = true
		_, err = s.river.InsertTx(ctx, tx, WebhookArgs{Provider: ev.Provider, EventID: ev.ID}, nil)
		return err
	})
	return stored, err
}

// ProcessWebhook handles a stored event. The event only says that something
// happened; what happened is re-read from the provider, so events arriving
// late, twice or out of order all end in the provider's current state.
func (s *Service) ProcessWebhook(ctx context.Context, provider, eventID string) error {
	var paymentID, paymentKey *string
	err := s.pool.QueryRow(ctx, `SELECT payment_id, payment_key FROM webhook_events WHERE provider = $1 AND event_id = $2`,
		provider, eventID).Scan(&paymentID, &paymentKey)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", eventID, db.NotFound(err))
	}
	var attemptID uuid.UUID
	var key string
	err = s.pool.QueryRow(ctx, `
		SELECT id, provider_key FROM payment_attempts
		WHERE provider = $1 AND (provider_payment_id = $2 OR provider_key = $3)
		LIMIT 1`, provider, paymentID, paymentKey).Scan(&attemptID, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not ours (another system on the same account): nothing to do.
		s.logger.WarnContext(ctx, "webhook for an unknown payment", "provider", provider, "event", eventID)
		return s.markProcessed(ctx, provider, eventID)
	}
	if err != nil {
		return fmt.Errorf("attempt of webhook %s: %w", eventID, err)
	}
	p, err := s.providerOf(provider).Get(ctx, key)
	if err != nil {
		return fmt.Errorf("re-read payment for webhook %s: %w", eventID, err)
	}
	if err := s.Apply(ctx, attemptID, p); err != nil {
		return err
	}
	return s.markProcessed(ctx, provider, eventID)
}

func (s *Service) markProcessed(ctx context.Context, provider, eventID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_events SET processed_at = now() WHERE provider = $1 AND event_id = $2`, provider, eventID)
	return err
}
