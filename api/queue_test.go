package api_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
)

// The walk-through with the room on: join, wait, be admitted, reserve with
// the access token — and without one, be refused.
func TestWaitingRoomGatesReservations(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 1}
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 50, WaitingRoom: room, OnSaleAt: time.Now().Add(time.Hour)})
	base := "/v1/products/" + p.ID.String()

	r := b.do(t, http.MethodGet, base+"/queue/fairness", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.NotEmpty(t, r.body["commitment"])
	require.Nil(t, r.body["seed"])

	r = b.do(t, http.MethodPost, base+"/queue", b.buyer, nil)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	token := r.body["queueToken"].(string)
	r = b.do(t, http.MethodPost, base+"/queue", b.buyer, nil)
	require.Equal(t, http.StatusOK, r.status, "joining again: the same entry")
	// The token is signed anew (its expiry moves on with the clock's second).
	first, err := b.env.Rooms.Tokens().ParseQueue(token)
	require.NoError(t, err)
	again, err := b.env.Rooms.Tokens().ParseQueue(r.body["queueToken"].(string))
	require.NoError(t, err)
	require.Equal(t, first.EntryID, again.EntryID)

	r = b.do(t, http.MethodGet, "/v1/queue/"+token, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "WAITING", r.body["status"])
	require.Equal(t, "public, max-age=1", r.header.Get("Cache-Control"))
	// Before the draw a poll says when it runs, how many have entered, and
	// that places are drawn; the fairness page counts entrants live.
	require.Equal(t, p.OnSaleAt.UTC().Format(time.RFC3339), mustTime(t, r.body["opensAt"]).UTC().Format(time.RFC3339))
	require.EqualValues(t, 1, r.body["entrants"])
	require.Contains(t, r.body["message"], "drawn at random")
	require.EqualValues(t, 1, b.do(t, http.MethodGet, base+"/queue/fairness", "", nil).body["entrants"])
	requireProblem(t, b.do(t, http.MethodGet, "/v1/queue/not-a-token", "", nil), 401, "INVALID_QUEUE_TOKEN")

	// Without an access token the reservation is refused, whatever else is right.
	requireProblem(t, b.do(t, http.MethodPost, base+"/reservations", b.buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "k1"), 401, "ACCESS_TOKEN_REQUIRED")
	requireProblem(t, b.do(t, http.MethodPost, base+"/reservations", b.buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "k1", "X-Access-Token", token), 403, "ACCESS_TOKEN_INVALID")

	// Opening: the draw, then admission.
	b.env.Open(t, p)
	_, err = b.env.Rooms.Tick(t.Context())
	require.NoError(t, err)
	b.env.Exec(t, `UPDATE waiting_rooms SET updated_at = now() - interval '1 second' WHERE product_id = $1`, p.ID)
	_, err = b.env.Rooms.Tick(t.Context())
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = b.do(c, http.MethodGet, "/v1/queue/"+token, "", nil)
		assert.Equal(c, "ADMITTED", r.body["status"])
	}, 5*time.Second, 100*time.Millisecond, "polls see the admission within a second")
	access := r.body["accessToken"].(string)
	require.EqualValues(t, 1, r.body["position"])

	r = b.do(t, http.MethodPost, base+"/reservations", b.buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "k1", "X-Access-Token", access)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	// Another buyer cannot use alice's access token.
	requireProblem(t, b.do(t, http.MethodPost, base+"/reservations", buyerToken(t, b.env.Tenant, "mallory", time.Hour),
		map[string]any{"quantity": 1}, "Idempotency-Key", "k2", "X-Access-Token", access), 403, "ACCESS_TOKEN_INVALID")

	r = b.do(t, http.MethodGet, base+"/queue/fairness", "", nil)
	require.NotEmpty(t, r.body["seed"], "revealed after the draw")
	r = b.do(t, http.MethodGet, base+"/queue/draw", "", nil)
	require.Len(t, r.body["order"], 1)
	require.EqualValues(t, 1, r.body["total"])
	require.Equal(t, "public, max-age=60", r.header.Get("Cache-Control"), "a drawn order never changes")
	r = b.do(t, http.MethodGet, base+"/queue/draw?offset=1&limit=10", "", nil)
	require.Empty(t, r.body["order"])
	requireProblem(t, b.do(t, http.MethodGet, base+"/queue/draw?limit=100000", "", nil), 422, "VALIDATION_FAILED")
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/queue/"+token, "", nil).status)
	// Leaving ends the turn: the access token is refused (within the
	// second the room's state may be cached) and the poll says LEFT.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := b.do(c, http.MethodPost, base+"/reservations", b.buyer, map[string]any{"quantity": 1},
			"Idempotency-Key", "after-leave", "X-Access-Token", access)
		assert.Equal(c, http.StatusForbidden, r.status)
		assert.Equal(c, "ACCESS_ENDED", r.body["code"])
	}, 5*time.Second, 100*time.Millisecond)
	require.Equal(t, "LEFT", b.do(t, http.MethodGet, "/v1/queue/"+token, "", nil).body["status"])

	// Products without a room need no token.
	require.Equal(t, http.StatusAccepted, b.reserve(t, b.buyer, "k3", map[string]any{"quantity": 1}).status)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products/"+b.product.ID.String()+"/queue", b.buyer, nil), 404, "NOT_FOUND")
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, WaitingRoom: env.Rooms, RateLimits: api.RateLimits{PerBuyer: 3}})
	b := &testBundle{env: env, server: srv}
	p := env.Product(t, testfix.ProductOpts{WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 1, ShoppingSeconds: 1}})
	token := buyerToken(t, env.Tenant, "alice", time.Hour)
	codes := map[int]int{}
	var last response
	for range 6 {
		last = b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/queue", token, nil)
		codes[last.status]++
	}
	require.Equal(t, 3, codes[http.StatusCreated]+codes[http.StatusOK], "three a second")
	require.Equal(t, 3, codes[http.StatusTooManyRequests])
	requireProblem(t, last, 429, "RATE_LIMITED")
	require.Equal(t, "1", last.header.Get("Retry-After"))
	// Other buyers are not held back by alice.
	require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/queue",
		buyerToken(t, env.Tenant, "bob", time.Hour), nil).status)
}

