package reservation

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/internal/batch"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/metrics"
	"boxoffice/internal/product"
	"boxoffice/internal/tracing"
	"boxoffice/internal/wake"
)

// ErrIdempotencyConflict is returned when an idempotency key is reused with a
// different request.
var ErrIdempotencyConflict = errors.New("idempotency key already used for a different request")

// Service records requests and answers status queries.
type Service struct {
	pool     *pgxpool.Pool
	enqueuer Enqueuer
	metrics  *metrics.Metrics
	logger   *slog.Logger

	// accepts coalesces concurrent accepts; nil records each request in a
	// transaction of its own.
	accepts *batch.Coalescer[*acceptRow, *time.Time]
	// reads gathers status reads: one read query runs at a time, and the
	// reads that arrive meanwhile go together in the next (after an
	// opening every shopper reads their request's status at once).
	reads  *batch.Coalescer[uuid.UUID, *Owned]
	tracer trace.Tracer
	// decider, when set, decides each request as it is recorded (the
	// synchronous baseline).
	decider *Claimer
}

// ServiceOptions tunes a Service; the zero value records each request in a
// transaction of its own, untraced, and queues it.
type ServiceOptions struct {
	// Linger coalesces concurrent accepts: the first of a burst waits up to
	// this long, then everyone who arrived meanwhile is recorded — and
	// their claim jobs enqueued — in one transaction, one commit (0: off).
	Linger time.Duration
	// Transactions bounds the coalesced transactions running at once (0:
	// no limit); accepts that arrive while they run wait together and form
	// the next.
	Transactions int
	// ClaimInRequest, when set, decides each request in its own
	// transaction, in the request, with this claimer: the synchronous
	// design the burst benchmark compares the queue with
	// (BOXOFFICE_CLAIM_IN_REQUEST). No claim job is queued then.
	ClaimInRequest *Claimer
	// Tracer traces accepts (nil: not traced).
	Tracer trace.TracerProvider
}

// acceptRow is one request to record.
type acceptRow struct {
	id          uuid.UUID
	product     *product.Product
	buyer, key  string
	hash        []byte
	numbers     *string // an array literal, {1,2}; nil for a quantity
	quantity    *int32
	mode        *string
	acceptFewer bool
	offer       pgtype.UUID // the waiting-list offer spent (not valid: none)
	trace       *string     // the accept span's traceparent (nil when untraced)
	created     *time.Time  // set when recorded; nil for a replayed key
	// refused is the reason a recorded request was rejected as it was
	// recorded ("" when it was queued): see recordTx.
	refused string
	decided time.Time // when it was refused
}

// maxAcceptBatch bounds one accept transaction.
const maxAcceptBatch = 500

// recordBatch records a batch of accepts, maxAcceptBatch to a
// transaction, and answers each with its creation time (nil for a replay).
func (s *Service) recordBatch(ctx context.Context, rows []*acceptRow) []batch.Result[*time.Time] {
	out := make([]batch.Result[*time.Time], len(rows))
	for start := 0; start < len(rows); start += maxAcceptBatch {
		chunk := rows[start:min(start+maxAcceptBatch, len(rows))]
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			_, err := s.recordTx(ctx, tx, chunk)
			return err
		})
		for i, r := range chunk {
			out[start+i] = batch.Result[*time.Time]{Value: r.created, Err: err}
		}
	}
	return out
}

