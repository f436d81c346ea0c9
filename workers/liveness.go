package workers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"boxoffice/internal/metrics"
	"boxoffice/internal/riverjobs"
)

// Liveness lets the other worker processes see at once that this one died,
// and gives back the jobs of those that did.
//
// Why: a job whose worker process is killed stays `running`. A claim job is
// unique while it runs, so the product's new requests get no job and wait;
// River's rescuer frees it only after RescueStuckJobsAfter, runs on the
// leader every 30 s, and a killed leader is replaced after ~15 s. An on-sale
// cannot lose minutes to one crashed process.
//
// How: every worker process holds a session-level advisory lock named after
// its River client ID on a connection of its own. PostgreSQL frees that lock
// the moment the connection dies, with the process. Every second each live
// process lists running jobs; a job whose client's lock can be taken has no
// live worker, and River's own rescue operation makes it available again.
// A process that starts rescues at once, so with no worker alive the jobs
// resume as soon as one starts.
//
// If a live process only lost its lock connection (a database restart), its
// jobs may run twice: every consumer here is idempotent, and the claim
// transaction is arbitrated by the database.
type Liveness struct {
	pool     *pgxpool.Pool
	client   *river.Client[pgx.Tx]
	metrics  *metrics.Metrics
	logger   *slog.Logger
	interval time.Duration

	conn *pgx.Conn // holds this process's lock
}

// LivenessInterval is how often live processes look for dead ones' jobs.
const LivenessInterval = time.Second

// NewLiveness returns the liveness of client's process.
func NewLiveness(pool *pgxpool.Pool, client *river.Client[pgx.Tx], m *metrics.Metrics, logger *slog.Logger) *Liveness {
	return &Liveness{pool: pool, client: client, metrics: m, logger: logger, interval: LivenessInterval}
}

// livenessKey is the advisory lock key of a River client. The prefix keeps
// it apart from any other advisory lock in the database.
func livenessKey(clientID string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("boxoffice/worker-alive/" + clientID))
	return int64(h.Sum64()) //nolint:gosec // a lock key: wrapping is fine
}

// Lock takes this process's liveness lock. Call it before the River client
// starts, so that no job this process runs is ever without it.
func (l *Liveness) Lock(ctx context.Context) error {
	if l.conn != nil {
		_ = l.conn.Close(ctx)
		l.conn = nil
	}
	pc, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("liveness lock connection: %w", err)
	}
	// Hijacked, the connection is ours for the process's life: the pool
	// neither recycles it nor counts it.
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, livenessKey(l.client.ID())); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("take liveness lock: %w", err)
	}
	l.conn = conn
	return nil
}

// Run rescues dead processes' jobs every interval until ctx ends, keeping
// this process's lock (retaken after a lost connection). Call Lock first.
// The lock's connection is pinged every interval on its own, so a slow
// rescue never makes this process look frozen (FrozenAfter).
func (l *Liveness) Run(ctx context.Context) error {
	defer func() {
		if l.conn != nil {
			_ = l.conn.Close(context.WithoutCancel(ctx))
		}
	}()
	rescued := make(chan struct{})
	go func() {
		defer close(rescued)
		l.every(ctx, func() {
			if _, err := l.RescueDead(ctx); err != nil && ctx.Err() == nil {
				l.logger.WarnContext(ctx, "looking for dead workers' jobs failed", "error", err)
			}
		})
	}()
	l.every(ctx, func() {
		if l.conn == nil || l.conn.Ping(ctx) != nil {
			if ctx.Err() != nil {
				return
			}
			if err := l.Lock(ctx); err != nil {
				l.logger.WarnContext(ctx, "liveness lock lost; retrying", "error", err)
			}
		}
	})
	<-rescued
	return nil
}

