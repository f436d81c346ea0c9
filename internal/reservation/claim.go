package reservation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	codelist "boxoffice/internal/codes"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/metrics"
	"boxoffice/internal/outbox"
	"boxoffice/internal/product"
	"boxoffice/internal/tracing"
	"boxoffice/internal/waitlist"
	"boxoffice/internal/wake"
)

// Claimer runs the claim transaction. It is the only writer of new claims,
// and every queue backend (River worker, SQS consumer, repair job) calls it.
type Claimer struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	metrics *metrics.Metrics

	// layouts caches the parsed seat layout per product and layout
	// version: a seat map changes only until the first hold, and parsing a
	// stadium's on every batch would cost more than the claim.
	layouts sync.Map // layoutKey -> []product.Row

	rngMu sync.Mutex
	rng   *rand.Rand

	limiter *limiter
	tracer  trace.Tracer
	// tenantClaims caps a tenant's claim transactions running at once,
	// across the fleet (0: no cap); see ClaimerOptions.TenantClaims.
	tenantClaims int

	// BeforeCommit, when set, runs just before each claim transaction commits;
	// an error rolls the transaction back. Tests use it to kill a worker
	// mid-batch.
	BeforeCommit func(ctx context.Context) error
}

// ClaimerOptions tunes a Claimer; the zero value claims without limits or
// tracing.
type ClaimerOptions struct {
	// Limits caps the numbers claimed per second.
	Limits Limits
	// TenantClaims caps how many of one tenant's claim transactions run at
	// once across every process (0: no cap). Claims of one product already
	// run one at a time; a tenant selling many products at once could
	// otherwise keep as many transactions running as there are workers and
	// take the database's cores from everyone else's sales. The synchronous
	// mode's claims, inside requests, are not capped.
	TenantClaims int
	// Tracer traces claim transactions (nil: not traced).
	Tracer trace.TracerProvider
}

// NewClaimer returns a Claimer.
func NewClaimer(pool *pgxpool.Pool, logger *slog.Logger, m *metrics.Metrics, o ClaimerOptions) *Claimer {
	return &Claimer{
		pool:         pool,
		logger:       logger,
		metrics:      m,
		rng:          rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		limiter:      newLimiter(o.Limits),
		tenantClaims: o.TenantClaims,
		tracer:       tracing.Tracer(o.Tracer),
	}
}

// BatchResult summarises one claim transaction.
type BatchResult struct {
	Requests int // requests decided
	Held     int // of which now HELD
	Numbers  int // numbers claimed

	decisions []decision
	// floor is where the next scan of the product's queue may start
	// (lockQueued); zero when this batch does not know.
	floor uint64
}

// errLostRace means a planned number was taken by another transaction between
// planning and insert; the batch is planned again from a fresh snapshot.
var errLostRace = errors.New("lost a number to a concurrent claim")

const maxClaimAttempts = 5

// ClaimBatch decides up to limit QUEUED requests of one product, oldest first,
// in one transaction. It returns a zero result when none is left to take.
func (c *Claimer) ClaimBatch(ctx context.Context, productID uuid.UUID, limit int) (BatchResult, error) {
	return c.claimFrom(ctx, productID, limit, 0)
}

// claimFrom is ClaimBatch scanning the queue from floor (0: the front), as
// a drain does with the floor its previous batch returned.
func (c *Claimer) claimFrom(ctx context.Context, productID uuid.UUID, limit int, floor uint64) (BatchResult, error) {
	return c.claim(ctx, productID, selection{limit: limit, floor: floor})
}

// ClaimRequests decides the given requests of one product that are still
// QUEUED and not locked by another claim, in arrival order, in one
// transaction. Queue consumers that receive request ids (SQS) use it;
// requests already decided are skipped, which makes redelivery harmless.
func (c *Claimer) ClaimRequests(ctx context.Context, productID uuid.UUID, ids []uuid.UUID) (BatchResult, error) {
	// Several consumers may hold messages of one product: they take turns
	// on its inventory row from the start, instead of planning against the
	// same bitmap and colliding (and deadlocking on each other's claims).
	return c.claim(ctx, productID, selection{ids: ids, limit: len(ids), lockFirst: true})
}

// selection says which QUEUED requests a claim transaction takes: the
// oldest limit of the product, or only those with the given ids.
type selection struct {
	limit int
	ids   []uuid.UUID
	// floor skips the queue's requests of transactions older than it
	// (lockQueued says why that is safe).
	floor uint64
	// lockFirst takes the product's inventory row lock before anything
	// else: the claim then waits for any other claim of the product and
	// reads a bitmap no one else is changing, so it cannot lose a race.
	// SQS consumers always do (two on one product kept colliding with each
	// other's next batch until the attempts ran out), and so does a retry.
	lockFirst bool
}

