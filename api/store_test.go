package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// storeTenant creates a tenant through the API and returns its admin key.
func (b *testBundle) storeTenant(t *testing.T, slug string) (key string, tn *tenant.Created) {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": slug, "name": "Arena " + slug})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	tn = &tenant.Created{Tenant: tenant.Tenant{ID: uuid.MustParse(r.body["id"].(string)), Slug: slug},
		BuyerTokenSecret: r.body["buyerTokenSecret"].(string)}
	return r.body["apiKey"].(string), tn
}

func (b *testBundle) createProduct(t *testing.T, key string, body map[string]any) string {
	t.Helper()
	base := map[string]any{"slug": "p-" + uuid.NewString()[:8], "name": "Show", "kind": "numbered", "capacity": 10,
		"priceCents": 1500, "currency": "EUR"}
	for k, v := range body {
		base[k] = v
	}
	r := b.do(t, http.MethodPost, "/v1/products", key, base)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	return r.body["id"].(string)
}

func TestStoreCatalog(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, tn := b.storeTenant(t, "arena")

	r := b.do(t, http.MethodPut, "/v1/store", key, map[string]any{"name": "The Arena",
		"theme":   map[string]string{"primary": "#112233", "logoUrl": "https://cdn.example/logo.svg"},
		"domains": []string{"Tickets.Arena.Example"}})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, []any{"tickets.arena.example"}, r.body["domains"])
	requireProblem(t, b.do(t, http.MethodPut, "/v1/store", key, map[string]any{"name": "X", "theme": map[string]string{"primary": "red"}}),
		422, "INVALID_STORE")
	otherKey, _ := b.storeTenant(t, "rival")
	requireProblem(t, b.do(t, http.MethodPut, "/v1/store", otherKey, map[string]any{"name": "Rival", "domains": []string{"tickets.arena.example"}}),
		409, "DOMAIN_TAKEN")

	r = b.do(t, http.MethodGet, "/v1/stores/arena", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "The Arena", r.body["name"])
	require.Equal(t, "public, max-age=60", r.header.Get("Cache-Control"))
	etag := r.header.Get("ETag")
	require.NotEmpty(t, etag)
	require.Equal(t, http.StatusNotModified, b.do(t, http.MethodGet, "/v1/stores/arena", "", nil, "If-None-Match", etag).status)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/stores/nobody", "", nil), 404, "NOT_FOUND")

	now := time.Now()
	draft := b.createProduct(t, key, map[string]any{"name": "Draft", "publication": "DRAFT"})
	upcoming := b.createProduct(t, key, map[string]any{"name": "Upcoming", "onSaleAt": now.Add(time.Hour)})
	doors := now.Add(30 * 24 * time.Hour).Truncate(time.Minute).UTC()
	policies := map[string]any{"doorsAt": doors, "startsAt": doors.Add(time.Hour),
		"shopperCancellation": map[string]any{"hoursBefore": 48, "feeCents": 200}, "transfers": map[string]any{"hoursBefore": 24}}
	onSale := b.createProduct(t, key, map[string]any{"name": "On sale", "description": "Doors at 8", "imageUrl": "https://cdn.example/a.jpg",
		"doorsAt": policies["doorsAt"], "startsAt": policies["startsAt"], "shopperCancellation": policies["shopperCancellation"],
		"transfers": policies["transfers"]})
	called := b.createProduct(t, key, policies)
	require.NoError(t, pgx.BeginFunc(t.Context(), b.env.Schema.Pool, func(tx pgx.Tx) error {
		_, err := product.MarkCancelled(t.Context(), tx, tn.ID, uuid.MustParse(called), "Storm", "test")
		return err
	}))
	soldOut := b.createProduct(t, key, map[string]any{"name": "Sold out", "capacity": 1})
	closed := b.createProduct(t, key, map[string]any{"name": "Closed"})
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, "/v1/products/"+closed, key, map[string]any{"publication": "CLOSED"}).status)
	p, err := b.env.Products.Get(t.Context(), tn.ID, uuid.MustParse(soldOut))
	require.NoError(t, err)
	b.env.Reserve(t, p, "buyer", reservation.Params{Quantity: 1})
	b.env.Drain(t, p, 10)

	r = b.do(t, http.MethodGet, "/v1/stores/arena/products", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "public, max-age=5", r.header.Get("Cache-Control"))
	status := map[string]string{}
	for _, it := range r.body["products"].([]any) {
		m := it.(map[string]any)
		status[m["id"].(string)] = m["saleStatus"].(string)
		if m["id"] == onSale {
			require.Equal(t, "Doors at 8", m["description"])
			require.Equal(t, "https://cdn.example/a.jpg", m["imageUrl"])
			require.EqualValues(t, 10, m["available"])
			require.EqualValues(t, 1500, m["priceCents"])
			require.Equal(t, []any{}, m["priceLevels"])
			require.Equal(t, false, m["waitingRoom"])
			require.Equal(t, map[string]any{"until": doors.Add(-48 * time.Hour).Format(time.RFC3339), "feeCents": 200.0},
				m["shopperCancellation"], "the policy as the shopper is told it: until when, and the fee")
			require.Equal(t, map[string]any{"until": doors.Add(-24 * time.Hour).Format(time.RFC3339)}, m["transfers"])
		}
		if m["id"] == upcoming || m["id"] == called {
			require.NotContains(t, m, "shopperCancellation", "none allowed, or a cancelled date's")
			require.NotContains(t, m, "transfers")
		}
	}
	require.Equal(t, map[string]string{upcoming: "UPCOMING", onSale: "ON_SALE", soldOut: "SOLD_OUT", closed: "CLOSED", called: "CANCELLED"}, status,
		"drafts are never listed")
	require.NotContains(t, status, draft)
	etag = r.header.Get("ETag")
	require.Equal(t, http.StatusNotModified, b.do(t, http.MethodGet, "/v1/stores/arena/products", "", nil, "If-None-Match", etag).status)

	// Publishing the draft puts it in the store (this process at once).
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, "/v1/products/"+draft, key, map[string]any{"publication": "PUBLISHED"}).status)
	require.Eventually(t, func() bool {
		r := b.do(t, http.MethodGet, "/v1/stores/arena/products", "", nil)
		return len(r.body["products"].([]any)) == 6
	}, 5*time.Second, 100*time.Millisecond)
}

func TestProductLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, tn := b.storeTenant(t, "lifecycle")
	buyer := buyerToken(t, tn, "alice", time.Hour)
	path := func(id string) string { return "/v1/products/" + id }
	patch := func(id string, body map[string]any) response { return b.do(t, http.MethodPatch, path(id), key, body) }

	// A draft: the tenant sees it, buyers do not, and it cannot be reserved.
	draft := b.createProduct(t, key, map[string]any{"publication": "DRAFT"})
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, path(draft), key, nil).status)
	requireProblem(t, b.do(t, http.MethodGet, path(draft), buyer, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodPost, path(draft)+"/reservations", buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "d1"), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, path(draft)+"/availability", "", nil), 404, "NOT_FOUND")

	// Changes before anything is held.
	r := patch(draft, map[string]any{"name": "Renamed", "description": "Now with words", "priceCents": 2500,
		"onSaleAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "Renamed", r.body["name"])
	require.EqualValues(t, 2500, r.body["priceCents"])
	requireProblem(t, patch(draft, map[string]any{"onSaleAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}),
		422, "ON_SALE_IN_PAST")
	requireProblem(t, patch(draft, map[string]any{"publication": "DRAFT"}), 422, "VALIDATION_FAILED")

	// On sale, with a number held: the price and the opening are fixed.
	live := b.createProduct(t, key, map[string]any{})
	r = b.do(t, http.MethodPost, path(live)+"/reservations", buyer, map[string]any{"quantity": 1}, "Idempotency-Key", "l1")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	p, err := b.env.Products.Get(t.Context(), tn.ID, uuid.MustParse(live))
	require.NoError(t, err)
	b.env.Drain(t, p, 10)
	requireProblem(t, patch(live, map[string]any{"priceCents": 1}), 409, "PRICE_LOCKED")
	requireProblem(t, patch(live, map[string]any{"onSaleAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}),
		409, "ALREADY_ON_SALE")
	requireProblem(t, patch(live, map[string]any{"waitingRoom": map[string]any{"enabled": true, "activeShoppers": 10,
		"shoppingSeconds": 60}}), 409, "ALREADY_ON_SALE")
	require.Equal(t, http.StatusOK, patch(live, map[string]any{"priceCents": 1500}).status, "the same price is no change")

	// A request queued before the close is rejected by the claim; new ones
	// are refused at the door; a published product never returns to DRAFT.
	queued := b.do(t, http.MethodPost, path(live)+"/reservations", buyer, map[string]any{"quantity": 1}, "Idempotency-Key", "l2")
	require.Equal(t, http.StatusAccepted, queued.status, string(queued.raw))
	r = patch(live, map[string]any{"publication": "CLOSED"})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, product.Closed, r.body["publication"])
	requireProblem(t, patch(live, map[string]any{"publication": "DRAFT"}), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, path(live)+"/reservations", buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "l3"), 409, "SALE_CLOSED")
	b.env.Drain(t, p, 10)
	req := b.env.Get(t, p, uuid.MustParse(queued.body["id"].(string)))
	require.Equal(t, reservation.StatusRejected, req.Status)
	require.Equal(t, reservation.ReasonSaleClosed, req.Reason)

	// Reopened, it sells again.
	require.Equal(t, http.StatusOK, patch(live, map[string]any{"publication": "PUBLISHED"}).status)
	require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, path(live)+"/reservations", buyer, map[string]any{"quantity": 1},
		"Idempotency-Key", "l4").status)

	// Another tenant's product is not found; buyers may not patch.
	otherKey, _ := b.storeTenant(t, "other-lifecycle")
	requireProblem(t, b.do(t, http.MethodPatch, path(live), otherKey, map[string]any{"name": "Mine"}), 404, "NOT_FOUND")
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodPatch, path(live), buyer, map[string]any{"name": "Mine"}).status)
}

