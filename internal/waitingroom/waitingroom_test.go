package waitingroom_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/admission"
	"boxoffice/internal/db"
	"boxoffice/internal/dbtest"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

type testBundle struct {
	env     *testfix.Env
	rooms   *waitingroom.Service
	product *product.Product
}

func setup(t *testing.T, capacity int, room waitingroom.Settings, onSale time.Time) *testBundle {
	t.Helper()
	env := testfix.New(t, testfix.Options{})
	room.Enabled = true
	p := env.Product(t, testfix.ProductOpts{Capacity: capacity, PerBuyerLimit: 2, WaitingRoom: &room, OnSaleAt: onSale})
	return &testBundle{env: env, rooms: env.Rooms, product: p}
}

func (b *testBundle) join(t *testing.T, buyer string) waitingroom.Entry {
	t.Helper()
	e, _, err := b.rooms.Join(context.Background(), b.product.TenantID, b.product.ID, buyer)
	require.NoError(t, err)
	return e
}

func (b *testBundle) open(t *testing.T) {
	t.Helper()
	b.env.Open(t, b.product)
}

// drawn has buyers b0…b(n-1) join before opening, opens the sale and runs
// the draw; it returns their entries in joining order.
func (b *testBundle) drawn(t *testing.T, n int) []waitingroom.Entry {
	t.Helper()
	entries := make([]waitingroom.Entry, n)
	for i := range n {
		entries[i] = b.join(t, fmt.Sprintf("b%d", i))
	}
	b.open(t)
	b.tick(t, 0) // the draw
	return entries
}

func (b *testBundle) tick(t *testing.T, elapsed time.Duration) waitingroom.TickResult {
	t.Helper()
	b.env.Exec(t, `UPDATE waiting_rooms SET updated_at = now() - make_interval(secs => $2) WHERE product_id = $1`,
		b.product.ID, elapsed.Seconds())
	res, err := b.rooms.Tick(context.Background())
	require.NoError(t, err)
	for _, r := range res {
		if r.ProductID == b.product.ID {
			return r
		}
	}
	t.Fatal("room not ticked")
	return waitingroom.TickResult{}
}

func TestDrawIsVerifiableAndPlacesAreKept(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 5, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	ctx := context.Background()

	before, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	require.Empty(t, before.Seed, "the seed stays secret before opening")

	var entries []waitingroom.Entry
	for i := range 20 {
		e := b.join(t, fmt.Sprintf("early-%d", i))
		require.Zero(t, e.Position, "in the draw: no position yet")
		entries = append(entries, e)
	}
	require.Equal(t, 20.0, b.pollFresh(t, entries[0]).PollAfter, "an hour before the draw: ask again in 20 s")
	again := b.join(t, "early-3")
	require.Equal(t, entries[3].ID, again.ID, "joining again returns the same entry")

	b.open(t)
	res := b.tick(t, 0)
	require.Equal(t, int64(20), res.Drawn)
	late1, late2 := b.join(t, "late-1"), b.join(t, "late-2")
	require.Equal(t, int64(21), late1.Position, "later arrivals queue in arrival order")
	require.Equal(t, int64(22), late2.Position)
	require.Equal(t, late1, b.join(t, "late-1"), "a rejoin never improves a place")

	after, err := b.rooms.Fairness(ctx, b.product.ID)
	require.NoError(t, err)
	seed, err := hex.DecodeString(after.Seed)
	require.NoError(t, err)
	sum := sha256.Sum256(seed)
	require.Equal(t, before.Commitment, hex.EncodeToString(sum[:]), "the revealed seed matches the commitment published before")

	ids := make([]uuid.UUID, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	want := waitingroom.Draw(seed, ids) // anyone can recompute this
	order, err := b.rooms.DrawOrder(ctx, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, want, order)
	rows, err := b.env.Schema.Pool.Query(ctx, `SELECT id FROM queue_entries WHERE pre_open ORDER BY position`)
	require.NoError(t, err)
	byPosition, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.Equal(t, want, byPosition, "positions are the draw's order")
	var distinct int
	require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `SELECT count(DISTINCT position) FROM queue_entries`).Scan(&distinct))
	require.Equal(t, 22, distinct, "positions are unique")
}

