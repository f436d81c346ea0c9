package checkout

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
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
