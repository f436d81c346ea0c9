package checkout

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"boxoffice/internal/db"
)

// QueuePayments is the River queue of provider calls, apart from claims so
// a slow provider never delays seat claims.
const QueuePayments = "payments"

// uniqueWhileLive makes a job unique per args while it waits or runs, so the
// reconciler and webhooks can enqueue freely.
func uniqueWhileLive() river.InsertOpts {
	return river.InsertOpts{Queue: QueuePayments, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

// AuthorizeArgs calls the provider to authorize an attempt.
type AuthorizeArgs struct {
	AttemptID uuid.UUID `json:"attempt_id"`
}

func (AuthorizeArgs) Kind() string { return "payment_authorize" }

// InsertOpts puts it on the payments queue, unique while live.
func (AuthorizeArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// ResolveArgs asks the provider about an attempt whose outcome is unknown.
type ResolveArgs struct {
	AttemptID uuid.UUID `json:"attempt_id"`
}

func (ResolveArgs) Kind() string { return "payment_resolve" }

// InsertOpts puts it on the payments queue, unique while live.
func (ResolveArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// CaptureArgs captures a confirmed order's authorization.
type CaptureArgs struct {
	OrderID uuid.UUID `json:"order_id"`
}

func (CaptureArgs) Kind() string { return "payment_capture" }

// InsertOpts puts it on the payments queue, unique while live.
func (CaptureArgs) InsertOpts() river.InsertOpts {
	o := uniqueWhileLive()
	o.MaxAttempts = 10
	return o
}

// VoidArgs releases an authorization that no order can use.
type VoidArgs struct {
	AttemptID uuid.UUID `json:"attempt_id"`
}

func (VoidArgs) Kind() string { return "payment_void" }

// InsertOpts puts it on the payments queue, unique while live.
func (VoidArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// WebhookArgs processes a stored provider event.
type WebhookArgs struct {
	Provider string `json:"provider"`
	EventID  string `json:"event_id"`
}

func (WebhookArgs) Kind() string { return "payment_webhook" }

// InsertOpts puts it on the payments queue, unique while live.
func (WebhookArgs) InsertOpts() river.InsertOpts { return uniqueWhileLive() }

// keyed names a write done once per idempotency key: lookup finds the id
// the key made and what it was for (with args); the same key for another
// subject is a conflict.
type keyed struct {
	lookup  string
	args    []any
	subject uuid.UUID
	what    string
}

// onceByKey runs create in a fenced transaction unless the key was seen:
// then it answers with what the key made (replayed true), or
// ErrIdempotencyConflict when the key was used for another subject.
func (s *Service) onceByKey(ctx context.Context, k keyed, create func(pgx.Tx) (uuid.UUID, error)) (id uuid.UUID, replayed bool, err error) {
	err = db.BeginFenced(ctx, s.pool, func(tx pgx.Tx) error {
		var subject uuid.UUID
		err := tx.QueryRow(ctx, k.lookup, k.args...).Scan(&id, &subject)
		switch {
		case err == nil && subject == k.subject:
			replayed = true
			return nil
		case err == nil:
			return ErrIdempotencyConflict
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up %s by key: %w", k.what, err)
		}
		id, err = create(tx)
		return err
	})
	return id, replayed, err
}

// enqueueEach inserts one job per id (those unique while live are skipped
// while one is): the reconciler's way to hand work back to its jobs.
func (s *Service) enqueueEach(ctx context.Context, ids []uuid.UUID, job func(uuid.UUID) river.JobArgs, what string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: job(id)}
	}
	if _, err := s.river.InsertMany(ctx, params); err != nil {
		return 0, fmt.Errorf("reconcile %s: %w", what, err)
	}
	return len(ids), nil
}
