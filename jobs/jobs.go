// Package jobs holds BoxOffice's periodic jobs, inserted by River's elected
// leader: the hold sweeper, the invariant auditor, the queue-gap repair, the
// payment reconciler, the outbox relay, the waiting lists' offers and the
// webhook log's pruning, each
// unique while it waits or runs and with a Timeout. (The waiting rooms' admission is no job: every
// work process runs it, see waitingroom.Service.RunAdmission.)
package jobs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"boxoffice/internal/checkout"
	"boxoffice/internal/metrics"
	"boxoffice/internal/outbox"
	"boxoffice/internal/reservation"
	"boxoffice/internal/webhook"
)

// The River queues of the periodic jobs, apart from claims so that a long
// drain never delays expiry. The one-second jobs (admission, outbox relay)
// have a queue of their own: during an on-sale, admission must not wait
// behind an audit or a repair pass that takes half a minute.
const (
	// QueueMaintenance runs the sweeper, auditor, repair and reconciler.
	QueueMaintenance = "maintenance"
	// QueueTicks runs the jobs that run every second.
	QueueTicks = "ticks"
)

// periodicOpts makes a periodic job unique while it waits or runs — a slow
// pass is not joined by a pile of copies — on its queue, with one attempt
// (the next tick is the retry).
func periodicOpts(queue string) river.InsertOpts {
	return river.InsertOpts{Queue: queue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRunning, rivertype.JobStateScheduled},
	}}
}

// Config configures the periodic jobs.
type Config struct {
	// SweepInterval is how often expired holds are swept. Required.
	SweepInterval time.Duration
	// AuditInterval is how often invariants are audited. Required.
	AuditInterval time.Duration
	// RepublishAfter is how old a never-published request must be before
	// the repair job publishes it. Required.
	RepublishAfter time.Duration
	// RedeliveryWindow is how long a published request may stay QUEUED
	// before the repair job publishes it again. Required.
	RedeliveryWindow time.Duration
	// RepairInterval is how often the repair job runs. Required.
	RepairInterval time.Duration
	// ReconcileInterval is how often payments are reconciled (default 30s).
	ReconcileInterval time.Duration
	// RelayInterval is how often the outbox is relayed (default 1s).
	RelayInterval time.Duration
	// WaitlistInterval is how often the waiting lists are served
	// (default 1s).
	WaitlistInterval time.Duration
	// OfferTTL is how long a waiting-list offer lasts (default 15m).
	OfferTTL time.Duration
}

// Deps are what the jobs work with.
type Deps struct {
	Pool    *pgxpool.Pool
	Claimer *reservation.Claimer
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	Config  Config
	// Enqueuer republishes for the repair job; nil means River's own.
	Enqueuer reservation.Enqueuer
	// Checkout, when set, is reconciled and its outbox relayed.
	Checkout *checkout.Service
	// Events, when set (the SQS backend), receives the outbox instead of
	// River jobs.
	Events outbox.Publisher
	// Webhooks, when set, has its delivery log pruned.
	Webhooks *webhook.Service
	// MaxSweep caps the holds expired per product per transaction. Default 10,000.
	MaxSweep int
	// BeforeRun, when set, is called as each periodic job starts (tests
	// use it to make maintenance slow).
	BeforeRun func(ctx context.Context, kind string)
}

func (d Deps) beforeRun(ctx context.Context, kind string) {
	if d.BeforeRun != nil {
		d.BeforeRun(ctx, kind)
	}
}

// Register adds the periodic jobs' workers to workers.
func Register(workers *river.Workers, d Deps) {
	if d.MaxSweep == 0 {
		d.MaxSweep = 10_000
	}
	river.AddWorker(workers, &ExpireHoldsWorker{deps: d})
	river.AddWorker(workers, &AuditWorker{deps: d})
	river.AddWorker(workers, &RepairWorker{deps: d})
	river.AddWorker(workers, &OutboxRelayWorker{deps: d})
	river.AddWorker(workers, &WaitlistWorker{deps: d})
	if d.Checkout != nil {
		river.AddWorker(workers, &ReconcileWorker{deps: d})
	}
	if d.Webhooks != nil {
		river.AddWorker(workers, &PruneWebhooksWorker{deps: d})
	}
}