// recordTx inserts the rows in one round trip and enqueues the claim job of
// each product that got new requests, in the caller's transaction. It
// returns the first row's creation time (nil when its key was a replay).
func (s *Service) recordTx(ctx context.Context, tx pgx.Tx, rows []*acceptRow) (*time.Time, error) {
	transactional := s.enqueuer.Transactional()
	// Insert in idempotency-key order: two batches carrying the same keys
	// then wait for each other instead of deadlocking. The tenant ids are
	// compared as bytes, in the order of their text, without making it.
	first := rows[0]
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b *acceptRow) int {
		return cmp.Or(bytes.Compare(a.product.TenantID[:], b.product.TenantID[:]),
			strings.Compare(a.buyer, b.buyer), strings.Compare(a.key, b.key))
	})
	// One statement for the batch: per-row INSERTs cost the database a
	// statement execution each, and in a burst that was most of its time.
	n := len(rows)
	ids, tenants, products := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	buyers, keys, hashes := make([]string, n), make([]string, n), make([][]byte, n)
	numbers, quantities, modes := make([]*string, n), make([]*int32, n), make([]*string, n)
	fewer, traces, offers := make([]bool, n), make([]*string, n), make([]pgtype.UUID, n)
	byID := make(map[uuid.UUID]*acceptRow, n)
	for i, r := range rows {
		r.created, r.refused = nil, ""
		byID[r.id] = r
		ids[i], tenants[i], products[i] = r.id, r.product.TenantID, r.product.ID
		buyers[i], keys[i], hashes[i] = r.buyer, r.key, r.hash
		numbers[i], quantities[i], modes[i] = r.numbers, r.quantity, r.mode
		fewer[i], traces[i], offers[i] = r.acceptFewer, r.trace, r.offer
	}
	// The products asked a quantity: the statement counts what is left of each.
	var counted []uuid.UUID
	for _, r := range rows {
		if r.quantity != nil && !r.offer.Valid && !slices.Contains(counted, r.product.ID) {
			counted = append(counted, r.product.ID)
		}
	}
	// enqueued_at stays NULL until a non-transactional queue confirms the
	// publish: that is how the repair job finds unpublished requests.
	//
	// A request the claim could only reject is decided as it is recorded
	// (docs/architecture.md, "Refused at once"): named numbers of which
	// one is sold or in a hold that has not run out (all of them, with
	// accept_fewer), or a quantity above what is neither held nor sold
	// plus what holds that ran out still keep. Each test reads committed
	// rows only, and a number seen taken comes back only when its hold or
	// its sale ends, so the claim would have refused the request too at
	// this moment. What the claim weighs besides — the buyer's limit,
	// waiting-list offers, the line waiting for returns — only refuses
	// more; a request that spends an offer always goes to the claim.
	//
	// Plans cached with a connection outlive the statistics they were made
	// with: one made while the claims table was analyzed empty read every
	// claim of the product for each request (1.2–1.7 ms a request in a
	// burst), by a sequential scan or, scans priced out, by the primary
	// key on the product alone with the number filtered (= ANY, or a join
	// the planner may turn inside out). As in the claim (planClaim), the
	// transaction prices sequential scans and hash joins out, in the same
	// round trip, and each number is looked up by the whole key in a
	// subquery of its own (the LIMIT keeps it so). One number — what an
	// opening's shoppers ask — is one EXISTS probe: measured apart, 1.2 µs
	// a request against 2.0 for the general case's unnest, join and count.
	// The holds that ran out are those the claim reads (ranOut).
	b := &pgx.Batch{}
	b.Queue(`SELECT ` + byKeyOnly)
	b.Queue(`
		WITH r AS (
		    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bytea[],
		                         $7::text[], $8::integer[], $9::text[], $10::boolean[], $11::text[], $13::uuid[])
		         WITH ORDINALITY AS r(id, tenant_id, product_id, buyer_id, key, hash, numbers, quantity, mode, fewer,
		                              trace, offer, ord)),
		open AS (
		    SELECT u.product_id, u.unclaimed + (
		               SELECT coalesce(sum(cardinality(h.numbers)), 0) FROM holds h
		               WHERE `+ranOut("u.product_id")+`) AS open
		    FROM (`+inventory.Unclaimed("$14::uuid[]")+`) AS u),
		decided AS MATERIALIZED (
		    SELECT r.*, CASE
		        WHEN r.offer IS NOT NULL THEN NULL
		        WHEN r.quantity IS NULL AND cardinality(r.numbers::integer[]) = 1 THEN CASE WHEN EXISTS (
		            SELECT 1 FROM claims c
		            WHERE c.product_id = r.product_id AND c.number = (r.numbers::integer[])[1]
		              AND (c.state = 'SOLD' OR c.expires_at > now())) THEN 'SEAT_TAKEN' END
		        WHEN r.quantity IS NULL THEN (
		            SELECT CASE WHEN count(*) > 0 AND (NOT r.fewer OR count(*) = cardinality(r.numbers::integer[]))
		                        THEN 'SEAT_TAKEN' END
		            FROM unnest(r.numbers::integer[]) AS n(number)
		            CROSS JOIN LATERAL (
		                SELECT 1 FROM claims c
		                WHERE c.product_id = r.product_id AND c.number = n.number
		                  AND (c.state = 'SOLD' OR c.expires_at > now())
		                LIMIT 1) AS live)
		        WHEN o.open <= 0 THEN 'SOLD_OUT'
		        WHEN o.open < r.quantity AND NOT r.fewer THEN 'NOT_ENOUGH_LEFT'
		    END AS refused
		    FROM r LEFT JOIN open o ON o.product_id = r.product_id)
		INSERT INTO reservation_requests (id, tenant_id, product_id, buyer_id, idempotency_key, request_hash,
		                                  numbers, quantity, mode, accept_fewer, enqueued_at, trace_parent, offer_id,
		                                  status, reason, processed_at)
		SELECT d.id, d.tenant_id, d.product_id, d.buyer_id, d.key, d.hash, d.numbers::integer[], d.quantity, d.mode,
		       d.fewer, CASE WHEN $12 OR d.refused IS NOT NULL THEN clock_timestamp() END, d.trace, d.offer,
		       CASE WHEN d.refused IS NULL THEN 'QUEUED' ELSE 'REJECTED' END, d.refused,
		       CASE WHEN d.refused IS NOT NULL THEN clock_timestamp() END
		FROM decided d
		ORDER BY d.ord
		ON CONFLICT (tenant_id, buyer_id, idempotency_key) DO NOTHING
		RETURNING id, created_at, coalesce(reason, ''), coalesce(processed_at, created_at)`,
		ids, tenants, products, buyers, keys, hashes, numbers, quantities, modes, fewer, traces, transactional, offers,
		counted)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("plan the accept: %w", err)
	}
	res, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("insert reservation requests: %w", err)
	}
	// A key that exists (a replay, answered by the caller) returns no row.
	var id uuid.UUID
	var at time.Time
	var refused string
	var decided time.Time
	_, err = pgx.ForEachRow(res, []any{&id, &at, &refused, &decided}, func() error {
		if r := byID[id]; r != nil {
			created := at
			r.created, r.refused, r.decided = &created, refused, decided
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert reservation requests: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("insert reservation requests: %w", err)
	}
	// A waiting read takes a young request no notification named for one
	// still queued, and waits without reading it (wake.Waiters.Register):
	// the requests refused here are announced as the claim announces its
	// decisions, at the commit.
	var refusedIDs []uuid.UUID
	for _, r := range rows {
		if r.refused != "" {
			refusedIDs = append(refusedIDs, r.id)
		}
	}
	if len(refusedIDs) > 0 {
		if _, err := tx.Exec(ctx, `SELECT count(pg_notify('`+decidedChannel+`', p)) FROM unnest($1::text[]) AS p`,
			wake.Payloads(refusedIDs)); err != nil {
			return nil, fmt.Errorf("announce refused requests: %w", err)
		}
	}
	enqueued := map[uuid.UUID]bool{}
	var toEnqueue []Ref
	for _, r := range rows {
		if r.created != nil && r.refused == "" && !enqueued[r.product.ID] {
			enqueued[r.product.ID] = true
			toEnqueue = append(toEnqueue, Ref{ID: r.id, ProductID: r.product.ID, TenantID: r.product.TenantID, Trace: r.trace})
		}
	}
	// Products in order: each takes its claim_queues row lock (and, when
	// no job is pending, River's unique job row), and two batches that met
	// two products in opposite orders would deadlock on them.
	slices.SortFunc(toEnqueue, func(a, b Ref) int { return bytes.Compare(a.ProductID[:], b.ProductID[:]) })
	for _, ref := range toEnqueue {
		if err := s.enqueuer.EnqueueTx(ctx, tx, ref); err != nil {
			return nil, err
		}
	}
	return first.created, nil
}

// NewService returns a Service that hands requests to enqueuer.
func NewService(pool *pgxpool.Pool, enqueuer Enqueuer, m *metrics.Metrics, logger *slog.Logger, o ServiceOptions) *Service {
	s := &Service{pool: pool, enqueuer: enqueuer, metrics: m, logger: logger, tracer: tracing.Tracer(o.Tracer)}
	s.reads = &batch.Coalescer[uuid.UUID, *Owned]{MaxRuns: 1, Timeout: 10 * time.Second, Run: s.readBatch}
	if o.Linger > 0 {
		s.accepts = &batch.Coalescer[*acceptRow, *time.Time]{Linger: o.Linger, MaxRuns: o.Transactions,
			Timeout: 10 * time.Second, Run: s.recordBatch}
	}
	if o.ClaimInRequest != nil {
		s.decider, s.enqueuer = o.ClaimInRequest, noQueue{}
	}
	return s
}

// publishTimeout bounds how long an accept waits for a post-commit publish.
// The request is already safe in the database; a slow queue only delays it.
const publishTimeout = 3 * time.Second

// AcceptParams identifies who asks for what.
type AcceptParams struct {
	Product        *product.Product
	BuyerID        string
	IdempotencyKey string
	Params
}

// Accepted is the outcome of Accept.
type Accepted struct {
	Request *Request
	// Replayed is true when the key had been used for this same request.
	Replayed bool
}

// Accept validates and records a reservation request and enqueues its claim
// job in one transaction. A replay of the same key and body returns the
// request already recorded.
func (s *Service) Accept(ctx context.Context, p AcceptParams) (_ *Accepted, err error) {
	ctx, span := s.tracer.Start(ctx, "reservation.accept")
	if span.IsRecording() {
		// Untraced, an opening's accepts would spell every product id out
		// for nothing.
		span.SetAttributes(attribute.String("product.id", p.Product.ID.String()))
	}
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	if err := p.Validate(p.Product); err != nil {
		return nil, err
	}
	hash := p.hash(p.Product.ID)
	id := db.NewID()
	row := &acceptRow{id: id, product: p.Product, buyer: p.BuyerID, key: p.IdempotencyKey, hash: hash,
		acceptFewer: p.AcceptFewer}
	if p.Offer != nil {
		row.offer = pgtype.UUID{Bytes: *p.Offer, Valid: true}
	}
	if p.Quantity > 0 {
		q, m := int32(p.Quantity), p.Mode
		row.quantity, row.mode = &q, &m
	} else {
		lit := arrayLiteral(p.Numbers)
		row.numbers = &lit
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("reservation.request_id", id.String()))
		tp := tracing.Parent(ctx)
		row.trace = &tp
	}
	ref := Ref{ID: id, ProductID: p.Product.ID, TenantID: p.Product.TenantID, Trace: row.trace}
	transactional := s.enqueuer.Transactional()
	var created *time.Time
	switch {
	case s.decider != nil:
		created, err = s.recordAndDecide(ctx, row)
		if err == nil && created != nil {
			s.metrics.Accepted()
			if row.refused != "" {
				s.metrics.Rejected(row.refused)
			}
			req, err := s.Get(ctx, p.Product.TenantID, id, p.BuyerID)
			if err != nil {
				return nil, err
			}
			return &Accepted{Request: req}, nil
		}
	case s.accepts != nil:
		created, err = s.accepts.Do(ctx, row)
	default:
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			created, err = s.recordTx(ctx, tx, []*acceptRow{row})
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	if created != nil {
		s.metrics.Accepted()
		if row.refused != "" {
			s.metrics.Rejected(row.refused)
			return &Accepted{Request: &Request{ID: id, ProductID: p.Product.ID, Status: StatusRejected, Reason: row.refused,
				CreatedAt: *created, ProcessedAt: &row.decided}}, nil
		}
		if !transactional {
			// Committed but not yet queued: publish now. A failure is not the
			// shopper's: the request is safe and the repair job publishes it.
			pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
			defer cancel()
			if err := s.enqueuer.Publish(pubCtx, []Ref{ref}); err != nil {
				s.logger.WarnContext(ctx, "publish after accept failed; the repair job will retry",
					"request", id, "product", p.Product.ID, "error", err)
			}
		}
		return &Accepted{Request: &Request{ID: id, ProductID: p.Product.ID, Status: StatusQueued, CreatedAt: *created}}, nil
	}

	var existingID uuid.UUID
	var existingHash []byte
	err = s.pool.QueryRow(ctx, `
		SELECT id, request_hash FROM reservation_requests
		WHERE tenant_id = $1 AND buyer_id = $2 AND idempotency_key = $3`,
		p.Product.TenantID, p.BuyerID, p.IdempotencyKey).Scan(&existingID, &existingHash)
	if err != nil {
		return nil, fmt.Errorf("read replayed request: %w", err)
	}
	if string(existingHash) != string(hash) {
		return nil, ErrIdempotencyConflict
	}
	req, err := s.Get(ctx, p.Product.TenantID, existingID, p.BuyerID)
	if err != nil {
		return nil, err
	}
	return &Accepted{Request: req, Replayed: true}, nil
}

// noQueue queues nothing: requests are decided as they are recorded.
type noQueue struct{}

func (noQueue) Transactional() bool                          { return true }
func (noQueue) EnqueueTx(context.Context, pgx.Tx, Ref) error { return nil }
func (noQueue) Publish(context.Context, []Ref) error         { return nil }

// recordAndDecide records a request and runs the claim transaction on it,
// in one transaction (retried as a claim is); nil for a replayed key.
func (s *Service) recordAndDecide(ctx context.Context, row *acceptRow) (*time.Time, error) {
	for attempt := 1; ; attempt++ {
		var created *time.Time
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			// A replay, or a request refused as it was recorded: nothing to claim.
			if created, err = s.recordTx(ctx, tx, []*acceptRow{row}); err != nil || created == nil || row.refused != "" {
				return err
			}
			// Named numbers: optimistic, as a conditional UPDATE would be —
			// the claims' unique index arbitrates and the inventory row is
			// locked last (inventory.Apply), just before commit. Any number
			// (quantity): every request would pick the same free numbers
			// from an unlocked bitmap and retry, so the row lock comes
			// first and the pick reads a bitmap no one else is changing.
			_, err = s.decider.claimTx(ctx, tx, row.product.ID, selection{ids: []uuid.UUID{row.id}, limit: 1,
				lockFirst: row.quantity != nil || attempt > 1})
			return err
		})
		if err == nil {
			return created, nil
		}
		if attempt < maxClaimAttempts && retryable(err) {
			continue
		}
		return nil, fmt.Errorf("record and decide request: %w", err)
	}
}