func TestCORS(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, _ := b.storeTenant(t, "cors-a")
	otherKey, other := b.storeTenant(t, "cors-b")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/v1/store", key, map[string]any{"name": "A",
		"domains": []string{"shop.a.example", "localhost:5173"}}).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/v1/store", otherKey, map[string]any{"name": "B",
		"domains": []string{"shop.b.example"}}).status)
	b.createProduct(t, key, map[string]any{})

	get := func(path, origin, token string) response {
		return b.do(t, http.MethodGet, path, token, nil, "Origin", origin)
	}
	allowed := func(r response) string { return r.header.Get("Access-Control-Allow-Origin") }

	// The tenant's own store domain reads its catalog; another tenant's
	// store, or a foreign site, does not.
	r := get("/v1/stores/cors-a/products", "https://shop.a.example", "")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "https://shop.a.example", allowed(r))
	require.Contains(t, r.header.Get("Vary"), "Origin")
	require.Contains(t, r.header.Get("Access-Control-Expose-Headers"), "ETag")
	require.Empty(t, allowed(get("/v1/stores/cors-a/products", "https://shop.b.example", "")))
	require.Empty(t, allowed(get("/v1/stores/cors-a/products", "https://evil.example", "")))
	require.Empty(t, allowed(get("/v1/stores/cors-a/products", "http://shop.a.example", "")), "http only with a port")
	require.Equal(t, "http://localhost:5173", allowed(get("/v1/stores/cors-a/products", "http://localhost:5173", "")))

	// A buyer's calls are readable on the buyer's tenant's domains only.
	buyer := buyerToken(t, other, "bob", time.Hour)
	bProduct := b.createProduct(t, otherKey, map[string]any{})
	r = get("/v1/products/"+bProduct, "https://shop.b.example", buyer)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "https://shop.b.example", allowed(r))
	r = get("/v1/products/"+bProduct, "https://shop.a.example", buyer)
	require.Equal(t, http.StatusOK, r.status)
	require.Empty(t, allowed(r), "the browser on another tenant's store may not read it")
	// Errors return nothing of a tenant's and are readable from any store.
	r = get("/v1/reservations/"+uuid.NewString(), "https://shop.a.example", "")
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, "https://shop.a.example", allowed(r))

	// Preflights: any store domain, cached; a foreign origin gets no grant.
	pre := func(origin string) response {
		return b.do(t, http.MethodOptions, "/v1/reservations/"+uuid.NewString(), "", nil, "Origin", origin,
			"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "authorization")
	}
	r = pre("https://shop.b.example")
	require.Equal(t, http.StatusNoContent, r.status)
	require.Equal(t, "https://shop.b.example", allowed(r))
	require.Contains(t, r.header.Get("Access-Control-Allow-Headers"), "Authorization")
	require.Equal(t, "600", r.header.Get("Access-Control-Max-Age"))
	r = pre("https://evil.example")
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, allowed(r))
	// Without an Origin nothing is granted, but the answer still varies by
	// Origin, so a shared cache keeps one copy per origin.
	r = b.do(t, http.MethodGet, "/v1/stores/cors-a/products", "", nil)
	require.Empty(t, allowed(r))
	require.Contains(t, r.header.Get("Vary"), "Origin")
}

