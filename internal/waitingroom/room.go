package waitingroom

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"boxoffice/internal/batch"
	"boxoffice/internal/cache"
	"boxoffice/internal/db"
)

// Settings is a product's waiting room, set by the tenant admin.
type Settings struct {
	Enabled            bool `json:"enabled"`
	ActiveShoppers     int  `json:"activeShoppers" minimum:"1" maximum:"1000000" doc:"L: shoppers the pipeline serves at once"`
	ShoppingSeconds    int  `json:"shoppingSeconds" minimum:"1" maximum:"86400" doc:"W: seconds each spends; admission rate is L ÷ W per second"`
	AccessTokenSeconds int  `json:"accessTokenSeconds,omitempty" minimum:"30" maximum:"86400" doc:"Lifetime of an access token (default 900)"`
	ReclaimSeconds     int  `json:"reclaimSeconds,omitempty" minimum:"10" maximum:"86400" doc:"An admitted shopper who has made no reservation this long after admission loses the slot to the next in line (default 120)"`
	ChallengeBits      int  `json:"challengeBits,omitempty" minimum:"0" maximum:"28" doc:"Proof of work to join: solve GET /queue/challenge to this many zero bits first (0: off; 18 takes a browser about a second)"`
	// Paused stops admission (the draw and the line are untouched); set
	// and cleared mid-sale through the admission control.
	Paused bool `json:"paused,omitempty" doc:"Admission paused by the organiser: nobody new is let in until it resumes"`
}

// reclaimAfter is how long an admitted slot may go unused.
func (s Settings) reclaimAfter() time.Duration {
	if s.ReclaimSeconds == 0 {
		return 120 * time.Second
	}
	return time.Duration(s.ReclaimSeconds) * time.Second
}

// Rate is λ = L ÷ W.
func (s Settings) Rate() float64 { return float64(s.ActiveShoppers) / float64(s.ShoppingSeconds) }

func (s Settings) accessTTL() time.Duration {
	if s.AccessTokenSeconds == 0 {
		return 900 * time.Second
	}
	return time.Duration(s.AccessTokenSeconds) * time.Second
}

// Statuses of an entry.
const (
	StatusWaiting  = "WAITING"
	StatusAdmitted = "ADMITTED"
	StatusSoldOut  = "SOLD_OUT"
	StatusExpired  = "EXPIRED"
	// StatusLeft: the shopper left; the turn is over.
	StatusLeft = "LEFT"
	// StatusReclaimed: the shopper was admitted but made no reservation
	// within the room's reclaim time; the slot went to the next in line.
	StatusReclaimed = "RECLAIMED"
	// StatusRemoved: the organiser took the shopper out of the line.
	StatusRemoved = "REMOVED"
)

// ErrNoRoom is returned for a product without a waiting room.
var ErrNoRoom = errors.New("product has no waiting room")

// Entry is one buyer in one product's queue.
type Entry struct {
	ID        uuid.UUID
	ProductID uuid.UUID
	TenantID  uuid.UUID
	BuyerID   string
	Position  int64     // 0 until placed
	Round     uuid.UUID // the presale round entered with a code; uuid.Nil: the general sale's line
}

// Status is what a poll answers.
type Status struct {
	Status      string     `json:"status" enum:"WAITING,ADMITTED,SOLD_OUT,EXPIRED,LEFT,RECLAIMED,REMOVED"`
	Position    int64      `json:"position,omitempty" doc:"Absent while waiting for the draw at opening"`
	NowServing  int64      `json:"nowServing"`
	ETASeconds  float64    `json:"etaSeconds,omitempty"`
	PollAfter   float64    `json:"pollAfterSeconds,omitempty" doc:"While waiting: when to ask again, in seconds — every second near the front, rarely far back (at most 20)"`
	QueueToken  string     `json:"queueToken,omitempty" doc:"A fresher queue token (carrying the position once drawn)"`
	AccessToken string     `json:"accessToken,omitempty" doc:"Send as X-Access-Token with reservations and orders"`
	ExpiresAt   *time.Time `json:"accessExpiresAt,omitempty"`
	// Before the draw: when it runs, how many wait for it, and what it means.
	OpensAt  *time.Time `json:"opensAt,omitempty" doc:"Before the draw: when the sale opens and places are drawn"`
	Entrants int64      `json:"entrants,omitempty" doc:"Before the draw: shoppers entered so far (refreshed about once a second)"`
	Presale  bool       `json:"presale,omitempty" doc:"Waiting for a presale's draw (entered with a code); opensAt is the presale's opening"`
	Message  string     `json:"message,omitempty" doc:"What the status means, for people"`
}