// Periodic returns the schedule of the periodic jobs; withCheckout adds the
// payment reconciler, withWebhooks the webhook log's pruning. (Admission
// is not one: see waitingroom.Service.RunAdmission.)
func Periodic(c Config, withCheckout, withWebhooks bool) []*river.PeriodicJob {
	// Queue, uniqueness and attempts come from each job's InsertOpts.
	every := func(d time.Duration, args river.JobArgs) *river.PeriodicJob {
		return river.NewPeriodicJob(river.PeriodicInterval(d),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{RunOnStart: true})
	}
	out := []*river.PeriodicJob{
		every(c.SweepInterval, ExpireHoldsArgs{}),
		every(c.AuditInterval, AuditArgs{}),
		every(c.RepairInterval, RepairArgs{}),
	}
	out = append(out, every(cmp.Or(c.RelayInterval, time.Second), OutboxRelayArgs{}),
		every(cmp.Or(c.WaitlistInterval, time.Second), WaitlistArgs{}))
	if withCheckout {
		out = append(out, every(cmp.Or(c.ReconcileInterval, 30*time.Second), ReconcileArgs{}))
	}
	if withWebhooks {
		out = append(out, every(time.Hour, PruneWebhooksArgs{}))
	}
	return out
}

// queryTimeout bounds each periodic job run (River applies it: see each
// worker's Timeout).
const queryTimeout = 30 * time.Second

// ExpireHoldsArgs runs the hold sweeper.
type ExpireHoldsArgs struct{}

func (ExpireHoldsArgs) Kind() string { return "expire_holds" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (ExpireHoldsArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueMaintenance) }

// Timeout bounds one run of the job.
func (*ExpireHoldsWorker) Timeout(*river.Job[ExpireHoldsArgs]) time.Duration { return queryTimeout }

// ExpireHoldsWorker sweeps expired holds.
type ExpireHoldsWorker struct {
	river.WorkerDefaults[ExpireHoldsArgs]
	deps Deps
}

// Work runs one sweep.
func (w *ExpireHoldsWorker) Work(ctx context.Context, _ *river.Job[ExpireHoldsArgs]) error {
	w.deps.beforeRun(ctx, "expire_holds")
	res, err := w.deps.Claimer.ExpireHolds(ctx, w.deps.MaxSweep)
	if err != nil {
		return err
	}
	if res.HoldsExpired > 0 || res.ClaimsFreed > 0 {
		w.deps.Logger.InfoContext(ctx, "holds expired", "products", res.Products,
			"holds", res.HoldsExpired, "numbers_freed", res.ClaimsFreed)
	}
	return nil
}

// WaitlistArgs serves the waiting lists: offers to the next in line.
type WaitlistArgs struct{}

func (WaitlistArgs) Kind() string { return "serve_waitlists" }

// InsertOpts puts the job on the one-second queue, unique while it waits
// or runs: an offer should follow the freed seats within a tick.
func (WaitlistArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueTicks) }

// Timeout bounds one run of the job.
func (*WaitlistWorker) Timeout(*river.Job[WaitlistArgs]) time.Duration { return queryTimeout }

// WaitlistWorker offers numbers that came back to the waiting lists and
// ends the offers that ran out.
type WaitlistWorker struct {
	river.WorkerDefaults[WaitlistArgs]
	deps Deps
}

// Work serves every list once.
func (w *WaitlistWorker) Work(ctx context.Context, _ *river.Job[WaitlistArgs]) error {
	w.deps.beforeRun(ctx, "serve_waitlists")
	res, err := w.deps.Claimer.ServeWaitlists(ctx, cmp.Or(w.deps.Config.OfferTTL, 15*time.Minute), w.deps.MaxSweep)
	if res.Offers > 0 || res.Ended > 0 {
		w.deps.Logger.InfoContext(ctx, "waiting lists served", "offers", res.Offers, "numbers", res.Offered,
			"offers_ended", res.Ended)
	}
	return err
}

// AuditArgs runs the invariant auditor.
type AuditArgs struct{}

func (AuditArgs) Kind() string { return "audit_invariants" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (AuditArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueMaintenance) }

// Timeout bounds one run of the job.
func (*AuditWorker) Timeout(*river.Job[AuditArgs]) time.Duration { return queryTimeout }

// AuditWorker checks every product's inventory invariants and alarms (log at
// error level, and a counter that must stay 0) on any violation.
type AuditWorker struct {
	river.WorkerDefaults[AuditArgs]
	deps Deps
}