// every runs f now and then every interval until ctx ends.
func (l *Liveness) every(ctx context.Context, f func()) {
	tick := time.NewTicker(l.interval)
	defer tick.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RescueDead makes the running jobs of dead processes available again and
// returns how many it rescued.
func (l *Liveness) RescueDead(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := l.client.JobList(ctx, river.NewJobListParams().States(rivertype.JobStateRunning).First(10_000))
	if err != nil {
		return 0, fmt.Errorf("list running jobs: %w", err)
	}
	byClient := map[string][]*rivertype.JobRow{}
	for _, job := range res.Jobs {
		if len(job.AttemptedBy) == 0 || job.AttemptedAt == nil {
			continue
		}
		owner := job.AttemptedBy[len(job.AttemptedBy)-1]
		if owner != l.client.ID() {
			byClient[owner] = append(byClient[owner], job)
		}
	}
	rescued := 0
	for owner, jobs := range byClient {
		n, err := l.rescueIfDead(ctx, owner, jobs)
		if err != nil {
			return rescued, err
		}
		rescued += n
	}
	return rescued, nil
}

// rescueIfDead rescues jobs when owner's liveness lock is free. The lock is
// tried inside the transaction and so released with it.
func (l *Liveness) rescueIfDead(ctx context.Context, owner string, jobs []*rivertype.JobRow) (int, error) {
	rescued := 0
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		free, err := l.ownerGone(ctx, tx, owner)
		if err != nil || !free {
			return err
		}
		now := time.Now()
		params := &riverdriver.JobRescueManyParams{Schema: l.client.Schema()}
		// Only the attempts seen above: a job another process has rescued
		// and started again meanwhile has a later attempted_at.
		var horizon time.Time
		for _, job := range jobs {
			msg, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: job.Attempt,
				Error: "worker process " + owner + " died while running the job (its liveness lock was free)"})
			if err != nil {
				return err
			}
			params.ID = append(params.ID, job.ID)
			params.Error = append(params.Error, msg)
			params.FinalizedAt = append(params.FinalizedAt, nil)
			params.ScheduledAt = append(params.ScheduledAt, now)
			params.State = append(params.State, string(rivertype.JobStateAvailable))
			horizon = maxTime(horizon, *job.AttemptedAt)
		}
		params.StuckHorizon = horizon.Add(time.Microsecond)
		if _, err := l.client.Driver().UnwrapExecutor(tx).JobRescueMany(ctx, params); err != nil {
			return fmt.Errorf("rescue jobs of %s: %w", owner, err)
		}
		if err := l.refundAttempts(ctx, tx, params.ID); err != nil {
			return err
		}
		rescued = len(jobs)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if rescued > 0 {
		kinds := make([]string, 0, len(jobs))
		for _, j := range jobs {
			kinds = append(kinds, j.Kind)
		}
		slices.Sort(kinds)
		l.logger.WarnContext(ctx, "rescued the jobs of a dead worker process",
			"worker", owner, "jobs", rescued, "kinds", slices.Compact(kinds))
		l.metrics.JobsRescued(rescued)
	}
	return rescued, nil
}

// deathsForgiven is how many times a job's worker may die under it without
// the attempt counting: beyond that the job itself is the likelier cause
// (it kills its worker), and its attempts run out as River's do.
const deathsForgiven = 10

// refundAttempts gives the rescued jobs back the attempt their dead worker
// used, as River does for a job interrupted by its client's stop: a job is
// not one step closer to being discarded because a process was killed.
// River counts rescues in the job's metadata (river:rescue_count, raised by
// JobRescueMany just before).
func (l *Liveness) refundAttempts(ctx context.Context, tx pgx.Tx, ids []int64) error {
	return riverjobs.RefundAttempts(ctx, tx, l.client.Schema(), ids, deathsForgiven)
}

// FrozenAfter is how long a process's liveness connection may stay silent
// before the other processes count it dead. A live process pings it every
// LivenessInterval; one that is frozen (SIGSTOP, a host paused) keeps its
// connection and so its lock, and its products would wait for as long as it
// is frozen.
const FrozenAfter = 5 * time.Second

// ownerGone takes owner's liveness lock in tx when it is free (its process
// died) or when its holder has been silent for FrozenAfter: that session is
// ended first (a frozen process's transactions end by themselves, see
// idle_in_transaction_session_timeout in internal/app). A frozen process
// that wakes up finds its jobs rescued; what it still does is arbitrated by
// the database, as for any job run twice.
func (l *Liveness) ownerGone(ctx context.Context, tx pgx.Tx, owner string) (bool, error) {
	key := livenessKey(owner)
	var free bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, key).Scan(&free); err != nil {
		return false, fmt.Errorf("try liveness lock of %s: %w", owner, err)
	}
	if free {
		return true, nil
	}
	// A bigint advisory key is (classid, objid) = (high, low) 32 bits.
	var ended bool
	err := tx.QueryRow(ctx, `
		SELECT coalesce(bool_or(pg_terminate_backend(a.pid, 2000)), false)
		FROM pg_locks k JOIN pg_stat_activity a ON a.pid = k.pid
		WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1
		  AND k.classid = (($1::bigint >> 32) & 4294967295)::oid AND k.objid = ($1::bigint & 4294967295)::oid
		  AND a.state = 'idle' AND a.state_change < now() - make_interval(secs => $2)`,
		key, FrozenAfter.Seconds()).Scan(&ended)
	if err != nil {
		return false, fmt.Errorf("look for a frozen holder of %s's liveness lock: %w", owner, err)
	}
	if !ended {
		return false, nil
	}
	l.logger.WarnContext(ctx, "a worker process is frozen: its liveness session ended", "worker", owner,
		"silent_for_more_than", FrozenAfter)
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, key).Scan(&free); err != nil {
		return false, fmt.Errorf("try liveness lock of %s: %w", owner, err)
	}
	return free, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// IsLeader reports whether client is River's elected leader, the one
// process that reports the database-derived gauges.
func IsLeader(ctx context.Context, client *river.Client[pgx.Tx]) bool {
	leader, err := client.Driver().GetExecutor().LeaderGetElectedLeader(ctx,
		&riverdriver.LeaderGetElectedLeaderParams{Schema: client.Schema()})
	return err == nil && leader != nil && leader.LeaderID == client.ID()
}