// TestCORSHeadersCoverTheStore: every request header the store's modules
// send is one a preflight from a store domain allows, or a store on its own
// domain cannot make that call (proof of work, idempotent retries).
func TestCORSHeadersCoverTheStore(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, _ := b.storeTenant(t, "cors-headers")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPut, "/v1/store", key, map[string]any{"name": "H",
		"domains": []string{"shop.h.example"}}).status)
	sent := map[string]bool{}
	header := regexp.MustCompile(`["'](X-[A-Za-z-]+|Idempotency-Key|Authorization|Content-Type|If-None-Match|Last-Event-ID|Prefer)["']`)
	files, err := filepath.Glob("../web/store/*.js")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range header.FindAllStringSubmatch(string(src), -1) {
			sent[m[1]] = true
		}
	}
	require.Contains(t, sent, "X-Queue-Solution", "the scan finds the store's headers")
	require.Contains(t, sent, "Prefer")
	for h := range sent {
		r := b.do(t, http.MethodOptions, "/v1/products/"+uuid.NewString()+"/queue", "", nil,
			"Origin", "https://shop.h.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", h)
		require.Equal(t, "https://shop.h.example", r.header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, strings.Split(r.header.Get("Access-Control-Allow-Headers"), ", "), h)
	}
}

// Creating a tenant checks its store settings exactly as PUT /v1/store
// does: a theme that could break out of the store's stylesheet, a domain
// that is not a host name, or another tenant's domain is refused, and
// nothing is created.
func TestCreateTenantValidatesStore(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	ownerKey, _ := b.storeTenant(t, "owner")
	r := b.do(t, http.MethodPut, "/v1/store", ownerKey, map[string]any{"name": "Owner", "domains": []string{"tickets.owner.example"}})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	create := func(slug string, extra map[string]any) response {
		body := map[string]any{"slug": slug, "name": "New"}
		for k, v := range extra {
			body[k] = v
		}
		return b.do(t, http.MethodPost, "/v1/tenants", adminKey, body)
	}
	requireProblem(t, create("styled", map[string]any{"theme": map[string]string{"primary": "#000}</style><script>alert(1)</script>"}}),
		422, "INVALID_STORE")
	requireProblem(t, create("unknown", map[string]any{"theme": map[string]string{"css": "body{}"}}), 422, "INVALID_STORE")
	requireProblem(t, create("badhost", map[string]any{"domains": []string{"evil.example/<x>"}}), 422, "INVALID_STORE")
	requireProblem(t, create("thief", map[string]any{"domains": []string{"Tickets.Owner.Example"}}), 409, "DOMAIN_TAKEN")
	for _, slug := range []string{"styled", "unknown", "badhost", "thief"} {
		requireProblem(t, b.do(t, http.MethodGet, "/v1/stores/"+slug, "", nil), 404, "NOT_FOUND")
	}
	ok := create("fine", map[string]any{"theme": map[string]string{"primary": "#112233"}, "domains": []string{"Shop.Fine.Example"}})
	require.Equal(t, http.StatusCreated, ok.status, string(ok.raw))
	require.Equal(t, []any{"shop.fine.example"}, ok.body["domains"])
}

// No tenant may claim the API's or the console's own host as a store
// domain: its store, and what it uploads, would be served as the console.
func TestAPIHostsReserved(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, AdminKey: adminKey,
		ReservedHosts: []string{"127.0.0.1:8080", "api.boxoffice.example"}})
	b := &testBundle{env: env, server: srv}
	for _, domain := range []string{"127.0.0.1:8080", "API.boxoffice.example", "api.boxoffice.example:8443"} {
		requireProblem(t, b.do(t, http.MethodPut, "/v1/store", env.Tenant.APIKey, map[string]any{"name": "Mine", "domains": []string{domain}}),
			422, "INVALID_STORE")
		requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "grab", "name": "Grab",
			"domains": []string{domain}}), 422, "INVALID_STORE")
	}
	r := b.do(t, http.MethodPut, "/v1/store", env.Tenant.APIKey, map[string]any{"name": "Mine", "domains": []string{"127.0.0.1:8082"}})
	require.Equal(t, http.StatusOK, r.status, "another port of the host is not the API's: %s", r.raw)
}