// Work runs one audit.
func (w *AuditWorker) Work(ctx context.Context, _ *river.Job[AuditArgs]) error {
	w.deps.beforeRun(ctx, "audit_invariants")
	violations, products, err := reservation.AuditAll(ctx, w.deps.Pool, checkout.AuditSales)
	if err != nil {
		return err
	}
	for _, v := range violations {
		w.deps.Logger.ErrorContext(ctx, "INVARIANT VIOLATION", "product", v.ProductID, "rule", v.Rule, "detail", v.Detail)
	}
	w.deps.Metrics.InvariantViolations(len(violations))
	w.deps.Logger.DebugContext(ctx, "invariants audited", "products", products, "violations", len(violations))
	return nil
}

// RepairArgs runs the commit–enqueue gap repair.
type RepairArgs struct{}

func (RepairArgs) Kind() string { return "repair_queue_gaps" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (RepairArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueMaintenance) }

// Timeout bounds one run of the job.
func (*RepairWorker) Timeout(*river.Job[RepairArgs]) time.Duration { return queryTimeout }

// RepairWorker publishes again the requests that fell between a commit and
// the queue:
//   - never published: committed, but the publish after commit failed or
//     the process died first (SQS), older than Config.RepublishAfter;
//   - published but still QUEUED after Config.RedeliveryWindow: the message
//     or job was lost (a River job discarded after repeated failures or
//     deleted, an SQS message purged) — unless the request's message is in
//     the dead-letter queue, which is the operator's to redrive.
//
// Publishing twice is harmless: River's claim job is unique per product and
// the SQS consumer deletes messages of decided requests.
type RepairWorker struct {
	river.WorkerDefaults[RepairArgs]
	deps Deps
}

// repairLimit caps the requests republished per run.
const repairLimit = 10_000

// Work runs one repair pass.
func (w *RepairWorker) Work(ctx context.Context, _ *river.Job[RepairArgs]) error {
	w.deps.beforeRun(ctx, "repair_queue_gaps")
	d := w.deps
	if d.Enqueuer == nil {
		d.Enqueuer = reservation.RiverEnqueuer{Client: river.ClientFromContext[pgx.Tx](ctx)}
	}
	_, err := Repair(ctx, d)
	return err
}

// RepairResult counts what one repair pass published again.
type RepairResult struct {
	Unpublished int
	Stale       int
}

// Repair runs one repair pass with d.Enqueuer (required).
func Repair(ctx context.Context, d Deps) (RepairResult, error) {
	refs, unpublished, err := reservation.ToRepair(ctx, d.Pool, d.Config.RepublishAfter, d.Config.RedeliveryWindow, repairLimit)
	if err != nil || len(refs) == 0 {
		return RepairResult{}, err
	}
	if err := d.Enqueuer.Publish(ctx, refs); err != nil {
		return RepairResult{}, fmt.Errorf("republish %d requests: %w", len(refs), err)
	}
	if d.Enqueuer.Transactional() {
		// River's claim job carries no request: mark the requests so each is
		// counted once per window rather than on every pass.
		ids := make([]uuid.UUID, len(refs))
		for i, r := range refs {
			ids[i] = r.ID
		}
		if err := reservation.MarkEnqueued(ctx, d.Pool, ids); err != nil {
			return RepairResult{}, err
		}
	}
	res := RepairResult{Unpublished: unpublished, Stale: len(refs) - unpublished}
	d.Metrics.Repaired("unpublished", res.Unpublished)
	d.Metrics.Repaired("stale", res.Stale)
	d.Logger.WarnContext(ctx, "queue gaps repaired", "unpublished", res.Unpublished, "stale", res.Stale)
	return res, nil
}

// ReconcileArgs runs the payment reconciler.
type ReconcileArgs struct{}

func (ReconcileArgs) Kind() string { return "reconcile_payments" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (ReconcileArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueMaintenance) }

// Timeout bounds one run of the job.
func (*ReconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return 2 * queryTimeout }

// ReconcileWorker runs checkout's reconciliation pass.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	deps Deps
}

// Work runs one pass.
func (w *ReconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	w.deps.beforeRun(ctx, "reconcile_payments")
	_, err := w.deps.Checkout.Reconcile(ctx)
	return err
}

// PruneWebhooksArgs prunes the webhook delivery log.
type PruneWebhooksArgs struct{}

func (PruneWebhooksArgs) Kind() string { return "prune_webhook_log" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (PruneWebhooksArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueMaintenance) }