// Service is the waiting room.
type Service struct {
	pool     *pgxpool.Pool
	tokens   *Tokens
	logger   *slog.Logger
	feedback Feedback

	joins *batch.Coalescer[joinRequest, joined]

	signals Signals

	mu    sync.Mutex
	rooms map[uuid.UUID]*roomState
	carry map[uuid.UUID]float64 // admission fractions between controller ticks
	group sync.Mutex            // serialises refreshes (one query per product per second at most)

	draws *cache.Cache[uuid.UUID, []uuid.UUID] // drawn orders, computed once
}

// NewService returns the waiting room service; signals feed its admission
// controller, and feedback's thresholds slow it (zero fields take the
// defaults: 5 s, 10).
func NewService(pool *pgxpool.Pool, tokens *Tokens, signals Signals, feedback Feedback, logger *slog.Logger) *Service {
	if feedback.SlowClaimsAfter <= 0 {
		feedback.SlowClaimsAfter = 5 * time.Second
	}
	if feedback.PaymentTroubleAt <= 0 {
		feedback.PaymentTroubleAt = 10
	}
	s := &Service{pool: pool, tokens: tokens, signals: signals, logger: logger, rooms: map[uuid.UUID]*roomState{}, carry: map[uuid.UUID]float64{},
		feedback: feedback}
	s.joins = &batch.Coalescer[joinRequest, joined]{Linger: joinLinger, MaxRuns: joinRuns, Timeout: 10 * time.Second,
		Run: s.joinBatch}
	// 16 bytes an entrant: 64 MiB holds four million entrants' draws.
	s.draws = cache.NewSized(24*time.Hour, 1000, 64<<20, func(o []uuid.UUID) int { return 16*len(o) + 64 }, s.computeDraw)
	return s
}

// Tokens is the token signer.
func (s *Service) Tokens() *Tokens { return s.tokens }

// queueTTL is how long a queue token is valid: longer than any wait.
const queueTTL = 24 * time.Hour

// Room is what a product's room decides by, fixed when the product is
// created (the opening moves with Reschedule).
type Room struct {
	ProductID     uuid.UUID
	TenantID      uuid.UUID
	OpensAt       time.Time
	PerBuyerLimit int
	Settings      Settings
}