// Get returns a request of the tenant; when buyerID is not empty the request
// must also be that buyer's. A HELD request whose hold has run out reads as
// EXPIRED even before the sweeper has passed.
func (s *Service) Get(ctx context.Context, tenantID, id uuid.UUID, buyerID string) (*Request, error) {
	o, err := s.reads.Do(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get reservation %s: %w", id, err)
	}
	if o == nil || !o.VisibleTo(tenantID, buyerID) {
		return nil, fmt.Errorf("get reservation %s: %w", id, db.ErrNotFound)
	}
	return &o.Request, nil
}

// readBatch reads a batch of status reads' requests in one query (nil for
// an id that names none); Get checks whose each is.
func (s *Service) readBatch(ctx context.Context, ids []uuid.UUID) []batch.Result[*Owned] {
	out := make([]batch.Result[*Owned], len(ids))
	found, err := readRequests(ctx, s.pool, ids)
	for i, id := range ids {
		out[i] = batch.Result[*Owned]{Value: found[id], Err: err}
	}
	return out
}

// Owned is a request and whom it belongs to, for a reader to check.
type Owned struct {
	Request
	TenantID uuid.UUID
	BuyerID  string
}

// VisibleTo says whether the tenant may see the request, and when buyerID
// is not empty that buyer too.
func (o *Owned) VisibleTo(tenantID uuid.UUID, buyerID string) bool {
	return o.TenantID == tenantID && (buyerID == "" || o.BuyerID == buyerID)
}