func (c *Claimer) claim(ctx context.Context, productID uuid.UUID, sel selection) (res BatchResult, err error) {
	ctx, span := c.tracer.Start(ctx, "reservation.claim", trace.WithAttributes(attribute.String("product.id", productID.String())))
	defer func() { endClaimSpan(span, res, err) }()
	for attempt := 1; ; attempt++ {
		start := time.Now()
		var res BatchResult
		sel.lockFirst = sel.lockFirst || attempt > 1
		err := db.BeginFenced(ctx, c.pool, func(tx pgx.Tx) error {
			if err := c.takeTenantSlot(ctx, tx, productID, sel.floor); err != nil {
				return err
			}
			var err error
			res, err = c.claimTx(ctx, tx, productID, sel)
			return err
		})
		if err == nil {
			if res.Requests > 0 {
				c.metrics.ClaimBatch(res.Requests, res.Held, time.Since(start))
			}
			// Wait after the commit, never while holding locks.
			if err := c.limiter.wait(ctx, productID, res.Numbers); err != nil {
				return res, fmt.Errorf("claim rate limit: %w", err)
			}
			return res, nil
		}
		if attempt < maxClaimAttempts && retryable(err) {
			c.metrics.ClaimRetry()
			c.logger.DebugContext(ctx, "claim batch retried", "product", productID, "attempt", attempt, "error", err)
			continue
		}
		return BatchResult{}, fmt.Errorf("claim batch for product %s: %w", productID, err)
	}
}

// takeTenantSlot takes one of the product's tenant's tenantClaims slots
// for the rest of tx — the first free one, or, when all are taken, waits
// for the one the product hashes to. (With nothing queued there is nothing
// to claim, and no slot to take; the queue is read from floor, as
// selection.floor.) A slot is a transaction-level
// advisory lock, the first lock a claim takes, so it cannot deadlock with
// the row locks, and a dead worker's connection frees it.
func (c *Claimer) takeTenantSlot(ctx context.Context, tx pgx.Tx, productID uuid.UUID, floor uint64) error {
	if c.tenantClaims <= 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write(productID[:])
	_, err := tx.Exec(ctx, `
		WITH t AS (SELECT tenant_id FROM reservation_requests
		           WHERE product_id = $1 AND status = 'QUEUED' AND queued_xid >= $4 LIMIT 1),
		     free AS (SELECT s FROM t, generate_series(0, $2 - 1) AS s
		              WHERE pg_try_advisory_xact_lock(hashtextextended('boxoffice.claims/' || t.tenant_id || '/' || s, 0))
		              LIMIT 1)
		SELECT coalesce((SELECT s FROM free),
		                (SELECT -1 FROM t, pg_advisory_xact_lock(hashtextextended('boxoffice.claims/' || t.tenant_id || '/' || $3::int, 0))))`,
		productID, c.tenantClaims, int(h.Sum32()%uint32(c.tenantClaims)), floor)
	if err != nil {
		return fmt.Errorf("take a claim slot of the tenant of %s: %w", productID, err)
	}
	return nil
}

// maxDecisionLinks bounds the links a claim span carries (one per request
// decided, to the span of the call that made it).
const maxDecisionLinks = 128

// endClaimSpan records what a claim transaction decided: each request's
// outcome as a link to the trace of the call that made it.
func endClaimSpan(span trace.Span, res BatchResult, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("claim.requests", res.Requests), attribute.Int("claim.held", res.Held),
		attribute.Int("claim.numbers", res.Numbers))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	for i, d := range res.decisions {
		if i == maxDecisionLinks {
			break
		}
		status := StatusHeld
		if d.reason != "" {
			status = StatusRejected
		}
		var sc trace.SpanContext
		if d.req.trace != nil {
			sc = tracing.SpanContextOf(*d.req.trace)
		}
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
			attribute.String("reservation.request_id", d.req.id.String()), attribute.String("reservation.status", status),
			attribute.String("reservation.reason", d.reason)}})
	}
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == pgerrcode.DeadlockDetected || pgErr.Code == pgerrcode.SerializationFailure ||
			pgErr.Code == pgerrcode.LockNotAvailable
	}
	// A claim planned before offers withheld its numbers plans again,
	// under the row lock.
	return errors.Is(err, errLostRace) || errors.Is(err, inventory.ErrOverCommitted)
}

// queuedRequest is a request row as the claim transaction reads it.
type queuedRequest struct {
	id          uuid.UUID
	tenantID    uuid.UUID
	buyerID     string
	numbers     []int32
	quantity    *int32
	mode        *string
	acceptFewer bool
	offerID     *uuid.UUID // the waiting-list offer it spends
	trace       *string    // the accept's traceparent, when it was traced
}

// decision is what the batch decided for one request.
type decision struct {
	req     *queuedRequest
	holdID  uuid.UUID // zero when rejected
	numbers []int32
	reason  string
}