// Create sets up a product's room in the product's transaction: a fresh
// seed, its commitment published.
func Create(ctx context.Context, tx pgx.Tx, r Room) error {
	seed := NewSeed()
	settings, err := json.Marshal(r.Settings)
	if err != nil {
		return fmt.Errorf("encode waiting room settings: %w", err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO waiting_rooms (product_id, seed, commitment, tenant_id, opens_at, per_buyer_limit, settings)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		r.ProductID, seed, Commitment(seed), r.TenantID, r.OpensAt, r.PerBuyerLimit, settings)
	if err != nil {
		return fmt.Errorf("create waiting room: %w", err)
	}
	return nil
}

// Configure changes a room's settings and opening before its draw, in the
// product's transaction.
func Configure(ctx context.Context, tx pgx.Tx, productID uuid.UUID, settings Settings, opensAt time.Time) error {
	if err := lockUndrawn(ctx, tx, productID); err != nil {
		return err
	}
	b, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("encode waiting room settings: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE waiting_rooms SET settings = $2, opens_at = $3, updated_at = now() WHERE product_id = $1`,
		productID, b, opensAt)
	if err != nil {
		return fmt.Errorf("configure waiting room %s: %w", productID, err)
	}
	return nil
}

// Remove turns a product's room off before its draw, with its entries, in
// the product's transaction: the shoppers who joined no longer need a turn.
func Remove(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if err := lockUndrawn(ctx, tx, productID); err != nil {
		return err
	}
	for _, table := range []string{"admission_steps", "queue_entries", "presale_rounds", "waiting_rooms"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE product_id = $1`, productID); err != nil {
			return fmt.Errorf("remove waiting room %s: %w", productID, err)
		}
	}
	return nil
}

// lockUndrawn locks a room row for a change that only a room not yet drawn
// may take.
func lockUndrawn(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	var drawn bool
	err := tx.QueryRow(ctx, `SELECT drawn_at IS NOT NULL FROM waiting_rooms WHERE product_id = $1 FOR UPDATE`, productID).Scan(&drawn)
	if err != nil {
		return fmt.Errorf("waiting room %s: %w", productID, db.NotFound(err))
	}
	if drawn {
		return ErrAlreadyDrawn
	}
	return nil
}

// ErrAlreadyDrawn is returned when moving the opening of a room whose draw
// has taken place.
var ErrAlreadyDrawn = errors.New("waiting room already drawn")

// Reschedule moves a room's opening, in the product's transaction; a room
// without a draw yet only (db.ErrNotFound when the product has no room).
func Reschedule(ctx context.Context, tx pgx.Tx, productID uuid.UUID, opensAt time.Time) error {
	if err := lockUndrawn(ctx, tx, productID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE waiting_rooms SET opens_at = $2, updated_at = now() WHERE product_id = $1`, productID, opensAt)
	if err != nil {
		return fmt.Errorf("reschedule waiting room %s: %w", productID, err)
	}
	return nil
}

// joinLinger is how long the first of a burst of joins waits for company:
// joins before opening are recorded many to a transaction, one commit each.
const joinLinger = time.Millisecond

// joinRuns bounds the join transactions one process runs at once: after
// the draw each waits for the room's row, and more of them would only hold
// more connections; the joins that arrive meanwhile form the next batch.
const joinRuns = 4

type joinRequest struct {
	tenantID, productID uuid.UUID
	buyer               string
}

type joinResult struct {
	entry   Entry
	created bool
	err     error
}

// joined is what a join answers.
type joined struct {
	entry   Entry
	created bool
}

// Join puts the buyer in the product's queue, or returns the entry the buyer
// already has: joining again never changes a place. Before the on-sale time
// entrants wait for the draw; after the draw they are placed at the end.
// Concurrent joins are coalesced: the first caller waits a millisecond,
// then records everyone who arrived meanwhile in one transaction.
func (s *Service) Join(ctx context.Context, tenantID, productID uuid.UUID, buyer string) (Entry, bool, error) {
	j, err := s.joins.Do(ctx, joinRequest{tenantID: tenantID, productID: productID, buyer: buyer})
	return j.entry, j.created, err
}

// joinBatch records a batch of joins, product by product, a product's in
// one transaction: before the draw in one insert, after it taking the next
// positions in the order the joins arrived.
func (s *Service) joinBatch(ctx context.Context, reqs []joinRequest) []batch.Result[joined] {
	type key struct{ tenant, product uuid.UUID }
	groups := map[key][]int{}
	for i, r := range reqs {
		k := key{r.tenantID, r.productID}
		groups[k] = append(groups[k], i)
	}
	out := make([]batch.Result[joined], len(reqs))
	for k, idx := range groups {
		group := make([]joinRequest, len(idx))
		for n, i := range idx {
			group[n] = reqs[i]
		}
		results, err := s.joinMany(ctx, k.tenant, k.product, group)
		for n, i := range idx {
			if err != nil {
				out[i].Err = err
				continue
			}
			out[i] = batch.Result[joined]{Value: joined{entry: results[n].entry, created: results[n].created}, Err: results[n].err}
		}
	}
	return out
}

func (s *Service) joinMany(ctx context.Context, tenantID, productID uuid.UUID, reqs []joinRequest) ([]joinResult, error) {
	var drawn bool
	err := s.pool.QueryRow(ctx, `SELECT drawn_at IS NOT NULL FROM waiting_rooms WHERE product_id = $1 AND tenant_id = $2`,
		productID, tenantID).Scan(&drawn)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoRoom
	}
	if err != nil {
		return nil, fmt.Errorf("waiting room: %w", err)
	}
	buyers := make([]string, len(reqs)) // in arrival order
	for i, r := range reqs {
		buyers[i] = r.buyer
	}
	var entries map[string]Entry
	var created map[string]uuid.UUID
	join := func(tx pgx.Tx) (err error) {
		if drawn {
			entries, created, err = placeAtEnd(ctx, tx, tenantID, productID, buyers)
		} else {
			entries, created, err = enterDraw(ctx, tx, tenantID, productID, buyers)
		}
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, join)
	if errors.Is(err, errDrawnMeanwhile) {
		drawn = true
		err = pgx.BeginFunc(ctx, s.pool, join)
	}
	if err != nil {
		return nil, err
	}
	out := make([]joinResult, len(reqs))
	for i, r := range reqs {
		e := entries[r.buyer]
		// The same buyer twice in one batch: the first is the join, the
		// second a rejoin.
		isNew := created[r.buyer] == e.ID && e.ID != uuid.Nil
		if isNew {
			delete(created, r.buyer)
		}
		out[i] = joinResult{entry: e, created: isNew}
	}
	return out, nil
}

