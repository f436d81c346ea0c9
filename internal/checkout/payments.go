package checkout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"boxoffice/internal/db"
	"boxoffice/internal/payment"
)

// attempt is a payment attempt with what the provider calls need.
type attempt struct {
	ID          uuid.UUID
	OrderID     uuid.UUID
	Key         string
	Method      string
	Status      string
	PaymentID   *string
	AmountCents int64
	Currency    string
	Provider    string
}

func (s *Service) loadAttempt(ctx context.Context, q db.DBTX, id uuid.UUID, lock bool) (*attempt, error) {
	sql := `
		SELECT a.id, a.order_id, a.provider_key, a.payment_method, a.status, a.provider_payment_id, o.amount_cents, o.currency,
		       a.provider
		FROM payment_attempts a JOIN orders o ON o.id = a.order_id WHERE a.id = $1`
	if lock {
		sql += ` FOR UPDATE OF a, o`
	}
	var a attempt
	err := q.QueryRow(ctx, sql, id).Scan(&a.ID, &a.OrderID, &a.Key, &a.Method, &a.Status, &a.PaymentID, &a.AmountCents, &a.Currency, &a.Provider)
	if err != nil {
		return nil, fmt.Errorf("payment attempt %s: %w", id, db.NotFound(err))
	}
	return &a, nil
}

// Authorize is the authorize job: one provider call, no lock held. A
// definitive answer is applied; an unknown one makes the attempt UNKNOWN and
// schedules a resolution by query with the same key before anything else.
func (s *Service) Authorize(ctx context.Context, attemptID uuid.UUID) error {
	a, err := s.loadAttempt(ctx, s.pool, attemptID, false)
	if err != nil {
		return err
	}
	if a.Status != "PENDING" {
		return nil // already decided (a retried job, or a webhook got there first)
	}
	_, err = s.authorize(ctx, a)
	return err
}

// authorize makes the provider call of a loaded attempt under its key and
// applies the answer; unknown reports an outcome that only a later query can
// tell.
func (s *Service) authorize(ctx context.Context, a *attempt) (unknown bool, err error) {
	p, err := s.providerOf(a.Provider).Authorize(ctx, payment.AuthorizeRequest{Key: a.Key, AmountCents: a.AmountCents,
		Currency: a.Currency, PaymentMethod: a.Method, OrderID: a.OrderID.String()})
	switch {
	case err == nil:
		s.metrics.PaymentEvent("answered") // whatever the answer: the call did not time out
		return false, s.Apply(ctx, a.ID, p)
	case errors.Is(err, payment.ErrRateLimited):
		s.metrics.PaymentEvent("rate_limited")
		return false, err // nothing happened at the provider: the same call is retried later
	case errors.Is(err, payment.ErrRejected):
		s.metrics.PaymentEvent("rejected")
		return false, s.fail(ctx, a.ID, "PAYMENT_REJECTED", err)
	default:
		s.metrics.PaymentEvent("unknown")
		s.logger.WarnContext(ctx, "authorization outcome unknown", "attempt", a.ID, "error", err)
		return true, s.markUnknown(ctx, a.ID, err)
	}
}

func (s *Service) markUnknown(ctx context.Context, attemptID uuid.UUID, cause error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			UPDATE payment_attempts SET status = 'UNKNOWN', last_error = $2, updated_at = now()
			WHERE id = $1 AND status IN ('PENDING', 'UNKNOWN')`, attemptID, cause.Error()); err != nil {
			return fmt.Errorf("mark attempt unknown: %w", err)
		}
		_, err := s.river.InsertTx(ctx, tx, ResolveArgs{AttemptID: attemptID}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Second)})
		return err
	})
}

// fail records a definitive failure of the attempt; the order becomes
// FAILED (the shopper may pay again while the hold lasts).
func (s *Service) fail(ctx context.Context, attemptID uuid.UUID, reason string, cause error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := s.loadAttempt(ctx, tx, attemptID, true)
		if err != nil {
			return err
		}
		if a.Status != "PENDING" && a.Status != "UNKNOWN" {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE payment_attempts SET status = 'DECLINED', last_error = $2, updated_at = now() WHERE id = $1`,
			attemptID, cause.Error()); err != nil {
			return fmt.Errorf("decline attempt: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE orders SET status = 'FAILED', reason = $2, updated_at = now() WHERE id = $1 AND status = 'PENDING_PAYMENT'`,
			a.OrderID, reason)
		return err
	})
}