// claimTx is the claim transaction (docs/architecture.md, "How a reservation is decided"):
//
//  1. take the oldest QUEUED requests of the product (SKIP LOCKED, so a second
//     drainer takes the next ones instead of waiting);
//  2. lock their buyers' limit rows in sorted order and count each buyer's
//     live holds and purchases;
//  3. plan every request in arrival order against a snapshot of the bitmap in
//     which numbers of expired holds count as free;
//  4. insert the claims; the primary key on (product, number) arbitrates, and
//     an expired hold's claim is taken over in place;
//  5. write holds, request outcomes and outbox rows;
//  6. last, lock the inventory row and apply the bitmap and counter change,
//     so the hot row is locked only for the end of the transaction.
func (c *Claimer) claimTx(ctx context.Context, tx pgx.Tx, productID uuid.UUID, sel selection) (BatchResult, error) {
	if sel.lockFirst {
		if err := inventory.Lock(ctx, tx, productID); err != nil {
			return BatchResult{}, err
		}
	}
	if err := planClaim(ctx, tx, productID); err != nil {
		return BatchResult{}, err
	}
	reqs, floor, err := c.lockQueued(ctx, tx, productID, sel)
	if err != nil || len(reqs) == 0 {
		return BatchResult{}, err
	}

	terms, err := product.TermsOf(ctx, tx, productID)
	if err != nil {
		return BatchResult{}, err
	}
	capacity, perBuyer := terms.Capacity, terms.PerBuyer
	// Why no request can be held now, whatever it asks ("" when they can).
	var refuse string
	switch {
	case terms.Cancelled:
		refuse = ReasonEventCancelled
	case terms.Closed:
		refuse = ReasonSaleClosed
	case !terms.OnSale:
		refuse = ReasonNotOnSale
	}
	expiresAt := terms.Now.Add(time.Duration(terms.HoldSeconds) * time.Second)

	// Before the general sale, the buyers a presale code let in (its
	// window open now) may be held.
	var presale map[string]bool
	if refuse == ReasonNotOnSale && terms.Published {
		if presale, err = codelist.PresaleBuyers(ctx, tx, productID, buyersOf(reqs)); err != nil {
			return BatchResult{}, err
		}
	}
	refusal := func(r *queuedRequest) string {
		if refuse == ReasonNotOnSale && presale[r.buyerID] {
			return ""
		}
		return refuse
	}
	pick, err := c.newPicker(ctx, tx, productID, capacity, terms.LayoutVersion, reqs)
	if err != nil {
		return BatchResult{}, err
	}
	if pick.free > pick.withheld {
		// Numbers that came back while people wait in line are theirs:
		// the line's next offers take them, not this batch.
		if pick.lineWaiting, err = waitlist.AnyoneWaiting(ctx, tx, productID); err != nil {
			return BatchResult{}, err
		}
	}
	// Only the buyers of requests that may be held are locked and counted:
	// in an opening most requests meet taken numbers or a sold-out product,
	// and their rejection does not depend on what the buyer holds.
	var hopeful []*queuedRequest
	for _, r := range reqs {
		if refusal(r) == "" && (r.offerID != nil || pick.couldHold(r)) {
			hopeful = append(hopeful, r)
		}
	}
	live, err := lockBuyers(ctx, tx, productID, hopeful)
	if err != nil {
		return BatchResult{}, err
	}
	offers, err := lockOffers(ctx, tx, productID, reqs)
	if err != nil {
		return BatchResult{}, err
	}

	decisions := make([]decision, len(reqs))
	var claimNumbers []int32
	var claimHolds []uuid.UUID
	var spent, spentHolds []uuid.UUID
	offeredDelta := 0
	for i, r := range reqs {
		refuse := refusal(r)
		var d decision
		if r.offerID != nil {
			o := offers[*r.offerID]
			d = c.decideOffer(r, o, pick, live, perBuyer, refuse)
			if d.reason == "" {
				spent, spentHolds = append(spent, *r.offerID), append(spentHolds, d.holdID)
				offeredDelta -= o.Quantity
				o.Live = false // spent once: a second request with it in this batch is refused
				offers[*r.offerID] = o
			}
		} else {
			d = c.decide(r, pick, live, perBuyer, refuse)
		}
		decisions[i] = d
		for _, n := range d.numbers {
			claimNumbers = append(claimNumbers, n)
			claimHolds = append(claimHolds, d.holdID)
		}
	}

	fresh, err := insertClaims(ctx, tx, productID, claimNumbers, claimHolds, expiresAt)
	if err != nil {
		return BatchResult{}, err
	}
	if err := writeOutcomes(ctx, tx, productID, decisions, expiresAt); err != nil {
		return BatchResult{}, err
	}
	if err := waitlist.Convert(ctx, tx, spent, spentHolds); err != nil {
		return BatchResult{}, err
	}
	change := inventory.Change{Set: fresh, HeldDelta: len(fresh), OfferedDelta: offeredDelta}
	left, err := inventory.ApplyAvailable(ctx, tx, productID, change)
	if err != nil {
		return BatchResult{}, err
	}
	if left == 0 && len(fresh) > 0 {
		// This batch took the last free number (holds that run out may
		// free some again).
		if err := outbox.Add(ctx, tx, outbox.New{TenantID: reqs[0].tenantID, Topic: "product.sold_out",
			Payload: map[string]any{"productId": productID}}); err != nil {
			return BatchResult{}, err
		}
	}
	if c.BeforeCommit != nil {
		if err := c.BeforeCommit(ctx); err != nil {
			return BatchResult{}, err
		}
	}

	res := BatchResult{Requests: len(reqs), Numbers: len(claimNumbers), decisions: decisions, floor: floor}
	for _, d := range decisions {
		if d.reason != "" {
			c.metrics.Rejected(d.reason)
		} else {
			res.Held++
		}
	}
	return res, nil
}