// errDrawnMeanwhile: the room was drawn between the look and the lock.
var errDrawnMeanwhile = errors.New("drawn meanwhile")

// enterDraw records joins before the draw, all in one insert; buyers
// already in the room keep their entries. It returns every buyer's entry
// and the ids of those it created.
func enterDraw(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyers []string) (map[string]Entry, map[string]uuid.UUID, error) {
	// The draw locks the room row; holding it shared until commit makes
	// these entries either visible to the draw or see it done. Without it
	// a join committing during the draw got no position and waited
	// forever.
	var drawnNow, before bool
	if err := tx.QueryRow(ctx, `SELECT drawn_at IS NOT NULL, opens_at > now() FROM waiting_rooms WHERE product_id = $1 FOR SHARE`,
		productID).Scan(&drawnNow, &before); err != nil {
		return nil, nil, fmt.Errorf("lock waiting room: %w", err)
	}
	if drawnNow {
		return nil, nil, errDrawnMeanwhile
	}
	// Insert in buyer order, so that two batches with the same buyers wait
	// for each other rather than deadlock.
	sorted := slices.Clone(buyers)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	ids := newIDs(len(sorted))
	rows, err := tx.Query(ctx, `
		INSERT INTO queue_entries (id, product_id, tenant_id, buyer_id, pre_open)
		SELECT u.id, $1, $2, u.buyer, $5 FROM unnest($3::uuid[], $4::text[]) AS u(id, buyer)
		ON CONFLICT (product_id, buyer_id) DO NOTHING
		RETURNING id, buyer_id`, productID, tenantID, ids, sorted, before)
	if err != nil {
		return nil, nil, fmt.Errorf("join queue: %w", err)
	}
	created := map[string]uuid.UUID{}
	var id uuid.UUID
	var buyer string
	if _, err := pgx.ForEachRow(rows, []any{&id, &buyer}, func() error { created[buyer] = id; return nil }); err != nil {
		return nil, nil, fmt.Errorf("join queue: %w", err)
	}
	entries, err := readEntries(ctx, tx, tenantID, productID, buyers, created)
	return entries, created, err
}

// placeAtEnd records joins after the draw: the buyers not in the room yet
// take the next positions, in the order they arrived. The room row,
// locked first, serialises placements; a batch takes it once, not once a
// buyer (one at a time, the joins of a busy opening outlasted their
// buyers' patience).
func placeAtEnd(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyers []string) (map[string]Entry, map[string]uuid.UUID, error) {
	var before bool
	if err := tx.QueryRow(ctx, `SELECT opens_at > now() FROM waiting_rooms WHERE product_id = $1 FOR UPDATE`,
		productID).Scan(&before); err != nil {
		return nil, nil, fmt.Errorf("lock waiting room: %w", err)
	}
	// A rejoin never changes a place, nor takes one.
	entries, err := readEntries(ctx, tx, tenantID, productID, buyers, nil)
	if err != nil {
		return nil, nil, err
	}
	var fresh []string
	seen := map[string]bool{}
	for _, b := range buyers {
		if _, ok := entries[b]; !ok && !seen[b] {
			seen[b] = true
			fresh = append(fresh, b)
		}
	}
	if len(fresh) == 0 {
		return entries, nil, nil
	}
	ids := newIDs(len(fresh))
	rows, err := tx.Query(ctx, `
		WITH placed AS (
			UPDATE waiting_rooms SET next_position = next_position + cardinality($4::text[])
			WHERE product_id = $1
			RETURNING next_position - cardinality($4::text[]) AS last)
		INSERT INTO queue_entries (id, product_id, tenant_id, buyer_id, pre_open, position)
		SELECT u.id, $1, $2, u.buyer, $5, placed.last + u.ord
		FROM placed, unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS u(id, buyer, ord)
		RETURNING id, buyer_id, position`, productID, tenantID, ids, fresh, before)
	if err != nil {
		return nil, nil, fmt.Errorf("join queue: %w", err)
	}
	created := map[string]uuid.UUID{}
	var id uuid.UUID
	var buyer string
	var position int64
	_, err = pgx.ForEachRow(rows, []any{&id, &buyer, &position}, func() error {
		created[buyer] = id
		entries[buyer] = Entry{ID: id, ProductID: productID, TenantID: tenantID, BuyerID: buyer, Position: position}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("join queue: %w", err)
	}
	return entries, created, nil
}

// newIDs makes n entry ids.
func newIDs(n int) []uuid.UUID {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = db.NewID()
	}
	return ids
}

