package checkout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// ReconcileResult counts what one reconciliation pass did.
type ReconcileResult struct {
	Resolved       int // pending/unknown attempts asked about
	Voided         int // authorizations without a confirmed order, voided
	CaptureRetried int // confirmed orders whose capture is retried
	RefundsRetried int // refunds left pending or unknown, sent to their job again
	Cancellations  int // cancelled dates not finished, sent to their job again
}

// Reconcile is the periodic safety valve: attempts still PENDING or UNKNOWN
// after ResolveAfter are resolved with the provider; authorizations whose
// order did not confirm are voided; confirmed orders not captured get their
// capture retried. Each kind is counted in /metrics.
func (s *Service) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var res ReconcileResult
	ids, err := s.ids(ctx, `
		SELECT id FROM payment_attempts
		WHERE status IN ('PENDING', 'UNKNOWN') AND updated_at < now() - make_interval(secs => $1)
		ORDER BY updated_at LIMIT 500`, s.cfg.ResolveAfter.Seconds())
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		if err := s.Resolve(ctx, id); err != nil {
			s.logger.WarnContext(ctx, "reconcile: resolving attempt failed", "attempt", id, "error", err)
			continue
		}
		res.Resolved++
	}

	voids, err := s.ids(ctx, `
		SELECT a.id FROM payment_attempts a JOIN orders o ON o.id = a.order_id
		WHERE a.status = 'AUTHORIZED' AND o.confirmed_at IS NULL AND o.status <> 'PENDING_PAYMENT'
		LIMIT 500`)
	if err != nil {
		return res, err
	}
	captures, err := s.ids(ctx, `
		SELECT id FROM orders
		WHERE confirmed_at IS NOT NULL AND capture_status IN ('PENDING', 'FAILED') AND updated_at < now() - make_interval(secs => $1)
		LIMIT 500`, s.cfg.ResolveAfter.Seconds())
	if err != nil {
		return res, err
	}
	params := make([]river.InsertManyParams, 0, len(voids)+len(captures))
	for _, id := range voids {
		params = append(params, river.InsertManyParams{Args: VoidArgs{AttemptID: id}})
	}
	for _, id := range captures {
		params = append(params, river.InsertManyParams{Args: CaptureArgs{OrderID: id}})
	}
	if len(params) > 0 {
		if _, err := s.river.InsertMany(ctx, params); err != nil {
			return res, fmt.Errorf("reconcile: enqueue voids and captures: %w", err)
		}
	}
	res.Voided, res.CaptureRetried = len(voids), len(captures)
	if res.RefundsRetried, err = s.ReconcileRefunds(ctx); err != nil {
		return res, err
	}
	if res.Cancellations, err = s.ReconcileCancellations(ctx); err != nil {
		return res, err
	}
	s.metrics.Reconciled("resolved", res.Resolved)
	s.metrics.Reconciled("refund_retried", res.RefundsRetried)
	s.metrics.Reconciled("voided", res.Voided)
	s.metrics.Reconciled("capture_retried", res.CaptureRetried)
	s.metrics.Reconciled("cancellation_resumed", res.Cancellations)
	if res != (ReconcileResult{}) {
		s.logger.WarnContext(ctx, "payments reconciled", "resolved", res.Resolved, "voided", res.Voided,
			"capture_retried", res.CaptureRetried, "refunds_retried", res.RefundsRetried)
	}
	return res, nil
}

func (s *Service) ids(ctx context.Context, sql string, args ...any) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("reconcile query: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("reconcile query: %w", err)
	}
	return ids, nil
}