// A product with a room on a deployment that runs no waiting room is closed,
// not open.
func TestRoomWithoutService(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger})
	b := &testBundle{env: env, server: srv}
	p := env.Product(t, testfix.ProductOpts{WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 1, ShoppingSeconds: 1}})
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations",
		buyerToken(t, env.Tenant, "alice", time.Hour), map[string]any{"quantity": 1}, "Idempotency-Key", "k"), 503, "WAITING_ROOM_UNAVAILABLE")
}

// The limits key on what cannot be varied: the per-buyer limit on the
// verified tenant and buyer (upper-case paths, a trailing slash or extra
// spaces in Authorization once each got a fresh allowance), the per-IP
// limit on the client address a trusted proxy reports.
func TestRateLimitsCannotBeDodged(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{WaitingRoom: &waitingroom.Settings{Enabled: true, ActiveShoppers: 1, ShoppingSeconds: 1}})
	token := buyerToken(t, env.Tenant, "alice", time.Hour)

	byBuyer := &testBundle{env: env, server: api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, WaitingRoom: env.Rooms, RateLimits: api.RateLimits{PerBuyer: 3}})}
	paths := []string{"/v1/products/" + p.ID.String() + "/queue", "/V1/PRODUCTS/" + p.ID.String() + "/QUEUE",
		"/v1/products/" + p.ID.String() + "/queue/"}
	codes := map[int]int{}
	for i := range 12 {
		r := byBuyer.do(t, http.MethodPost, paths[i%3], "", nil, "Authorization", strings.Repeat(" ", i%2)+"Bearer  "+token+" ")
		codes[r.status]++
	}
	// Three a second; a window boundary in the middle of the loop can
	// allow three more, never all twelve.
	require.LessOrEqual(t, codes[http.StatusCreated]+codes[http.StatusOK], 6, codes)
	require.GreaterOrEqual(t, codes[http.StatusTooManyRequests], 6, codes)

	// A queue poll's limit keys on the entry: other spellings of its token
	// (the MAC's last character with other unused bits) are refused, not
	// counted apart.
	joined := byBuyer.do(t, http.MethodPost, paths[0], buyerToken(t, env.Tenant, "poller", time.Hour), nil)
	require.Contains(t, []int{http.StatusCreated, http.StatusOK}, joined.status, string(joined.raw))
	queueToken := joined.body["queueToken"].(string)
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, queueToken[len(queueToken)-1])
	spellings := 0
	codes = map[int]int{}
	for i := range 4 {
		spelling := queueToken[:len(queueToken)-1] + string(alphabet[last^i])
		r := byBuyer.do(t, http.MethodGet, "/v1/queue/"+spelling, "", nil)
		if i > 0 {
			require.NotEqual(t, http.StatusOK, r.status, "spelling %d is not the token", i)
			spellings++
		}
	}
	require.Equal(t, 3, spellings)
	// Three a second: ten in a row see at least four refusals, even
	// across a window boundary.
	for range 10 {
		codes[byBuyer.do(t, http.MethodGet, "/v1/queue/"+queueToken, "", nil).status]++
	}
	require.GreaterOrEqual(t, codes[http.StatusTooManyRequests], 4, codes)

	// Behind a trusted proxy, the client is the right-most untrusted
	// address of X-Forwarded-For; addresses left of it are the client's own
	// invention and change nothing.
	byIP := &testBundle{env: env, server: api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, WaitingRoom: env.Rooms, RateLimits: api.RateLimits{PerIP: 3,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("10.0.0.0/8")}}})}
	codes = map[int]int{}
	for i := range 12 {
		buyer := buyerToken(t, env.Tenant, fmt.Sprintf("b%d", i), time.Hour)
		r := byIP.do(t, http.MethodPost, paths[0], buyer, nil, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 203.0.113.7, 10.1.2.3", i))
		codes[r.status]++
	}
	require.LessOrEqual(t, codes[http.StatusCreated], 6, codes)
	require.GreaterOrEqual(t, codes[http.StatusTooManyRequests], 6, codes)
	// Another client behind the same proxy has its own allowance.
	require.Equal(t, http.StatusCreated, byIP.do(t, http.MethodPost, paths[0], buyerToken(t, env.Tenant, "other", time.Hour), nil,
		"X-Forwarded-For", "203.0.113.8, 10.1.2.3").status)
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err, "a time: %v", v)
	return at
}