// readEntries returns the entries of buyers: those in created as
// inserted, the others read (with their position and presale round).
func readEntries(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyers []string, created map[string]uuid.UUID) (map[string]Entry, error) {
	entries := map[string]Entry{}
	var again []string
	for _, b := range buyers {
		if id, ok := created[b]; ok {
			entries[b] = Entry{ID: id, ProductID: productID, TenantID: tenantID, BuyerID: b}
		} else {
			again = append(again, b)
		}
	}
	if len(again) == 0 {
		return entries, nil
	}
	// A code holder in a presale's line keeps it: the token names the
	// round, whose draw a poll waits for.
	rows, err := tx.Query(ctx, `
		SELECT id, buyer_id, coalesce(position, 0), round_id FROM queue_entries WHERE product_id = $1 AND buyer_id = ANY($2)`,
		productID, again)
	if err != nil {
		return nil, fmt.Errorf("read queue entries: %w", err)
	}
	var id uuid.UUID
	var buyer string
	var pos int64
	var round *uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&id, &buyer, &pos, &round}, func() error {
		e := Entry{ID: id, ProductID: productID, TenantID: tenantID, BuyerID: buyer, Position: pos}
		if round != nil {
			e.Round = *round
		}
		entries[buyer] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read queue entries: %w", err)
	}
	return entries, nil
}

// QueueToken signs the entry's queue token.
func (s *Service) QueueToken(e Entry) string { return s.tokens.Queue(e, queueTTL) }