// Resolve is the job for an UNKNOWN attempt, and the reconciler's call for a
// stale one: ask the provider with the same key. Not found means the
// authorization never happened, so it is made here, with the same key. It is
// not handed to an authorize job: one whose completion River lost (a database
// failover mid-batch) stays running until River's rescuer frees it, and being
// unique while live it would swallow the new one, leaving the order waiting.
// A provider still unreachable, or an outcome unknown again, is an error, so
// the job retries with backoff and the reconciler asks again.
func (s *Service) Resolve(ctx context.Context, attemptID uuid.UUID) error {
	a, err := s.loadAttempt(ctx, s.pool, attemptID, false)
	if err != nil {
		return err
	}
	if a.Status != "UNKNOWN" && a.Status != "PENDING" {
		return nil
	}
	p, err := s.providerOf(a.Provider).Get(ctx, a.Key)
	switch {
	case err == nil:
		return s.Apply(ctx, attemptID, p)
	case errors.Is(err, payment.ErrNotFound):
		unknown, err := s.authorize(ctx, a)
		if err == nil && unknown {
			err = errors.New("authorization outcome unknown again")
		}
		if err != nil {
			return fmt.Errorf("resolve attempt %s: %w", attemptID, err)
		}
		return nil
	default:
		return fmt.Errorf("resolve attempt %s: %w", attemptID, err)
	}
}

// Capture is the capture job of a confirmed order; River retries failures
// with backoff and the reconciler picks up what River gives up on.
func (s *Service) Capture(ctx context.Context, orderID uuid.UUID) error {
	var attemptID uuid.UUID
	var paymentID, key, status, capture, provider string
	err := s.pool.QueryRow(ctx, `
		SELECT a.id, a.provider_payment_id, a.provider_key, a.status, o.capture_status, a.provider
		FROM orders o JOIN payment_attempts a ON a.order_id = o.id AND a.status IN ('AUTHORIZED', 'CAPTURED')
		WHERE o.id = $1 AND o.confirmed_at IS NOT NULL`, orderID).Scan(&attemptID, &paymentID, &key, &status, &capture, &provider)
	if err != nil {
		return fmt.Errorf("order to capture %s: %w", orderID, db.NotFound(err))
	}
	if status == "CAPTURED" || capture == "CAPTURED" {
		return nil
	}
	p, err := s.providerOf(provider).Capture(ctx, paymentID, key+":capture")
	if err != nil {
		s.metrics.PaymentEvent("capture_failed")
		if _, dbErr := s.pool.Exec(ctx, `UPDATE orders SET capture_status = 'FAILED', updated_at = now() WHERE id = $1 AND capture_status <> 'CAPTURED'`,
			orderID); dbErr != nil {
			return dbErr
		}
		return fmt.Errorf("capture order %s: %w", orderID, err)
	}
	return s.Apply(ctx, attemptID, p)
}

// Void is the job that releases an authorization no order uses.
func (s *Service) Void(ctx context.Context, attemptID uuid.UUID) error {
	a, err := s.loadAttempt(ctx, s.pool, attemptID, false)
	if err != nil {
		return err
	}
	if a.Status != "AUTHORIZED" || a.PaymentID == nil {
		return nil
	}
	p, err := s.providerOf(a.Provider).Void(ctx, *a.PaymentID, a.Key+":void")
	if err != nil {
		return fmt.Errorf("void attempt %s: %w", attemptID, err)
	}
	s.metrics.PaymentEvent("voided")
	return s.Apply(ctx, attemptID, p)
}