// A reservation for a product known not to be on sale yet is refused at
// once with the opening time, not queued to be rejected later.
func TestReserveBeforeOpening(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	opens := time.Now().Add(time.Hour).Truncate(time.Second)
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10, OnSaleAt: opens})
	r := b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations", b.buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "early")
	requireProblem(t, r, http.StatusConflict, "NOT_ON_SALE")
	require.Contains(t, r.body["detail"], opens.UTC().Format(time.RFC3339))
	require.Zero(t, b.countRequests(t))
}

// shortOf returns a solution of challenge that does not reach bits zero
// bits (sol+"x" reached them once in 256 runs).
func shortOf(challenge string, bits int) string {
	for i := 0; ; i++ {
		s := fmt.Sprintf("wrong-%d", i)
		sum := sha256.Sum256([]byte(challenge + ":" + s))
		if binary.BigEndian.Uint64(sum[:8])>>(64-bits) != 0 {
			return s
		}
	}
}

func TestJoinProofOfWork(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 60, ChallengeBits: 8}
	p := b.env.Product(t, testfix.ProductOpts{WaitingRoom: room, OnSaleAt: time.Now().Add(time.Hour)})
	other := b.env.Product(t, testfix.ProductOpts{WaitingRoom: room, OnSaleAt: time.Now().Add(time.Hour)})
	join := func(product uuid.UUID, token, challenge, solution string) response {
		return b.do(t, http.MethodPost, "/v1/products/"+product.String()+"/queue", token, nil,
			"X-Queue-Challenge", challenge, "X-Queue-Solution", solution)
	}
	challenge := func(product uuid.UUID, token string) (string, int) {
		r := b.do(t, http.MethodGet, "/v1/products/"+product.String()+"/queue/challenge", token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		return r.body["challenge"].(string), int(r.body["bits"].(float64))
	}

	requireProblem(t, join(p.ID, b.buyer, "", ""), 403, "CHALLENGE_REQUIRED")
	c, bits := challenge(p.ID, b.buyer)
	require.Equal(t, 8, bits)
	sol := waitingroom.Solve(c, bits)
	requireProblem(t, join(p.ID, b.buyer, c, shortOf(c, bits)), 403, "CHALLENGE_FAILED")
	r := join(p.ID, b.buyer, c, sol)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	// Replayed, it buys nothing: the same entry.
	r = join(p.ID, b.buyer, c, sol)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))

	// Forged, another product's, another buyer's: refused.
	requireProblem(t, join(p.ID, b.buyer, c[:len(c)-2]+"xx", sol), 403, "CHALLENGE_FAILED")
	requireProblem(t, join(other.ID, b.buyer, c, sol), 403, "CHALLENGE_FAILED")
	bob := buyerToken(t, b.env.Tenant, "bob", time.Hour)
	requireProblem(t, join(p.ID, bob, c, sol), 403, "CHALLENGE_FAILED")
	c2, _ := challenge(p.ID, bob)
	require.Equal(t, http.StatusCreated, join(p.ID, bob, c2, waitingroom.Solve(c2, 8)).status)
}

// A draft's waiting room is not published: its fairness record (opening
// time, entrants), its draw and its challenge are not found, as the draft
// is not; once published they are there.
func TestDraftRoomNotPublished(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 60, ChallengeBits: 8}
	p := b.env.Product(t, testfix.ProductOpts{WaitingRoom: room, OnSaleAt: time.Now().Add(time.Hour)})
	_, err := b.env.Schema.Pool.Exec(t.Context(), `UPDATE products SET publication = 'DRAFT' WHERE id = $1`, p.ID)
	require.NoError(t, err)
	fresh := b.fresh(t)
	base := "/v1/products/" + p.ID.String() + "/queue"
	requireProblem(t, fresh.do(t, http.MethodGet, base+"/fairness", "", nil), 404, "NOT_FOUND")
	requireProblem(t, fresh.do(t, http.MethodGet, base+"/draw", "", nil), 404, "NOT_FOUND")
	requireProblem(t, fresh.do(t, http.MethodGet, base+"/challenge", b.buyer, nil), 404, "NOT_FOUND")

	_, err = b.env.Schema.Pool.Exec(t.Context(), `UPDATE products SET publication = 'PUBLISHED' WHERE id = $1`, p.ID)
	require.NoError(t, err)
	fresh = b.fresh(t)
	require.Equal(t, http.StatusOK, fresh.do(t, http.MethodGet, base+"/fairness", "", nil).status)
	require.Equal(t, http.StatusOK, fresh.do(t, http.MethodGet, base+"/challenge", b.buyer, nil).status)
}