// lockQueued locks the requests sel takes and decides them all in this
// transaction. Taking the oldest, it also returns where the next scan of
// the product's queue may start. The queue is ordered by the transaction
// that queued each request, and a request queued by a transaction that had
// ended before this statement's snapshot (older than the snapshot's xmin)
// is visible to it: if such a request comes before the last one taken, it
// was taken, or another transaction held it locked. So the next scan may
// start at the smaller of the snapshot's xmin and the last request's
// transaction (the latter only when the batch is full: otherwise it took
// every visible request). Decided requests keep their queue entries, at the
// front of the queue, until VACUUM; without a floor every scan walks them
// all. A request skipped because it was locked, and left queued, is behind
// the floor: the drain's final check reads the whole queue and starts
// again from the front (Claimer.drain).
func (c *Claimer) lockQueued(ctx context.Context, tx pgx.Tx, productID uuid.UUID, sel selection) ([]*queuedRequest, uint64, error) {
	// Two statements rather than one with an optional filter, so that each
	// gets its own plan: the oldest-first scan of the product's queue, or
	// primary-key lookups of the given ids.
	var rows pgx.Rows
	var err error
	if sel.ids == nil {
		rows, err = tx.Query(ctx, `
			SELECT id, tenant_id, buyer_id, numbers, quantity, mode, accept_fewer, trace_parent, offer_id,
			       queued_xid, (SELECT pg_snapshot_xmin(pg_current_snapshot())) -- once, not a row
			FROM reservation_requests
			WHERE product_id = $1 AND status = 'QUEUED' AND queued_xid >= $3
			ORDER BY queued_xid, created_at, id
			LIMIT $2
			FOR UPDATE SKIP LOCKED`, productID, sel.limit, sel.floor)
	} else {
		// One primary-key probe per id, whatever the planner knows about the
		// table: the probe names nothing but the key, because with the
		// product and status in it the planner chose the product's queue
		// index and scanned the whole queue for every id.
		rows, err = tx.Query(ctx, `
			SELECT r.id, r.tenant_id, r.buyer_id, r.numbers, r.quantity, r.mode, r.accept_fewer, r.trace_parent, r.offer_id,
			       r.queued_xid, '0'::xid8
			FROM unnest($2::uuid[]) AS u(id)
			CROSS JOIN LATERAL (
				SELECT * FROM reservation_requests WHERE id = u.id
				FOR UPDATE SKIP LOCKED) AS r
			WHERE r.product_id = $1 AND r.status = 'QUEUED'
			ORDER BY r.queued_xid, r.created_at, r.id`, productID, sel.ids)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("lock queued requests: %w", err)
	}
	var queuedBy, xmin uint64
	reqs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*queuedRequest, error) {
		var r queuedRequest
		err := row.Scan(&r.id, &r.tenantID, &r.buyerID, &r.numbers, &r.quantity, &r.mode, &r.acceptFewer, &r.trace, &r.offerID,
			&queuedBy, &xmin)
		return &r, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read queued requests: %w", err)
	}
	if sel.ids != nil || len(reqs) == 0 {
		return reqs, 0, nil
	}
	floor := xmin
	if len(reqs) == sel.limit {
		floor = min(floor, queuedBy)
	}
	return reqs, floor, nil
}

// buyerCount is what counts against the per-buyer limit of buyer
// b.buyer_id on product $1: the numbers of their live and converted holds
// less those refunded or given away, plus the tickets they received (their
// buyer_limits row, which the caller has locked).
const buyerCount = `(
	(SELECT coalesce(sum(cardinality(h.numbers) - h.refunded - h.given), 0)::int FROM holds h
	 WHERE h.product_id = $1 AND h.buyer_id = b.buyer_id
	   AND ((h.state = 'ACTIVE' AND h.expires_at > now()) OR h.state = 'CONVERTED'))
	+ coalesce((SELECT l.received FROM buyer_limits l WHERE l.product_id = $1 AND l.buyer_id = b.buyer_id), 0))`

// buyersOf lists the requests' buyers, sorted, once each.
func buyersOf(reqs []*queuedRequest) []string {
	buyers := make([]string, 0, len(reqs))
	for _, r := range reqs {
		buyers = append(buyers, r.buyerID)
	}
	slices.Sort(buyers)
	return slices.Compact(buyers)
}