// Leave ends the buyer's turn (freeing an admitted slot).
func (s *Service) Leave(ctx context.Context, token string) error {
	c, err := s.tokens.ParseQueue(token)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE queue_entries SET left_at = now(), ended_at = now() WHERE id = $1 AND ended_at IS NULL`, c.EntryID)
	return err
}

// entrantsSQL counts a room's entrants in the draw (r: waiting_rooms):
// live before the draw, as recorded after it.
const entrantsSQL = `CASE WHEN r.drawn_at IS NULL
		THEN (SELECT count(*) FROM queue_entries e WHERE e.product_id = r.product_id AND e.pre_open AND e.round_id IS NULL)
		ELSE r.pre_open_count END`

// Fairness is what is public about a room's draw.
type Fairness struct {
	Commitment string     `json:"commitment" doc:"hex SHA-256 of the seed, published before opening"`
	Seed       string     `json:"seed,omitempty" doc:"hex seed, revealed after the draw"`
	DrawnAt    *time.Time `json:"drawnAt,omitempty"`
	Entrants   int64      `json:"entrants" doc:"entrants in the draw (so far, before it)"`
	OpensAt    time.Time  `json:"opensAt" doc:"when the product goes on sale and the draw runs"`
	// Presale rounds place their code holders first, so the general draw's
	// first position is the one after theirs.
	PositionsBefore int64         `json:"positionsBefore" doc:"Positions given before the general draw (presale rounds'): its first is position positionsBefore + 1"`
	Presales        []PresaleDraw `json:"presales,omitempty" doc:"The presale rounds: each its own draw among the code holders who entered before it opened"`
	Algorithm       string        `json:"algorithm"`
}

const algorithm = "ticket = SHA-256(seed || 16-byte entry id); entrants ordered by ticket ascending, ties by entry id; the first takes position positionsBefore + 1. Check SHA-256(seed) = commitment."

// Fairness returns the room's commitment, and the seed once drawn.
func (s *Service) Fairness(ctx context.Context, productID uuid.UUID) (*Fairness, error) {
	f := &Fairness{Algorithm: algorithm}
	var seed []byte
	// Before the draw the entrants are counted live: the count is part of
	// what a shopper checks the draw against.
	err := s.pool.QueryRow(ctx, `
		SELECT r.commitment, r.seed, r.drawn_at, r.opens_at, `+entrantsSQL+`, r.draw_offset
		FROM waiting_rooms r WHERE r.product_id = $1`,
		productID).Scan(&f.Commitment, &seed, &f.DrawnAt, &f.OpensAt, &f.Entrants, &f.PositionsBefore)
	if err != nil {
		return nil, fmt.Errorf("waiting room %s: %w", productID, db.NotFound(err))
	}
	if f.DrawnAt != nil {
		f.Seed = hex.EncodeToString(seed)
	}
	if f.Presales, err = s.presaleDraws(ctx, productID); err != nil {
		return nil, err
	}
	return f, nil
}

// DrawOrder recomputes the general sale's draw from the revealed seed and
// the entrants' ids, as anyone can: it must equal the positions given. A
// drawn order never changes, so it is computed once per process and kept
// (by bytes, in a bounded cache); before the draw the answer is empty.
func (s *Service) DrawOrder(ctx context.Context, productID uuid.UUID) ([]uuid.UUID, error) {
	return s.drawnOrder(ctx, productID)
}

// drawnOrder answers a draw from the cache: the key is the product for
// the general sale's draw, the round for a presale's.
func (s *Service) drawnOrder(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
	order, err := s.draws.Get(ctx, id)
	if errors.Is(err, errNotDrawn) {
		return nil, nil
	}
	return order, err
}

// computeDraw is drawnOrder without the cache. An undrawn order's empty
// answer is an error to the cache, so it is not kept.
func (s *Service) computeDraw(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
	order, err := s.drawOrder(ctx, id)
	if err == nil && order == nil {
		return nil, errNotDrawn
	}
	return order, err
}

var errNotDrawn = errors.New("not drawn yet")

func (s *Service) drawOrder(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
	var seed []byte
	var drawn *time.Time
	entrants := `SELECT id FROM queue_entries WHERE round_id = $1 AND pre_open`
	err := s.pool.QueryRow(ctx, `SELECT seed, drawn_at FROM presale_rounds WHERE id = $1`, id).Scan(&seed, &drawn)
	if errors.Is(err, pgx.ErrNoRows) {
		entrants = `SELECT id FROM queue_entries WHERE product_id = $1 AND pre_open AND round_id IS NULL`
		err = s.pool.QueryRow(ctx, `SELECT seed, drawn_at FROM waiting_rooms WHERE product_id = $1`, id).Scan(&seed, &drawn)
	}
	if err != nil {
		return nil, fmt.Errorf("waiting room draw %s: %w", id, db.NotFound(err))
	}
	if drawn == nil {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, entrants, id)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	return Draw(seed, ids), nil
}

// roomState is what polls read: refreshed from the database at most once a
// second, so a poll never queries the database itself.
type roomState struct {
	loadedAt   time.Time
	settings   Settings
	drawn      bool
	nowServing int64
	soldOut    bool
	rate       float64
	positions  map[uuid.UUID]int64 // drawn entrants' positions, loaded once after each draw
	draws      int64               // draws run: presale rounds' and the general sale's
	// rounds are the presale rounds not drawn yet: when each opens, and
	// how many code holders wait for its draw.
	rounds map[uuid.UUID]pendingRound
	steps  []step // admission history: positions up to through admitted at at
	// ended are the buyers whose turn is over (LEFT or RECLAIMED), read
	// incrementally: each load asks only for turns ended since the last.
	ended *endedTurns
	dbNow time.Time // the database's clock at this load
	// Before the draw: the opening time and the entrants so far.
	opensAt  time.Time
	entrants int64
}

// endedTurns is a room's ended turns, buyer → why, shared by its
// successive states: each load adds what ended since the last. Copying the
// set at every load instead was quadratic over an opening (200,000 turns
// ending over minutes, a copy a second).
type endedTurns struct {
	mu  sync.RWMutex
	why map[string]string
}

func (e *endedTurns) get(buyer string) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.why[buyer]
}

type step struct {
	through int64
	at      time.Time
}

type pendingRound struct {
	opensAt  time.Time
	entrants int64
}

// refreshEvery bounds how stale a poll's view of the room may be.
const refreshEvery = time.Second

func (s *Service) state(ctx context.Context, productID uuid.UUID) (*roomState, error) {
	s.mu.Lock()
	st := s.rooms[productID]
	s.mu.Unlock()
	if st != nil && time.Since(st.loadedAt) < refreshEvery {
		return st, nil
	}
	s.group.Lock()
	defer s.group.Unlock()
	s.mu.Lock()
	cur := s.rooms[productID]
	s.mu.Unlock()
	if cur != nil && time.Since(cur.loadedAt) < refreshEvery {
		return cur, nil
	}
	fresh, err := s.load(ctx, productID, cur)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rooms[productID] = fresh
	s.mu.Unlock()
	return fresh, nil
}

func (s *Service) load(ctx context.Context, productID uuid.UUID, prev *roomState) (*roomState, error) {
	st := &roomState{loadedAt: time.Now()}
	var settings []byte
	var drawnAt *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT r.settings, r.drawn_at, r.admitted_through, r.sold_out, r.rate_per_second, r.opens_at,
		       `+entrantsSQL+`, now(),
		       (SELECT count(*) FROM presale_rounds p WHERE p.product_id = r.product_id AND p.drawn_at IS NOT NULL)
		FROM waiting_rooms r WHERE r.product_id = $1`, productID).
		Scan(&settings, &drawnAt, &st.nowServing, &st.soldOut, &st.rate, &st.opensAt, &st.entrants, &st.dbNow, &st.draws)
	if err != nil {
		return nil, fmt.Errorf("waiting room %s: %w", productID, db.NotFound(err))
	}
	if err := jsonUnmarshal(settings, &st.settings); err != nil {
		return nil, err
	}
	st.drawn = drawnAt != nil
	if st.drawn {
		st.draws++
	}
	if prev != nil && prev.positions != nil && prev.draws == st.draws {
		st.positions = prev.positions // positions never change between draws
	} else if st.draws > 0 {
		// Everyone placed by the draws: entrants before each opening, and
		// those who arrived after it but before the draw ran. Later
		// arrivals carry their position in their token.
		rows, err := s.pool.Query(ctx, `SELECT id, position FROM queue_entries WHERE product_id = $1 AND position IS NOT NULL`, productID)
		if err != nil {
			return nil, err
		}
		st.positions = map[uuid.UUID]int64{}
		var id uuid.UUID
		var pos int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &pos}, func() error { st.positions[id] = pos; return nil }); err != nil {
			return nil, err
		}
	}
	if !st.drawn {
		if err := s.loadRounds(ctx, productID, st); err != nil {
			return nil, err
		}
	}
	if err := s.loadEnded(ctx, productID, prev, st); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT through, at FROM admission_steps WHERE product_id = $1 ORDER BY through`, productID)
	if err != nil {
		return nil, err
	}
	var sp step
	if _, err := pgx.ForEachRow(rows, []any{&sp.through, &sp.at}, func() error { st.steps = append(st.steps, sp); return nil }); err != nil {
		return nil, err
	}
	return st, nil
}

// loadRounds reads the presale rounds still to be drawn.
func (s *Service) loadRounds(ctx context.Context, productID uuid.UUID, st *roomState) error {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.opens_at, (SELECT count(*) FROM queue_entries e WHERE e.round_id = p.id AND e.pre_open)
		FROM presale_rounds p WHERE p.product_id = $1 AND p.drawn_at IS NULL`, productID)
	if err != nil {
		return fmt.Errorf("presale rounds of %s: %w", productID, err)
	}
	var id uuid.UUID
	var r pendingRound
	st.rounds = map[uuid.UUID]pendingRound{}
	_, err = pgx.ForEachRow(rows, []any{&id, &r.opensAt, &r.entrants}, func() error { st.rounds[id] = r; return nil })
	if err != nil {
		return fmt.Errorf("presale rounds of %s: %w", productID, err)
	}
	return nil
}