// Timeout bounds one run of the job.
func (*PruneWebhooksWorker) Timeout(*river.Job[PruneWebhooksArgs]) time.Duration {
	return 2 * queryTimeout
}

// PruneWebhooksWorker deletes deliveries older than webhook.LogRetention.
type PruneWebhooksWorker struct {
	river.WorkerDefaults[PruneWebhooksArgs]
	deps Deps
}

// Work runs one pass.
func (w *PruneWebhooksWorker) Work(ctx context.Context, _ *river.Job[PruneWebhooksArgs]) error {
	w.deps.beforeRun(ctx, "prune_webhook_log")
	n, err := w.deps.Webhooks.Prune(ctx, time.Now().Add(-webhook.LogRetention))
	if n > 0 {
		w.deps.Logger.InfoContext(ctx, "webhook log pruned", "deliveries", n)
	}
	return err
}

// OutboxRelayArgs runs the outbox relay.
type OutboxRelayArgs struct{}

func (OutboxRelayArgs) Kind() string { return "relay_outbox" }

// InsertOpts puts the job on its queue, unique while it waits or runs.
func (OutboxRelayArgs) InsertOpts() river.InsertOpts { return periodicOpts(QueueTicks) }

// Timeout bounds one run of the job.
func (*OutboxRelayWorker) Timeout(*river.Job[OutboxRelayArgs]) time.Duration { return queryTimeout }

// OutboxRelayWorker publishes outbox rows to their consumers. With River
// (default) it does so in the transaction that marks them published, so each
// row is handed on once: order.confirmed becomes a job that mails the
// tickets, order.refunded one that tells the buyer, event.changed one
// that tells every ticket holder, and every public event a webhook
// delivery to each endpoint subscribed to it (webhook.Fanout); topics
// without a consumer are marked published as they are. With
// the SQS backend every row goes to the events queue, and rows are marked
// after the send — no lock is held across that call, so a crash in between
// sends a row twice, which consumers absorb.
type OutboxRelayWorker struct {
	river.WorkerDefaults[OutboxRelayArgs]
	deps Deps
}

// Work relays up to 500 rows.
func (w *OutboxRelayWorker) Work(ctx context.Context, _ *river.Job[OutboxRelayArgs]) error {
	w.deps.beforeRun(ctx, "relay_outbox")
	client := river.ClientFromContext[pgx.Tx](ctx)
	if w.deps.Events != nil {
		_, err := RelayToQueue(ctx, w.deps.Pool, w.deps.Events, client)
		return err
	}
	return pgx.BeginFunc(ctx, w.deps.Pool, func(tx pgx.Tx) error {
		events, err := outbox.Pending(ctx, tx, relayBatch, true)
		if err != nil || len(events) == 0 {
			return err
		}
		ids := make([]int64, len(events))
		var params []river.InsertManyParams
		for i, ev := range events {
			ids[i] = ev.ID
			if w.deps.Checkout != nil {
				if args := checkout.JobFor(ev); args != nil {
					params = append(params, river.InsertManyParams{Args: args})
				}
			}
		}
		if len(params) > 0 {
			if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
				return fmt.Errorf("relay outbox: %w", err)
			}
		}
		if err := webhook.Fanout(ctx, tx, client, events); err != nil {
			return err
		}
		return outbox.MarkPublished(ctx, tx, ids)
	})
}

// relayBatch is how many outbox rows one relay pass hands on.
const relayBatch = 500

// RelayToQueue publishes up to relayBatch unpublished outbox rows to an
// external queue and then, in one transaction, makes their webhook
// deliveries (with client) and marks them published, returning how many it
// relayed.
func RelayToQueue(ctx context.Context, pool *pgxpool.Pool, events outbox.Publisher, client *river.Client[pgx.Tx]) (int, error) {
	batch, err := outbox.Pending(ctx, pool, relayBatch, false)
	if err != nil || len(batch) == 0 {
		return 0, err
	}
	if err := events.PublishEvents(ctx, batch); err != nil {
		return 0, err
	}
	ids := make([]int64, len(batch))
	for i, ev := range batch {
		ids[i] = ev.ID
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := webhook.Fanout(ctx, tx, client, batch); err != nil {
			return err
		}
		return outbox.MarkPublished(ctx, tx, ids)
	})
	if err != nil {
		return 0, err
	}
	return len(batch), nil
}