// lockBuyers locks the buyer-limit rows of the batch's buyers in sorted order
// (the one lock order every claim uses) and returns how many numbers each
// buyer already has in live holds and purchases. The count is derived from
// holds rather than stored, so an expired hold stops counting at once without
// waiting for the sweeper.
//
// A buyer whose row this insert made has nothing to count: every hold is
// made by a claim that locked its buyer's row first, a transfer's receiver
// has a row too, and rows go only with their product's holds (PurgeProduct).
// In an opening that is nearly every buyer, and their count (5–7 µs each)
// is skipped. A row made by the insert has no xmax; one the conflict
// updated carries the lock the update took (PostgreSQL's ON CONFLICT DO
// UPDATE), and so does a row another transaction inserted meanwhile.
func lockBuyers(ctx context.Context, tx pgx.Tx, productID uuid.UUID, reqs []*queuedRequest) (map[string]int, error) {
	if len(reqs) == 0 {
		return map[string]int{}, nil
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO buyer_limits (product_id, buyer_id)
		SELECT $1, b FROM unnest($2::text[]) AS b ORDER BY b
		ON CONFLICT (product_id, buyer_id) DO UPDATE SET last_claim_at = now()
		RETURNING buyer_id, xmax <> 0`, productID, buyersOf(reqs))
	if err != nil {
		return nil, fmt.Errorf("lock buyer limits: %w", err)
	}
	var known []string
	var buyer string
	var existed bool
	_, err = pgx.ForEachRow(rows, []any{&buyer, &existed}, func() error {
		if existed {
			known = append(known, buyer)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock buyer limits: %w", err)
	}
	live := make(map[string]int, len(known))
	if len(known) == 0 {
		return live, nil
	}
	// One index probe per buyer: written as a correlated subquery because
	// "buyer_id = ANY($2)" let the planner filter every hold of the product.
	rows, err = tx.Query(ctx, `SELECT b.buyer_id, `+buyerCount+` FROM unnest($2::text[]) AS b(buyer_id)`, productID, known)
	if err != nil {
		return nil, fmt.Errorf("count live holds: %w", err)
	}
	var n int
	_, err = pgx.ForEachRow(rows, []any{&buyer, &n}, func() error { live[buyer] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("count live holds: %w", err)
	}
	return live, nil
}

// ranOut is the condition on holds h that picks the product's holds (an
// SQL expression) that ran out and still count as ACTIVE. The first test
// is a one-time filter on the earliest expiry (an index probe): in a burst
// no hold has expired, and the holds table grows faster than its
// statistics — the planner, thinking it small, scanned every hold of the
// product for each claim transaction.
func ranOut(product string) string {
	return `(SELECT expires_at FROM holds WHERE product_id = ` + product + ` AND state = 'ACTIVE'
		       ORDER BY expires_at LIMIT 1) <= now()
		  AND h.product_id = ` + product + ` AND h.state = 'ACTIVE' AND h.expires_at <= now()`
}

// byKeyOnly prices sequential scans and hash joins out for the rest of
// the transaction (a select list): its statements read by key, and a
// generic plan cached from stale statistics must not turn a lookup into a
// scan (planClaim, recordTx).
const byKeyOnly = `set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true)`

// planClaim sets how the rest of the claim transaction's statements are
// planned. pgx caches every statement, and PostgreSQL keeps a generic plan
// made from the statistics of the moment:
//   - made while reservation_requests was small (a new deployment's first
//     opening, until autovacuum analyzes it), the plans of the queue read and
//     of the outcomes' update scanned the whole table in every batch: as in
//     the transactions that free claims, sequential scans and hash joins are
//     priced out (every statement here reads by key);
//   - made while no hold had expired, once thousands have, the plans of the
//     claim's reads of holds and claims took seconds under the inventory lock
//     (SQS at 400 requests a second: decisions 17 s behind). Planning every
//     statement of every claim instead cost a third of the claims'
//     throughput, so only the transactions that meet expired holds plan for
//     their parameters: one index probe, in the same round trip as the
//     settings.
func planClaim(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `
		SELECT `+byKeyOnly+`,
		       (SELECT set_config('plan_cache_mode', 'force_custom_plan', true)
		        WHERE EXISTS (SELECT 1 FROM holds WHERE product_id = $1 AND state = 'ACTIVE' AND expires_at <= now()))`,
		productID); err != nil {
		return fmt.Errorf("plan the claim: %w", err)
	}
	return nil
}

// newPicker snapshots the bitmap (without locking it) and frees in it the
// numbers whose holds have expired, which a claim may take over. A large
// numbered product's snapshot holds only the pages the batch needs (see
// pagesToRead); the others count as taken for this batch.
func (c *Claimer) newPicker(ctx context.Context, tx pgx.Tx, productID uuid.UUID, capacity, layoutVersion int, reqs []*queuedRequest) (*picker, error) {
	rowsLayout, err := c.layout(ctx, tx, productID, layoutVersion)
	if err != nil {
		return nil, err
	}
	c.rngMu.Lock()
	seed := c.rng.Uint64()
	c.rngMu.Unlock()
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	var pages []int   // nil: all
	var asked []int32 // numbers asked off the pages read, read one by one
	if len(rowsLayout) == 0 {
		if pages, asked, err = pagesToRead(ctx, tx, productID, capacity, reqs, rng); err != nil {
			return nil, err
		}
	}
	snap, err := inventory.GetPages(ctx, tx, productID, pages)
	if err != nil {
		return nil, err
	}
	var askedTaken []int32
	if len(asked) > 0 {
		if askedTaken, err = inventory.TakenAmong(ctx, tx, productID, asked); err != nil {
			return nil, err
		}
	}
	// Pages not read start taken; decoding a page read overwrites all of
	// its words.
	words := make([]uint64, (capacity+63)/64)
	if pages != nil {
		for i := range words {
			words[i] = ^uint64(0)
		}
		if r := capacity % 64; r != 0 {
			words[len(words)-1] = 1<<r - 1
		}
	}
	for _, p := range snap.Pages {
		inventory.DecodePage(words, p)
	}
	taken := bitset.FromWithLength(uint(capacity), words)
	for _, n := range asked {
		taken.Clear(uint(n - 1))
	}
	for _, n := range askedTaken {
		taken.Set(uint(n - 1))
	}
	var spans [][2]int
	if pages != nil {
		spans = make([][2]int, len(snap.Pages))
		for i, p := range snap.Pages {
			spans[i] = [2]int{p.First(), p.Last(capacity)}
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT c.number
		FROM holds h
		CROSS JOIN LATERAL unnest(h.numbers) AS n(number)
		JOIN claims c ON c.product_id = h.product_id AND c.number = n.number AND c.hold_id = h.id
		WHERE `+ranOut("$1"), productID)
	if err != nil {
		return nil, fmt.Errorf("read expired claims: %w", err)
	}
	expired, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("read expired claims: %w", err)
	}
	for _, n := range expired {
		taken.Clear(uint(n - 1))
	}
	visible := capacity - int(taken.Count())
	if spans != nil {
		// The free numbers on the pages read: random picks sample these.
		visible = 0
		for _, sp := range spans {
			set := 0
			for _, w := range words[(sp[0]-1)/64 : (sp[1]-1)/64+1] {
				set += bits.OnesCount64(w)
			}
			visible += sp[1] - sp[0] + 1 - set
		}
	}
	return &picker{
		taken:    taken,
		withheld: snap.Offered,
		// Clear bits: neither held nor sold, plus the expired holds'.
		free:     snap.Available + snap.Offered + len(expired),
		visible:  visible,
		spans:    spans,
		capacity: capacity,
		rows:     rowsLayout,
		rng:      rng,
	}, nil
}