// An opening's late arrivals come by the thousand a second: joined
// together, they still take every position after the draw's once, and a
// rejoin takes none.
func TestJoinsAfterTheDrawTakeTheNextPositions(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 5, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	early := b.drawn(t, 10)
	const late = 300
	entries := make([]waitingroom.Entry, late)
	var wg sync.WaitGroup
	for i := range late {
		wg.Go(func() {
			e, created, err := b.rooms.Join(context.Background(), b.product.TenantID, b.product.ID, fmt.Sprintf("late-%d", i))
			assert.NoError(t, err)
			assert.True(t, created)
			entries[i] = e
		})
		if i%50 == 0 {
			// Rejoins among them, before and after the draw.
			wg.Go(func() {
				_, created, err := b.rooms.Join(context.Background(), b.product.TenantID, b.product.ID, fmt.Sprintf("b%d", i/50))
				assert.NoError(t, err)
				assert.False(t, created)
			})
		}
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, e := range entries {
		require.Greater(t, e.Position, int64(10), "after the draw's places")
		require.LessOrEqual(t, e.Position, int64(10+late), "no place skipped")
		require.False(t, seen[e.Position], "position %d given twice", e.Position)
		seen[e.Position] = true
	}
	require.Equal(t, entries[7], b.join(t, "late-7"), "a rejoin keeps its place")
	require.Equal(t, early[3].ID, b.join(t, "b3").ID)
	var next int64
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT next_position FROM waiting_rooms WHERE product_id = $1`, b.product.ID).Scan(&next))
	require.Equal(t, int64(10+late), next, "rejoins took no place")
}

func TestAdmitFollowsTheRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// λ = L ÷ W = 50 ÷ 20 = 2.5 per second; a tick every second for a minute.
		carry, admitted, waiting := 0.0, int64(0), int64(1000)
		last := time.Now()
		for range 60 {
			time.Sleep(time.Second)
			now := time.Now()
			n, c, reason := waitingroom.Admit(waitingroom.AdmitInput{Rate: 50.0 / 20, Seconds: now.Sub(last).Seconds(), Carry: carry,
				Active: 0, Capacity: 1_000_000, Waiting: waiting - admitted, Available: 1_000_000, PerBuyer: 2})
			require.Empty(t, reason)
			admitted, carry, last = admitted+n, c, now
		}
		require.Equal(t, int64(150), admitted)
	})
	n, _, reason := waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Active: 8, Wanted: 16, Capacity: 10, Waiting: 100, Available: 1000, PerBuyer: 2})
	require.Equal(t, int64(2), n, "never more than the free shopper slots")
	require.NotEmpty(t, reason)
	n, _, reason = waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Active: 3, Wanted: 6, Capacity: 10, Waiting: 100, Available: 6, PerBuyer: 2})
	require.Zero(t, n, "3 shoppers × 2 can take the 6 left")
	require.Contains(t, reason, "stock")
	n, _, _ = waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Capacity: 10, Waiting: 3, Available: 100, PerBuyer: 2})
	require.Equal(t, int64(3), n, "never more than are waiting")
	n, _, reason = waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Capacity: 30, Waiting: 49, Available: 4, PerBuyer: 6})
	require.Equal(t, int64(1), n, "the last 4 numbers, fewer than the limit of 6, are one shopper's to take")
	require.NotEmpty(t, reason)
	n, _, _ = waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Active: 3, Wanted: 6, Capacity: 10, Waiting: 100, Available: 7, PerBuyer: 2})
	require.Equal(t, int64(1), n, "3 shoppers × 2 can take 6 of the 7 left: one more for the last")
	n, _, _ = waitingroom.Admit(waitingroom.AdmitInput{Rate: 100, Seconds: 1, Active: 3, Wanted: 12, Capacity: 10, Waiting: 100, Available: 18, PerBuyer: 6})
	require.Equal(t, int64(1), n, "3 shoppers holding 2 of their 6 each may take 12 of the 18 left: one more for the other 6")
}

// A stock smaller than the per-buyer limit is sold through the room: the
// room once admitted no one while fewer numbers were left than one buyer
// may take (1 ÷ 2 shoppers, rounded down), and the last seats of a sale
// stayed unsold with buyers waiting.
func TestAdmissionOfTheLastNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t, 1, waitingroom.Settings{ActiveShoppers: 10, ShoppingSeconds: 2}, time.Now().Add(time.Hour))
	entries := b.drawn(t, 3)
	require.Equal(t, int64(1), b.tick(t, 3*time.Second).Admitted, "one shopper for the one number")
	require.Equal(t, int64(0), b.tick(t, 3*time.Second).Admitted, "and no more while that one is in")
	admitted := 0
	for _, e := range entries {
		if b.pollFresh(t, e).Status == waitingroom.StatusAdmitted {
			admitted++
		}
	}
	require.Equal(t, 1, admitted)
}

// What admitted shoppers already hold is out of the stock left: counting it
// against them again, at the full per-buyer limit, kept numbers nobody
// could take from the people waiting for them.
func TestAdmissionCountsWhatShoppersHold(t *testing.T) {
	t.Parallel()
	// 6 numbers, at most 2 a buyer: 3 shoppers in at once.
	b := setup(t, 6, waitingroom.Settings{ActiveShoppers: 100, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	entries := b.drawn(t, 6)
	require.Equal(t, int64(3), b.tick(t, time.Second).Admitted)
	var in []waitingroom.Entry
	for _, e := range entries {
		if b.pollFresh(t, e).Status == waitingroom.StatusAdmitted {
			in = append(in, e)
		}
	}
	require.Len(t, in, 3)
	// Each takes one number; the first then leaves with it.
	for _, e := range in {
		b.env.Reserve(t, b.product, e.BuyerID, reservation.Params{Quantity: 1})
	}
	b.env.Drain(t, b.product, 10)
	require.NoError(t, b.rooms.Leave(context.Background(), b.rooms.QueueToken(in[0])))
	// 3 numbers left; the two still in may take one more each, so one
	// number is the next shopper's (counting the two at 2 each spoke for 4).
	res := b.tick(t, time.Second)
	require.Equal(t, int64(1), res.Admitted, res.Reason)
	require.Zero(t, b.tick(t, time.Second).Admitted, "and then the stock left is spoken for")
}

func TestAdmissionInTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 4, ShoppingSeconds: 2}, time.Now().Add(time.Hour))
	entries := b.drawn(t, 10)
	res := b.tick(t, 3*time.Second)
	require.Equal(t, int64(4), res.Admitted, "λ = 2/s for 3 s is 6, capped by the 4 shopper slots")
	require.Equal(t, int64(0), b.tick(t, 3*time.Second).Admitted, "all slots busy")

	// A shopper who leaves frees a slot.
	var first waitingroom.Entry
	for _, e := range entries {
		st := b.pollFresh(t, e)
		if st.Status == waitingroom.StatusAdmitted {
			first = e
			require.NotEmpty(t, st.AccessToken)
			require.NoError(t, b.rooms.Tokens().VerifyAccess(st.AccessToken, b.product.TenantID, b.product.ID, e.BuyerID))
			break
		}
	}
	require.NotEqual(t, uuid.Nil, first.ID)
	require.NoError(t, b.rooms.Leave(context.Background(), b.rooms.QueueToken(first)))
	require.Equal(t, int64(1), b.tick(t, 3*time.Second).Admitted)
}

// Every work process steps the rooms: two processes stepping one room at
// the same moment admit what the elapsed time allows once, not twice.
func TestTwoProcessesStepOneRoom(t *testing.T) {
	t.Parallel()
	b := setup(t, 1000, waitingroom.Settings{ActiveShoppers: 100, ShoppingSeconds: 10}, time.Now().Add(time.Hour))
	b.drawn(t, 200)
	other := waitingroom.NewService(b.env.Schema.Pool, b.rooms.Tokens(), admission.Signals{}, waitingroom.Feedback{}, b.env.Logger)
	// λ = 100 ÷ 10 = 10 a second, 2 s since the last step: 20 to admit,
	// and one more for each tenth of a second the steps take to run.
	start := time.Now()
	b.env.Exec(t, `UPDATE waiting_rooms SET updated_at = now() - interval '2 seconds' WHERE product_id = $1`, b.product.ID)
	var wg sync.WaitGroup
	for _, svc := range []*waitingroom.Service{b.rooms, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Tick(context.Background())
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	var through int64
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(),
		`SELECT admitted_through FROM waiting_rooms WHERE product_id = $1`, b.product.ID).Scan(&through))
	require.GreaterOrEqual(t, through, int64(20))
	// A second step admitting again would reach 40; one that admits for the
	// time since the first stays within what the whole run's time allows
	// (a loaded machine may take a tenth of a second or more between them).
	allowed := int64(math.Ceil((2+time.Since(start).Seconds())*10)) + 1
	require.LessOrEqual(t, through, allowed, "the second step admits for the time since the first, not again")
}

// pollFresh polls through a new service so the cache is cold.
func (b *testBundle) pollFresh(t *testing.T, e waitingroom.Entry) *waitingroom.Status {
	t.Helper()
	svc := waitingroom.NewService(b.env.Schema.Pool, b.rooms.Tokens(), admission.Signals{}, waitingroom.Feedback{}, b.env.Logger)
	st, err := svc.Poll(context.Background(), b.rooms.QueueToken(e))
	require.NoError(t, err)
	return st
}

func TestStockAwareAndSoldOut(t *testing.T) {
	t.Parallel()
	b := setup(t, 4, waitingroom.Settings{ActiveShoppers: 100, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	b.drawn(t, 6)
	res := b.tick(t, time.Second)
	require.Equal(t, int64(2), res.Admitted, "2 shoppers × 2 numbers each is all 4 numbers")
	res = b.tick(t, time.Second)
	require.Zero(t, res.Admitted)
	require.Contains(t, res.Reason, "stock")

	// The numbers go: everyone still waiting hears SOLD_OUT.
	r := b.env.Reserve(t, b.product, "someone", reservation.Params{Quantity: 2})
	r2 := b.env.Reserve(t, b.product, "someone-else", reservation.Params{Quantity: 2})
	b.env.Drain(t, b.product, 10)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, b.product, r.ID).Status)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, b.product, r2.ID).Status)
	require.True(t, b.tick(t, time.Second).SoldOut)
	waiting := b.join(t, "latecomer") // placed after everyone, never admitted
	require.Equal(t, waitingroom.StatusSoldOut, b.pollFresh(t, waiting).Status)
}

func TestAccessTokenAttacks(t *testing.T) {
	t.Parallel()
	tokens := waitingroom.NewTokens([]byte("secret"))
	tenant, prod, other := uuid.New(), uuid.New(), uuid.New()
	good := tokens.Access(tenant, prod, "alice", time.Now().Add(time.Minute))
	require.NoError(t, tokens.VerifyAccess(good, tenant, prod, "alice"))

	claims := jwt.MapClaims{"knd": "access", "pid": prod.String(), "tid": tenant.String(), "sub": "alice", "exp": time.Now().Add(time.Minute).Unix()}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString([]byte("secret"))
	require.NoError(t, err)
	forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte("guess"))
	require.NoError(t, err)
	queueToken := tokens.Queue(waitingroom.Entry{ID: uuid.New(), ProductID: prod, TenantID: tenant, BuyerID: "alice"}, time.Minute)

	for name, check := range map[string]error{
		"alg none":        tokens.VerifyAccess(none, tenant, prod, "alice"),
		"wrong algorithm": tokens.VerifyAccess(hs512, tenant, prod, "alice"),
		"wrong secret":    tokens.VerifyAccess(forged, tenant, prod, "alice"),
		"another product": tokens.VerifyAccess(good, tenant, other, "alice"),
		"another tenant":  tokens.VerifyAccess(good, other, prod, "alice"),
		"another buyer":   tokens.VerifyAccess(good, tenant, prod, "mallory"),
		"expired":         tokens.VerifyAccess(tokens.Access(tenant, prod, "alice", time.Now().Add(-time.Minute)), tenant, prod, "alice"),
		"a queue token":   tokens.VerifyAccess(queueToken, tenant, prod, "alice"),
		"garbage":         tokens.VerifyAccess("a.b.c", tenant, prod, "alice"),
	} {
		require.ErrorIs(t, check, waitingroom.ErrBadToken, name)
	}
	_, err = tokens.ParseQueue(good)
	require.ErrorIs(t, err, waitingroom.ErrBadToken, "an access token is not a queue token")

	// Queue tokens: a changed place, another secret, or an old token are refused.
	e := waitingroom.Entry{ID: uuid.New(), ProductID: prod, TenantID: tenant, BuyerID: "alice", Position: 7}
	q := tokens.Queue(e, time.Minute)
	c, err := tokens.ParseQueue(q)
	require.NoError(t, err)
	require.Equal(t, int64(7), c.Position)
	require.Equal(t, "alice", c.Subject)
	better := tokens.Queue(waitingroom.Entry{ID: e.ID, ProductID: prod, TenantID: tenant, BuyerID: "alice", Position: 1}, time.Minute)
	forgedQueue := strings.Split(better, ".")[0] + "." + strings.Split(q, ".")[1]
	_, err = tokens.ParseQueue(forgedQueue)
	require.ErrorIs(t, err, waitingroom.ErrBadToken, "a better place with the old signature")
	_, err = waitingroom.NewTokens([]byte("other")).ParseQueue(q)
	require.ErrorIs(t, err, waitingroom.ErrBadToken)
	_, err = tokens.ParseQueue(tokens.Queue(e, -time.Minute))
	require.ErrorIs(t, err, waitingroom.ErrBadToken, "expired")
	for _, junk := range []string{"", ".", "abc.def", strings.Repeat("A", 2000)} {
		_, err = tokens.ParseQueue(junk)
		require.ErrorIs(t, err, waitingroom.ErrBadToken)
	}
}

func TestPollsDoNotQueryTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 5, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	entries := b.drawn(t, 50)
	b.tick(t, time.Second)

	tracer := &dbtest.QueryCounter{}
	pool, err := db.Open(context.Background(), b.env.Schema.URL, db.PoolOptions{MaxConns: 2, Schema: b.env.Schema.Name, Tracer: tracer})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := waitingroom.NewService(pool, b.rooms.Tokens(), admission.Signals{}, waitingroom.Feedback{}, b.env.Logger)
	tokens := make([]string, len(entries))
	for i, e := range entries {
		tokens[i] = b.rooms.QueueToken(e)
	}
	_, err = svc.Poll(context.Background(), tokens[0]) // loads the room once
	require.NoError(t, err)
	warm := tracer.Count()
	require.NotZero(t, warm)

	start := time.Now()
	admitted := 0
	for i := range 5000 {
		st, err := svc.Poll(context.Background(), tokens[i%len(tokens)])
		require.NoError(t, err)
		if st.Status == waitingroom.StatusAdmitted {
			admitted++
		}
	}
	// The room is read again at most once a second, however long the polls
	// took (warm is what one read costs).
	refreshes := int64(time.Since(start)/time.Second) + 1
	require.LessOrEqual(t, tracer.Count()-warm, warm*refreshes, "5,000 polls, no query of their own")
	require.Equal(t, 5*5000/len(tokens), admitted, "the 5 admitted see it on every poll")
}

func TestFeedbackSlowsAndRecovers(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 10, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	b.drawn(t, 30)
	require.InDelta(t, 10, b.tick(t, time.Second).Rate, 0.001)

	// The claim pipeline falls behind: a request QUEUED for a minute.
	r := b.env.Reserve(t, b.product, "x", reservation.Params{Quantity: 1})
	b.env.Exec(t, `UPDATE reservation_requests SET created_at = now() - interval '1 minute' WHERE id = $1`, r.ID)
	slow := b.tick(t, time.Second)
	require.InDelta(t, 5, slow.Rate, 0.001)
	require.Contains(t, slow.Reason, "claims falling behind")

	b.env.Drain(t, b.product, 10)
	require.InDelta(t, 10, b.tick(t, time.Second).Rate, 0.001, "back to λ once claims catch up")
}

// Someone who arrives after opening but before the draw runs is placed by
// the draw, after the entrants, and learns the position from a poll.
func TestArrivalBetweenOpeningAndDraw(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 1, ShoppingSeconds: 100}, time.Now().Add(time.Hour))
	early := b.join(t, "early")
	b.open(t)
	late := b.join(t, "late") // the draw has not run yet
	require.Zero(t, late.Position)
	b.tick(t, 0)
	st := b.pollFresh(t, late)
	require.Equal(t, int64(2), st.Position)
	require.NotEmpty(t, st.QueueToken, "a fresher token carries the position")
	require.Equal(t, int64(1), b.pollFresh(t, early).Position)
}

// A turn ends when the shopper leaves or when an admitted slot goes unused
// past the reclaim time: the slot goes to the next in line, and polls and
// the access check know the turn is over (a valid signature is not enough).
func TestLeaveAndReclaimEndTurns(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 2, ShoppingSeconds: 1, ReclaimSeconds: 30}, time.Now().Add(time.Hour))
	entries := b.drawn(t, 6)
	require.Equal(t, int64(2), b.tick(t, 5*time.Second).Admitted)
	admitted := func() []waitingroom.Entry {
		var out []waitingroom.Entry
		for _, e := range entries {
			if b.pollFresh(t, e).Status == waitingroom.StatusAdmitted {
				out = append(out, e)
			}
		}
		return out
	}
	first := admitted()
	require.Len(t, first, 2)
	leaver, shopper := first[0], first[1]

	// Leaving ends the turn at once for polls and the access check.
	require.NoError(t, b.rooms.Leave(context.Background(), b.rooms.QueueToken(leaver)))
	require.Equal(t, waitingroom.StatusLeft, b.pollFresh(t, leaver).Status)
	why, err := waitingroom.NewService(b.env.Schema.Pool, b.rooms.Tokens(), admission.Signals{}, waitingroom.Feedback{}, b.env.Logger).Ended(context.Background(), b.product.ID, leaver.BuyerID)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusLeft, why)

	// The shopper reserves; the slot the leaver freed goes to the next.
	b.env.Reserve(t, b.product, shopper.BuyerID, reservation.Params{Quantity: 1})
	require.Equal(t, int64(1), b.tick(t, 5*time.Second).Admitted)
	var idle waitingroom.Entry
	for _, e := range admitted() {
		if e.ID != shopper.ID {
			idle = e
		}
	}
	require.NotEqual(t, uuid.Nil, idle.ID)

	// Past the reclaim time the idle shopper's slot is taken back and given
	// on; the shopper who reserved keeps theirs.
	b.env.Exec(t, `UPDATE queue_entries SET admitted_at = admitted_at - interval '1 minute' WHERE product_id = $1`, b.product.ID)
	res := b.tick(t, 5*time.Second)
	require.Equal(t, int64(1), res.Reclaimed)
	require.Equal(t, int64(1), res.Admitted, "the reclaimed slot goes to the next in line")
	require.Equal(t, waitingroom.StatusReclaimed, b.pollFresh(t, idle).Status)
	require.Equal(t, waitingroom.StatusAdmitted, b.pollFresh(t, shopper).Status)
	// Joining again does not bring the turn back.
	again, _, err := b.rooms.Join(context.Background(), b.product.TenantID, b.product.ID, idle.BuyerID)
	require.NoError(t, err)
	require.Equal(t, waitingroom.StatusReclaimed, b.pollFresh(t, again).Status)
}

// A join that lands while the draw runs is either in the draw or placed
// after it, never left without a place: it once committed with no position
// during the draw and its shopper waited forever.
func TestJoinDuringTheDraw(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 10, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	b.open(t)
	ctx := context.Background()
	// The draw holds the room row locked while it places everyone.
	draw, err := b.env.Schema.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = draw.Rollback(ctx) }()
	_, err = draw.Exec(ctx, `SELECT 1 FROM waiting_rooms WHERE product_id = $1 FOR UPDATE`, b.product.ID)
	require.NoError(t, err)

	joined := make(chan waitingroom.Entry, 1)
	go func() {
		e, _, err := b.rooms.Join(ctx, b.product.TenantID, b.product.ID, "late")
		assert.NoError(t, err)
		joined <- e
	}()
	// Wait until the join has either finished or is waiting for the draw.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var waiting int
		assert.NoError(c, b.env.Schema.Pool.QueryRow(ctx,
			`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'`).Scan(&waiting))
		assert.True(c, waiting > 0 || len(joined) > 0)
	}, 10*time.Second, 10*time.Millisecond)
	_, err = draw.Exec(ctx, `UPDATE waiting_rooms SET drawn_at = now() WHERE product_id = $1`, b.product.ID)
	require.NoError(t, err)
	require.NoError(t, draw.Commit(ctx))

	e := <-joined
	var position *int64
	require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `SELECT position FROM queue_entries WHERE id = $1`, e.ID).Scan(&position))
	require.NotNil(t, position, "placed after the draw")
	require.Positive(t, e.Position)
}

// Rescheduling a product before its sale moves its room's opening with it;
// once on sale it cannot move.
func TestRescheduleMovesTheOpening(t *testing.T) {
	t.Parallel()
	b := setup(t, 100, waitingroom.Settings{ActiveShoppers: 2, ShoppingSeconds: 1}, time.Now().Add(time.Hour))
	later := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	_, err := b.env.Products.Reschedule(context.Background(), b.product.TenantID, b.product.ID, later)
	require.NoError(t, err)
	f, err := b.rooms.Fairness(context.Background(), b.product.ID)
	require.NoError(t, err)
	require.True(t, later.Equal(f.OpensAt), "room opens %s, want %s", f.OpensAt, later)

	b.join(t, "early")
	b.open(t)
	require.Equal(t, int64(1), b.tick(t, 0).Drawn, "opened now: the draw runs")
	_, err = b.env.Products.Reschedule(context.Background(), b.product.TenantID, b.product.ID, later)
	require.ErrorIs(t, err, product.ErrAlreadyOnSale)
}