// requestColumns and requestFrom read a request as Get answers it (a HELD
// request whose hold has run out reads EXPIRED).
const (
	requestColumns = `r.id, r.product_id,
		CASE WHEN r.status = 'HELD' AND h.expires_at <= now() THEN 'EXPIRED' ELSE r.status END,
		coalesce(r.reason, ''), r.hold_id, h.numbers, h.expires_at, r.created_at, r.processed_at, r.tenant_id, r.buyer_id`
	requestFrom = `reservation_requests r LEFT JOIN holds h ON h.id = r.hold_id`
)

func scanRequest(row pgx.Row) (*Owned, error) {
	var o Owned
	r := &o.Request
	err := row.Scan(&r.ID, &r.ProductID, &r.Status, &r.Reason, &r.HoldID, &r.Numbers, &r.ExpiresAt, &r.CreatedAt, &r.ProcessedAt,
		&o.TenantID, &o.BuyerID)
	return &o, err
}

// readRequests reads requests by id, whoever they belong to (the reader
// checks): one query for the readers a notification wakes.
func readRequests(ctx context.Context, q db.DBTX, ids []uuid.UUID) (map[uuid.UUID]*Owned, error) {
	rows, err := q.Query(ctx, `SELECT `+requestColumns+` FROM `+requestFrom+` WHERE r.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read %d reservations: %w", len(ids), err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]*Owned, len(ids))
	for rows.Next() {
		o, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("read reservations: %w", err)
		}
		out[o.ID] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read reservations: %w", err)
	}
	return out, nil
}

// arrayLiteral writes numbers as PostgreSQL's array literal, {1,2,3}: the
// batch insert passes each row's numbers as text, arrays of arrays being
// rectangular.
func arrayLiteral(numbers []int32) string {
	b := make([]byte, 0, 2+len(numbers)*6)
	b = append(b, '{')
	for i, n := range numbers {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(append(b, '}'))
}