// allPagesUpTo is how many pages a numbered product may have for its claims
// to read them all (131,072 numbers, 16 KB); larger ones read the pages of
// the numbers asked and, for requests of a quantity, enough pages with free
// numbers to fill them.
const allPagesUpTo = 8

// randomPagesAtLeast is how many pages a batch's random picks are drawn
// from at the least.
const randomPagesAtLeast = 4

// pagesToRead lists the pages a claim batch of a large numbered product
// reads (nil: all of them), and the numbers asked, whose bits it reads one
// by one. The pages for requests of a quantity are chosen from the page
// index: the lowest pages with free numbers (the lowest free numbers are
// the best), or for random picks pages drawn at random weighted by their
// free numbers (a few at least), until they hold twice the quantity
// asked, so that claims racing this one leave enough.
func pagesToRead(ctx context.Context, tx pgx.Tx, productID uuid.UUID, capacity int, reqs []*queuedRequest, rng *rand.Rand) ([]int, []int32, error) {
	if inventory.PageCount(capacity) <= allPagesUpTo {
		return nil, nil, nil
	}
	need := map[int]bool{}
	var asked []int32
	quantity, random := 0, false
	for _, r := range reqs {
		if r.quantity != nil {
			quantity += int(*r.quantity)
			random = random || (r.mode != nil && *r.mode == ModeRandom)
			continue
		}
		for _, n := range r.numbers {
			if n >= 1 && int(n) <= capacity {
				asked = append(asked, n)
			}
		}
	}
	if quantity > 0 {
		idx, err := inventory.Index(ctx, tx, productID)
		if err != nil {
			return nil, nil, err
		}
		type candidate struct {
			page int
			free int
			key  float64
		}
		var cands []candidate
		for _, p := range idx.Pages {
			if free := p.Last(capacity) - p.First() + 1 - p.Taken; free > 0 {
				cands = append(cands, candidate{page: p.Index, free: free})
			}
		}
		if random {
			// Weighted sampling without replacement: the largest u^(1/w)
			// are a sample weighted by w (Efraimidis–Spirakis).
			for i := range cands {
				cands[i].key = math.Pow(rng.Float64(), 1/float64(cands[i].free))
			}
			slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(b.key, a.key) })
		}
		// Random picks spread over a few pages at least, not one page per
		// batch.
		minPages := 1
		if random {
			minPages = randomPagesAtLeast
		}
		got := 0
		for i, cd := range cands {
			if got >= 2*quantity && i >= minPages {
				break
			}
			need[cd.page] = true
			got += cd.free
		}
	}
	pages := make([]int, 0, len(need))
	for p := range need {
		pages = append(pages, p)
	}
	slices.Sort(pages)
	// Asked numbers on pages read anyway come with them.
	asked = slices.DeleteFunc(asked, func(n int32) bool { return need[inventory.PageOf(n)] })
	slices.Sort(asked)
	return pages, slices.Compact(asked), nil
}