// loadEnded brings the set of ended turns up to date: those ended since the
// previous load (with a second's overlap for transactions that committed
// late), or all of them on the first load.
func (s *Service) loadEnded(ctx context.Context, productID uuid.UUID, prev, st *roomState) error {
	since := time.Time{}
	if prev != nil && prev.ended != nil {
		since = prev.dbNow.Add(-time.Second)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT buyer_id, CASE WHEN reclaimed_at IS NOT NULL THEN 'RECLAIMED' WHEN removed_at IS NOT NULL THEN 'REMOVED' ELSE 'LEFT' END
		FROM queue_entries WHERE product_id = $1 AND ended_at IS NOT NULL AND ended_at >= $2`, productID, since)
	if err != nil {
		return fmt.Errorf("ended turns: %w", err)
	}
	type ended struct{ Buyer, Why string }
	fresh, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ended])
	if err != nil {
		return fmt.Errorf("ended turns: %w", err)
	}
	if prev != nil && prev.ended != nil {
		st.ended = prev.ended
	} else {
		st.ended = &endedTurns{why: map[string]string{}}
	}
	st.ended.mu.Lock()
	defer st.ended.mu.Unlock()
	for _, e := range fresh {
		st.ended.why[e.Buyer] = e.Why
	}
	return nil
}

// Ended says whether the buyer's turn in the product's room is over, and
// why: StatusLeft, StatusReclaimed, StatusRemoved, or "" while it lasts. Answered from the
// room's state (at most a second old), never a query per call.
func (s *Service) Ended(ctx context.Context, productID uuid.UUID, buyer string) (string, error) {
	st, err := s.state(ctx, productID)
	if err != nil {
		return "", err
	}
	return st.ended.get(buyer), nil
}

// Poll answers a queue token from memory: the position it carries (or the
// draw's, once drawn) against the room's "now serving".
func (s *Service) Poll(ctx context.Context, token string) (*Status, error) {
	c, err := s.tokens.ParseQueue(token)
	if err != nil {
		return nil, err
	}
	st, err := s.state(ctx, c.ProductID)
	if err != nil {
		return nil, err
	}
	out := &Status{Status: StatusWaiting, NowServing: st.nowServing, Position: c.Position}
	if why := st.ended.get(c.Subject); why != "" {
		out.Status = why
		return out, nil
	}
	if out.Position == 0 && st.positions != nil {
		if pos, ok := st.positions[c.EntryID]; ok {
			out.Position = pos
			out.QueueToken = s.tokens.Queue(Entry{ID: c.EntryID, ProductID: c.ProductID, TenantID: c.TenantID,
				BuyerID: c.Subject, Position: pos, Round: c.Round}, queueTTL)
		}
	}
	if round, ok := st.rounds[c.Round]; ok && out.Position == 0 {
		out.OpensAt, out.Entrants, out.Presale = &round.opensAt, round.entrants, true
		out.Message = "Places in the presale are drawn at random among the code holders who entered before it opens; " +
			"coming early or refreshing does not change your chance."
	} else if !st.drawn && out.Position == 0 {
		opens := st.opensAt
		out.OpensAt, out.Entrants = &opens, st.entrants
		out.Message = "Places are drawn at random among everyone who entered before the sale opens; " +
			"coming early or refreshing does not change your chance."
	}
	switch {
	case out.Position > 0 && out.Position <= st.nowServing:
		i := sort.Search(len(st.steps), func(i int) bool { return st.steps[i].through >= out.Position })
		at := time.Now()
		if i < len(st.steps) {
			at = st.steps[i].at
		}
		exp := at.Add(st.settings.accessTTL())
		if time.Now().After(exp) {
			out.Status = StatusExpired
			return out, nil
		}
		out.Status = StatusAdmitted
		out.AccessToken = s.tokens.Access(c.TenantID, c.ProductID, c.Subject, exp)
		out.ExpiresAt = &exp
	case st.soldOut:
		out.Status = StatusSoldOut
	case out.Position > 0 && st.rate > 0:
		out.ETASeconds = float64(out.Position-st.nowServing) / st.rate
	}
	if out.Status == StatusWaiting {
		out.PollAfter = pollAfter(out, time.Now()).Seconds()
	}
	return out, nil
}

// Poll advice bounds: a shopper near the front learns of the admission
// within a second; one far back asks at most every maxPollAfter; the
// entrants of an opening ask again spread over drawSpread after it, not
// all in its first second.
const (
	minPollAfter = time.Second
	maxPollAfter = 20 * time.Second
	drawSpread   = 3 * time.Second
)

// pollAfter says when a waiting shopper should ask again: a quarter of the
// expected wait (the estimate firms up as the turn nears), until the draw
// before it, or now and then while admission is paused. Polls are answered
// from memory, but 200,000 shoppers asking every second would still be
// 200,000 requests a second.
func pollAfter(st *Status, now time.Time) time.Duration {
	var d time.Duration
	switch {
	case st.ETASeconds > 0:
		d = time.Duration(st.ETASeconds * float64(time.Second) / 4)
	case st.Position == 0 && st.OpensAt != nil:
		d = st.OpensAt.Sub(now)
		if d < maxPollAfter {
			d += rand.N(drawSpread)
		}
	default:
		d = 10 * time.Second
	}
	return min(max(d, minPollAfter), maxPollAfter).Round(100 * time.Millisecond)
}