// layoutKey names one version of a product's seat map.
type layoutKey struct {
	product uuid.UUID
	version int
}

// layout reads the seat map in the claim's transaction: a second
// connection taken while the transaction holds its locks could wait on a
// pool the waiting transactions hold (claims in the request run many at once).
func (c *Claimer) layout(ctx context.Context, tx pgx.Tx, productID uuid.UUID, version int) ([]product.Row, error) {
	key := layoutKey{productID, version}
	if rows, ok := c.layouts.Load(key); ok {
		return rows.([]product.Row), nil
	}
	l, readVersion, err := product.LayoutOf(ctx, tx, productID)
	if err != nil {
		return nil, err
	}
	var rows []product.Row
	if l != nil {
		rows = l.Rows()
	}
	if readVersion != version {
		// Replaced since this batch read the product: the next batch
		// caches the new map.
		return rows, nil
	}
	c.layouts.Store(key, rows)
	return rows, nil
}

// lockOffers locks the waiting-list offers the batch's requests spend.
func lockOffers(ctx context.Context, tx pgx.Tx, productID uuid.UUID, reqs []*queuedRequest) (map[uuid.UUID]waitlist.HeldOffer, error) {
	var ids []uuid.UUID
	for _, r := range reqs {
		if r.offerID != nil {
			ids = append(ids, *r.offerID)
		}
	}
	return waitlist.LockOffers(ctx, tx, productID, ids)
}

// decideOffer plans a request that spends a waiting-list offer: it may
// take the numbers the offer withholds, up to the offer's count. The
// offer is spent whole: what it does not take goes back to the line.
func (c *Claimer) decideOffer(r *queuedRequest, o waitlist.HeldOffer, pick *picker, live map[string]int, perBuyer int, refuse string) decision {
	if refuse == "" && (!o.Live || o.BuyerID != r.buyerID) {
		refuse = ReasonOfferInvalid
	}
	want := len(r.numbers)
	if r.quantity != nil {
		want = int(*r.quantity)
	}
	if refuse == "" && want > o.Quantity && !r.acceptFewer {
		return decision{req: r, reason: ReasonOfferExceeded}
	}
	// The offer's numbers are among the withheld: for this request they
	// are free, the line waiting or not. Capping the buyer's limit at the
	// offer keeps the request to its count.
	pick.withheld -= o.Quantity
	waiting := pick.lineWaiting
	pick.lineWaiting = false
	d := c.decide(r, pick, live, min(perBuyer, live[r.buyerID]+o.Quantity), refuse)
	pick.lineWaiting = waiting
	if d.reason != "" {
		pick.withheld += o.Quantity
	}
	return d
}

// decide plans one request against the batch's picker and live counts.
func (c *Claimer) decide(r *queuedRequest, pick *picker, live map[string]int, perBuyer int, refuse string) decision {
	d := decision{req: r}
	reject := func(reason string) decision { d.reason = reason; return d }
	if refuse != "" {
		return reject(refuse)
	}
	allowed := perBuyer - live[r.buyerID]
	want := len(r.numbers)
	if r.quantity != nil {
		want = int(*r.quantity)
	}
	if want > allowed {
		if !r.acceptFewer || allowed <= 0 {
			return reject(ReasonLimitExceeded)
		}
		want = allowed
	}

	var got []int32
	if r.quantity == nil {
		for _, n := range r.numbers {
			if n < 1 || int(n) > pick.capacity {
				return reject(ReasonInvalidNumbers)
			}
		}
		for _, n := range r.numbers {
			if pick.isFree(n) {
				got = append(got, n)
			}
		}
		if len(got) == 0 || (len(got) < len(r.numbers) && !r.acceptFewer) {
			return reject(ReasonSeatTaken)
		}
		got = got[:min(len(got), want)]
		// Free seats the waiting list's offers withhold are not for sale.
		switch open := pick.open(); {
		case open == 0:
			return reject(ReasonSoldOut)
		case open < len(got):
			if !r.acceptFewer {
				return reject(ReasonNotEnoughLeft)
			}
			got = got[:open]
		}
	} else {
		open := pick.open()
		switch {
		case open == 0:
			return reject(ReasonSoldOut)
		case open < want && !r.acceptFewer:
			return reject(ReasonNotEnoughLeft)
		}
		want = min(want, open)
		if r.mode != nil && *r.mode == ModeRandom {
			got = pick.random(want)
		} else {
			got = pick.best(want)
		}
		// A large product's batch sees only some of its pages: claims
		// racing it may have left them fewer free numbers than it chose
		// them for.
		if len(got) == 0 {
			return reject(ReasonSoldOut)
		}
		if len(got) < want && !r.acceptFewer {
			return reject(ReasonNotEnoughLeft)
		}
	}
	pick.take(got)
	live[r.buyerID] += len(got)
	d.holdID = db.NewID()
	d.numbers = got
	return d
}

// insertClaims inserts the planned claims in number order (one lock order for
// claim rows) and returns the numbers that were free, whose bits must now be
// set. A conflict on a live claim means another transaction won the number
// after this batch took its snapshot: errLostRace replans the batch. A
// conflict on an expired hold's claim takes the row over; its bit is already
// set.
func insertClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID, numbers []int32, holds []uuid.UUID, expiresAt time.Time) ([]int32, error) {
	if len(numbers) == 0 {
		return nil, nil
	}
	order := make([]int, len(numbers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(numbers[a] - numbers[b]) })
	sortedNums := make([]int32, len(numbers))
	sortedHolds := make([]uuid.UUID, len(numbers))
	for i, j := range order {
		sortedNums[i], sortedHolds[i] = numbers[j], holds[j]
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO claims (product_id, number, hold_id, state, expires_at)
		SELECT $1, u.number, u.hold_id, 'HELD', $4
		FROM unnest($2::int[], $3::uuid[]) WITH ORDINALITY AS u(number, hold_id, ord)
		ORDER BY u.ord
		ON CONFLICT (product_id, number) DO UPDATE
		    SET hold_id = EXCLUDED.hold_id, expires_at = EXCLUDED.expires_at
		    WHERE claims.state = 'HELD' AND claims.expires_at <= now()
		RETURNING number, xmax = 0`, productID, sortedNums, sortedHolds, expiresAt)
	if err != nil {
		return nil, fmt.Errorf("insert claims: %w", err)
	}
	var fresh []int32
	won := 0
	var n int32
	var inserted bool
	_, err = pgx.ForEachRow(rows, []any{&n, &inserted}, func() error {
		won++
		if inserted {
			fresh = append(fresh, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert claims: %w", err)
	}
	if won != len(numbers) {
		return nil, errLostRace
	}
	return fresh, nil
}

// writeOutcomes records holds, request outcomes and one outbox row per batch
// that lists the holds created (one row per hold measured as the costliest
// write of a batch after the claims themselves).
func writeOutcomes(ctx context.Context, tx pgx.Tx, productID uuid.UUID, decisions []decision, expiresAt time.Time) error {
	type heldEvent struct {
		HoldID    uuid.UUID `json:"holdId"`
		RequestID uuid.UUID `json:"requestId"`
		BuyerID   string    `json:"buyerId"`
		Numbers   []int32   `json:"numbers"`
	}
	var holdRows [][]any
	var events []heldEvent
	ids := make([]uuid.UUID, len(decisions))
	statuses := make([]string, len(decisions))
	reasons := make([]pgtype.Text, len(decisions))
	holdIDs := make([]pgtype.UUID, len(decisions))
	for i, d := range decisions {
		ids[i] = d.req.id
		if d.reason != "" {
			statuses[i] = StatusRejected
			reasons[i] = pgtype.Text{String: d.reason, Valid: true}
			continue
		}
		statuses[i] = StatusHeld
		holdIDs[i] = pgtype.UUID{Bytes: d.holdID, Valid: true}
		holdRows = append(holdRows, []any{d.holdID, d.req.tenantID, productID, d.req.buyerID, d.req.id, d.numbers, expiresAt})
		events = append(events, heldEvent{HoldID: d.holdID, RequestID: d.req.id, BuyerID: d.req.buyerID, Numbers: d.numbers})
	}
	if len(holdRows) > 0 {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"holds"},
			[]string{"id", "tenant_id", "product_id", "buyer_id", "request_id", "numbers", "expires_at"},
			pgx.CopyFromRows(holdRows))
		if err != nil {
			return fmt.Errorf("insert holds: %w", err)
		}
		err = outbox.Add(ctx, tx, outbox.New{TenantID: decisions[0].req.tenantID, Topic: "holds.created",
			Payload: map[string]any{"productId": productID, "expiresAt": expiresAt, "holds": events}})
		if err != nil {
			return err
		}
	}
	// The same statement announces the decisions on decidedChannel (the
	// notifications leave at the commit, and not at all on a rollback),
	// saving a round trip under the locks the batch holds: the
	// materialized one-row CTE runs once.
	_, err := tx.Exec(ctx, `
		WITH notified AS MATERIALIZED (
			SELECT count(pg_notify('`+decidedChannel+`', p)) FROM unnest($5::text[]) AS p)
		UPDATE reservation_requests r
		SET status = u.status, reason = u.reason, hold_id = u.hold_id,
		    processed_at = clock_timestamp(), attempts = r.attempts + 1
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[]) AS u(id, status, reason, hold_id), notified
		WHERE r.id = u.id`, ids, statuses, reasons, holdIDs, wake.Payloads(ids))
	if err != nil {
		return fmt.Errorf("record request outcomes: %w", err)
	}
	return nil
}
