package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/audit"
	"boxoffice/internal/login"
	"boxoffice/internal/mail"
	"boxoffice/internal/metrics"
	"boxoffice/internal/ops"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
	"boxoffice/internal/session"
	"boxoffice/internal/sms"
	"boxoffice/internal/sqsqueue"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

const adminKey = "test-admin-key"

type testBundle struct {
	metrics  *metrics.Metrics
	reporter *ops.Reporter
	dlq      *sqsqueue.Ops
	env      *testfix.Env
	server   *api.Server
	product  *product.Product
	buyer    string // buyer token of "alice" for env.Tenant
	mailer   *mail.Sender
	sms      sms.Sender
}

func setup(t *testing.T, o testfix.Options) *testBundle {
	t.Helper()
	return setupWithDLQ(t, o, nil)
}

// setupWithDLQ builds the API; a non-nil newDLQ makes it an SQS deployment.
func setupWithDLQ(t *testing.T, o testfix.Options, newDLQ func(*pgxpool.Pool) *sqsqueue.Ops) *testBundle {
	t.Helper()
	o.Metrics = metrics.New()
	env := testfix.New(t, o)
	backend := "river"
	var dlq *sqsqueue.Ops
	if newDLQ != nil {
		backend, dlq = "sqs", newDLQ(env.Schema.Pool)
	}
	reporter := ops.NewReporter(env.Schema.Pool, backend, dlq)
	o.Metrics.Registry.MustRegister(ops.NewCollector(reporter, env.Logger))
	b := &testBundle{env: env, metrics: o.Metrics, reporter: reporter, dlq: dlq}
	srv := b.newServer(t)
	p := env.Product(t, testfix.ProductOpts{Capacity: 100, PerBuyerLimit: 4})
	b.server, b.product, b.buyer = srv, p, buyerToken(t, env.Tenant, "alice", time.Hour)
	return b
}

// newServer builds an API server on the bundle's world, started until the
// test ends.
func (b *testBundle) newServer(t *testing.T) *api.Server {
	t.Helper()
	return b.newServerWithAdminKey(t, adminKey)
}

// newServerWithAdminKey is newServer configured with another admin key
// ("" for none), as after a restart with a rotated key.
func (b *testBundle) newServerWithAdminKey(t *testing.T, adminKey string) *api.Server {
	t.Helper()
	env := b.env
	srv := api.New(api.Deps{
		Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products, Reservations: env.Service,
		Metrics: b.metrics, Logger: env.Logger, AdminKey: adminKey,
		Ready: func(ctx context.Context) error { return env.Schema.Pool.Ping(ctx) },
		River: env.River, Reporter: b.reporter, DLQ: b.dlq, WaitingRoom: env.Rooms,
		Checkout: env.Checkout, Login: login.NewStore(env.Schema.Pool, env.Keys), Mailer: b.mailer, SMS: b.sms,
		Audit: audit.New(env.Schema.Pool), Sessions: session.New(env.Schema.Pool, session.Limits{}),
		Rehearsals: env.Rehearsals, Webhooks: env.Webhooks,
	})
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(cancel)
	return srv
}

// fresh is the same world seen by another API process: nothing cached.
func (b *testBundle) fresh(t *testing.T) *testBundle {
	t.Helper()
	c := *b
	c.server = b.newServer(t)
	return &c
}

// scrape reads the process's metrics as Prometheus would.
func (b *testBundle) scrape(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	b.metrics.Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return rec.Body.String()
}

func buyerToken(t *testing.T, tn *tenant.Created, buyer string, ttl time.Duration) string {
	t.Helper()
	tok, err := tenant.SignBuyerToken([]byte(tn.BuyerTokenSecret), tn.ID, buyer, ttl)
	require.NoError(t, err)
	return tok
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (b *testBundle) do(t require.TestingT, method, path, token string, body any, headers ...string) response {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case []byte:
		r = bytes.NewReader(v)
	default:
		buf, err := json.Marshal(v)
		require.NoError(t, err)
		r = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if strings.HasPrefix(path, "/v1/") {
		contractOf(b.server) // loaded before the request, not between a test's timed requests
	}
	resp, err := b.server.App().Test(req, 30_000) // past the longest Prefer: wait
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	requireDeclared(t, b.server, req, resp.StatusCode, resp.Header, raw)
	out := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		require.NoError(t, json.Unmarshal(raw, &out.body), string(raw))
	}
	return out
}

func (b *testBundle) reserve(t *testing.T, token, key string, body any) response {
	t.Helper()
	h := []string{}
	if key != "" {
		h = append(h, "Idempotency-Key", key)
	}
	return b.do(t, http.MethodPost, "/v1/products/"+b.product.ID.String()+"/reservations", token, body, h...)
}

func requireProblem(t *testing.T, r response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.raw))
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), string(r.raw))
	require.Equal(t, code, r.body["code"], string(r.raw))
	require.NotEmpty(t, r.body["title"])
}

func (b *testBundle) countRequests(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.env.Schema.Pool.QueryRow(context.Background(), `SELECT count(*) FROM reservation_requests`).Scan(&n))
	return n
}

func TestWalkthrough(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{Work: true})

	// Tenant, product, buyer token, reservation, poll, availability.
	r := b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "acme", "name": "Acme", "domains": []string{"acme.test"}})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	key := r.body["apiKey"].(string)
	tn := &tenant.Created{Tenant: tenant.Tenant{ID: uuid.MustParse(r.body["id"].(string))}, BuyerTokenSecret: r.body["buyerTokenSecret"].(string)}

	r = b.do(t, http.MethodPost, "/v1/products", key, map[string]any{
		"slug": "final", "name": "Cup Final", "kind": "seated", "capacity": 10, "priceCents": 4500, "currency": "EUR",
		"layout": map[string]any{"sections": []any{map[string]any{"name": "North", "rows": []any{
			map[string]any{"name": "A", "seats": 4}, map[string]any{"name": "B", "seats": 6}}}}},
	})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	productID := r.body["id"].(string)
	require.EqualValues(t, 6, r.body["perBuyerLimit"])
	require.EqualValues(t, 480, r.body["holdSeconds"])

	r = b.do(t, http.MethodGet, "/v1/products", key, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["products"], 1)

	token := buyerToken(t, tn, "bob", time.Hour)
	r = b.do(t, http.MethodGet, "/v1/products/"+productID, token, nil)
	require.Equal(t, http.StatusOK, r.status, "buyers may read their tenant's products")

	r = b.do(t, http.MethodPost, "/v1/products/"+productID+"/reservations", token, map[string]any{"quantity": 3}, "Idempotency-Key", "one")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "QUEUED", r.body["status"])
	statusURL := r.body["statusUrl"].(string)
	require.Equal(t, statusURL, r.header.Get("Location"))

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = b.do(c, http.MethodGet, statusURL, token, nil)
		assert.NotEqual(c, "QUEUED", r.body["status"])
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "HELD", r.body["status"], string(r.raw))
	// Row A has 4 seats: 3 there would orphan one, so best available is row B.
	require.Equal(t, []any{5.0, 6.0, 7.0}, r.body["numbers"])
	holdID := r.body["holdId"].(string)

	// The tenant admin sees it too; the same key replays with 200.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, statusURL, key, nil).status)
	r = b.do(t, http.MethodPost, "/v1/products/"+productID+"/reservations", token, map[string]any{"quantity": 3}, "Idempotency-Key", "one")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "HELD", r.body["status"])

	r = b.do(t, http.MethodGet, "/v1/products/"+productID+"/availability", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.EqualValues(t, 7, r.body["available"])
	require.EqualValues(t, 3, r.body["held"])
	require.Equal(t, "cAA=", r.body["bitmap"], "numbers 5-7 are bits 4-6 of the first of two bytes")
	etag := r.header.Get("ETag")
	require.Equal(t, "public, max-age=1", r.header.Get("Cache-Control"))
	r = b.do(t, http.MethodGet, "/v1/products/"+productID+"/availability", "", nil, "If-None-Match", etag)
	require.Equal(t, http.StatusNotModified, r.status)

	r = b.do(t, http.MethodDelete, "/v1/holds/"+holdID, token, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "RELEASED", r.body["state"])
	r = b.do(t, http.MethodDelete, "/v1/holds/"+holdID, token, nil)
	require.Equal(t, http.StatusOK, r.status, "release is idempotent")
	r = b.do(t, http.MethodGet, statusURL, token, nil)
	require.Equal(t, "RELEASED", r.body["status"])
	b.env.RequireInvariants(t)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})

	cases := []struct {
		name   string
		body   any
		key    string
		status int
		code   string
	}{
		{"unknown field", `{"quantity":1,"seat":"A1"}`, "k", 422, "VALIDATION_FAILED"},
		{"wrong type", `{"quantity":"two"}`, "k", 422, "VALIDATION_FAILED"},
		{"malformed json", `{"quantity":`, "k", 400, "MALFORMED_REQUEST"},
		{"number too big for int32", `{"numbers":[99999999999]}`, "k", 422, "VALIDATION_FAILED"},
		{"empty numbers", `{"numbers":[]}`, "k", 422, "EMPTY_NUMBERS"},
		{"nothing", `{}`, "k", 422, "NOTHING_REQUESTED"},
		{"duplicate numbers", `{"numbers":[3,3]}`, "k", 422, "DUPLICATE_NUMBERS"},
		{"number zero", `{"numbers":[0]}`, "k", 422, "NUMBER_OUT_OF_RANGE"},
		{"number above capacity", `{"numbers":[101]}`, "k", 422, "NUMBER_OUT_OF_RANGE"},
		{"negative number", `{"numbers":[-5]}`, "k", 422, "NUMBER_OUT_OF_RANGE"},
		{"too many numbers", `{"numbers":[1,2,3,4,5]}`, "k", 422, "TOO_MANY_NUMBERS"},
		{"negative quantity", `{"quantity":-1}`, "k", 422, "QUANTITY_OUT_OF_RANGE"},
		{"quantity above limit", `{"quantity":5}`, "k", 422, "QUANTITY_OUT_OF_RANGE"},
		{"both", `{"numbers":[1],"quantity":1}`, "k", 422, "NUMBERS_AND_QUANTITY"},
		{"mode without quantity", `{"numbers":[1],"mode":"random"}`, "k", 422, "MODE_WITHOUT_QUANTITY"},
		{"bad mode", `{"quantity":1,"mode":"cheapest"}`, "k", 422, "VALIDATION_FAILED"},
		{"missing idempotency key", `{"quantity":1}`, "", 400, "IDEMPOTENCY_KEY_REQUIRED"},
		{"body too large", `{"numbers":[` + strings.Repeat("1,", 40_000) + `1]}`, "k", 413, "BODY_TOO_LARGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireProblem(t, b.reserve(t, b.buyer, tc.key, tc.body), tc.status, tc.code)
		})
	}
	require.Zero(t, b.countRequests(t), "no bad request recorded anything")

	// Idempotency key reused with another body.
	require.Equal(t, http.StatusAccepted, b.reserve(t, b.buyer, "same", map[string]any{"quantity": 1}).status)
	requireProblem(t, b.reserve(t, b.buyer, "same", map[string]any{"quantity": 2}), 409, "IDEMPOTENCY_KEY_REUSED")
	require.Equal(t, 1, b.countRequests(t))

	// Unknown and malformed ids, unknown routes.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products/"+uuid.NewString()+"/reservations", b.buyer,
		map[string]any{"quantity": 1}, "Idempotency-Key", "x"), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/reservations/"+uuid.NewString(), b.buyer, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/reservations/not-a-uuid", b.buyer, nil), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products/"+uuid.NewString()+"/availability", "", nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodDelete, "/v1/holds/"+uuid.NewString(), b.buyer, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/nothing-here", "", nil), 404, "NOT_FOUND")

	// Products and tenants.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "Bad Slug!", "name": "x"}), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": b.env.Tenant.Slug, "name": "x"}), 409, "SLUG_TAKEN")
	product := func(over map[string]any) map[string]any {
		p := map[string]any{"slug": "p-" + uuid.NewString()[:8], "name": "P", "kind": "numbered", "capacity": 10,
			"priceCents": 100, "currency": "EUR"}
		for k, v := range over {
			p[k] = v
		}
		return p
	}
	key := b.env.Tenant.APIKey
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"capacity": 10_000_001})), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"capacity": 0})), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"currency": "euro"})), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"kind": "seated"})), 422, "INVALID_LAYOUT")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"kind": "seated",
		"layout": map[string]any{"sections": []any{map[string]any{"name": "A", "rows": []any{map[string]any{"name": "1", "seats": 9}}}}}})),
		422, "INVALID_LAYOUT")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"slug": b.product.Slug})), 409, "SLUG_TAKEN")
	// Names reach e-mail subjects and pages: no control characters.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"name": "Gala\r\nBcc: x@example.com"})), 422, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "ctl", "name": "A\u0000B"}), 422, "VALIDATION_FAILED")

	// A 10,000,000-number product is accepted.
	r := b.do(t, http.MethodPost, "/v1/products", key, product(map[string]any{"capacity": 10_000_000}))
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	other := b.env.NewTenant(t)
	otherProduct := b.env.Product(t, testfix.ProductOpts{Tenant: other.ID})
	body := map[string]any{"quantity": 1}

	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		require.NoError(t, err)
		return tok
	}
	secret := []byte(b.env.Tenant.BuyerTokenSecret)
	tid := b.env.Tenant.ID.String()
	future := time.Now().Add(time.Hour).Unix()
	bad := map[string]string{
		"garbage":        "not.a.token",
		"expired":        buyerToken(t, b.env.Tenant, "alice", -time.Minute),
		"no exp":         sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "alice", "tid": tid}),
		"no sub":         sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"tid": tid, "exp": future}),
		"wrong secret":   sign(jwt.SigningMethodHS256, []byte("guess"), jwt.MapClaims{"sub": "alice", "tid": tid, "exp": future}),
		"other tenant":   sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "alice", "tid": other.ID.String(), "exp": future}),
		"unknown tenant": sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "alice", "tid": uuid.NewString(), "exp": future}),
		"HS512":          sign(jwt.SigningMethodHS512, secret, jwt.MapClaims{"sub": "alice", "tid": tid, "exp": future}),
		"alg none":       sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "alice", "tid": tid, "exp": future}),
		"tid not a uuid": sign(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "alice", "tid": "acme", "exp": future}),
	}
	for name, tok := range bad {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, b.reserve(t, tok, "k-"+name, body), 401, "INVALID_TOKEN")
		})
	}
	requireProblem(t, b.reserve(t, "", "k", body), 401, "UNAUTHORIZED")
	requireProblem(t, b.reserve(t, b.env.Tenant.APIKey, "k", body), 401, "UNAUTHORIZED")
	require.Zero(t, b.countRequests(t))

	// Admin endpoints.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", "", map[string]any{"slug": "x1", "name": "x"}), 401, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/tenants", b.env.Tenant.APIKey, map[string]any{"slug": "x1", "name": "x"}), 401, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", b.buyer, map[string]any{}), 401, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", "bo_unknown", nil), 401, "UNAUTHORIZED")
	_, opKey, err := b.env.Tenants.CreateKey(context.Background(), b.env.Tenant.ID, tenant.RoleOperator, "")
	require.NoError(t, err)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", opKey, nil), 403, "FORBIDDEN")

	// Another tenant's product and reservation are 404 to this tenant.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products/"+otherProduct.ID.String()+"/reservations", b.buyer,
		body, "Idempotency-Key", "x"), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products/"+otherProduct.ID.String(), b.env.Tenant.APIKey, nil), 404, "NOT_FOUND")
	otherRes := b.env.Reserve(t, otherProduct, "alice", reservationQuantity(1))
	requireProblem(t, b.do(t, http.MethodGet, "/v1/reservations/"+otherRes.ID.String(), b.buyer, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/reservations/"+otherRes.ID.String(), b.env.Tenant.APIKey, nil), 404, "NOT_FOUND")

	// Another buyer of the same tenant cannot see or release alice's.
	r := b.reserve(t, b.buyer, "mine", body)
	require.Equal(t, http.StatusAccepted, r.status)
	mallory := buyerToken(t, b.env.Tenant, "mallory", time.Hour)
	requireProblem(t, b.do(t, http.MethodGet, r.body["statusUrl"].(string), mallory, nil), 404, "NOT_FOUND")
	b.env.Drain(t, b.product, 10)
	held := b.do(t, http.MethodGet, r.body["statusUrl"].(string), b.buyer, nil)
	requireProblem(t, b.do(t, http.MethodDelete, "/v1/holds/"+held.body["holdId"].(string), mallory, nil), 404, "NOT_FOUND")
	require.Equal(t, "HELD", b.do(t, http.MethodGet, r.body["statusUrl"].(string), b.buyer, nil).body["status"])
}

func TestOperations(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/healthz", "", nil).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/readyz", "", nil).status)

	r := b.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "3.1.0", r.body["openapi"])
	paths := r.body["paths"].(map[string]any)
	for _, p := range []string{"/v1/tenants", "/v1/products", "/v1/products/{id}", "/v1/products/{id}/availability",
		"/v1/products/{id}/reservations", "/v1/reservations/{id}", "/v1/holds/{id}"} {
		require.Contains(t, paths, p)
	}
	// Every security scheme an operation names is described.
	schemes := r.body["components"].(map[string]any)["securitySchemes"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			sec, _ := op.(map[string]any)["security"].([]any)
			for _, req := range sec {
				for name := range req.(map[string]any) {
					require.Contains(t, schemes, name, "%s %s", method, path)
				}
			}
		}
	}
	// The docs page is self-contained: every asset from this server, none
	// from a CDN (it was blank offline).
	docs := b.do(t, http.MethodGet, "/docs", "", nil)
	require.Equal(t, http.StatusOK, docs.status)
	require.NotRegexp(t, `(src|href)="(https?:)?//`, string(docs.raw))
	for _, asset := range []string{"/docs/docs.js", "/docs/docs.css"} {
		require.Contains(t, string(docs.raw), asset)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, asset, "", nil).status, asset)
	}

	b.reserve(t, b.buyer, "m1", map[string]any{"quantity": 1})
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/metrics", "", nil).status,
		"metrics are served on the metrics listener, not the public API")
	text := b.scrape(t)
	require.Contains(t, text, "boxoffice_reservations_accepted_total 1")
	require.Contains(t, text, fmt.Sprintf(`boxoffice_http_requests_total{code="202",method="POST",route="%s"} 1`, "/v1/products/:id/reservations"))
}

func reservationQuantity(n int) reservation.Params { return reservation.Params{Quantity: n} }

// With the database out of reach every request gets 503 with Retry-After
// and a code of its own, and readiness says so without naming the server.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every query fails to connect.
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/gone?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	env := testfix.New(t, testfix.Options{})
	srv := api.New(api.Deps{Pool: pool, Tenants: tenant.NewStore(pool, env.Keys), Products: product.NewStore(pool, tenant.Quota{}),
		Logger: env.Logger, AdminKey: adminKey, Ready: func(ctx context.Context) error { return pool.Ping(ctx) }})
	b := &testBundle{server: srv}

	r := b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "acme", "name": "Acme"})
	requireProblem(t, r, http.StatusServiceUnavailable, "DATABASE_UNAVAILABLE")
	require.Equal(t, "2", r.header.Get("Retry-After"))
	r = b.do(t, http.MethodGet, "/v1/products/"+uuid.NewString(), "bo_notakey", nil)
	requireProblem(t, r, http.StatusServiceUnavailable, "DATABASE_UNAVAILABLE")

	r = b.do(t, http.MethodGet, "/readyz", "", nil)
	requireProblem(t, r, http.StatusServiceUnavailable, "NOT_READY")
	require.NotContains(t, string(r.raw), "127.0.0.1")
	require.NotContains(t, string(r.raw), "connect")
}

// A tenant cannot fill the platform: products and numbers are capped per
// tenant, by the deployment's default or the tenant's own quota.
func TestTenantQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	tn := b.env.NewTenant(t)
	product := func(capacity int) map[string]any {
		return map[string]any{"slug": "p-" + uuid.NewString()[:8], "name": "P", "kind": "numbered",
			"capacity": capacity, "priceCents": 100, "currency": "EUR"}
	}
	requireProblem(t, b.do(t, http.MethodPut, "/v1/tenants/"+tn.ID.String()+"/quota", tn.APIKey,
		map[string]any{"products": 2, "capacity": 1000}), 401, "UNAUTHORIZED")
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodPut, "/v1/tenants/"+tn.ID.String()+"/quota", adminKey,
		map[string]any{"products": 2, "capacity": 1000}).status)

	require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/products", tn.APIKey, product(600)).status)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", tn.APIKey, product(401)), 403, "QUOTA_EXCEEDED")
	require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/products", tn.APIKey, product(400)).status)
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", tn.APIKey, product(1)), 403, "QUOTA_EXCEEDED")
	// Others are not affected.
	require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/v1/products", b.env.Tenant.APIKey, product(5000)).status)
}

// TestLockWaitIsProductBusy: a release waiting on a lock another
// transaction holds gives up at its lock_timeout and answers 503
// PRODUCT_BUSY with Retry-After — not DATABASE_UNAVAILABLE, which is for a
// database that cannot be reached — and the hold is left as it was.
func TestLockWaitIsProductBusy(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{Work: true})
	r := b.do(t, http.MethodPost, "/v1/products/"+b.product.ID.String()+"/reservations", b.buyer,
		map[string]any{"quantity": 1}, "Idempotency-Key", "busy")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	statusURL := r.body["statusUrl"].(string)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = b.do(c, http.MethodGet, statusURL, b.buyer, nil)
		assert.Equal(c, "HELD", r.body["status"])
	}, 10*time.Second, 10*time.Millisecond)
	holdID := r.body["holdId"].(string)

	// Another transaction holds the hold's row, as a long sweep once did.
	ctx := context.Background()
	tx, err := b.env.Schema.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM holds WHERE id = $1 FOR UPDATE`, holdID)
	require.NoError(t, err)

	r = b.do(t, http.MethodDelete, "/v1/holds/"+holdID, b.buyer, nil)
	requireProblem(t, r, http.StatusServiceUnavailable, "PRODUCT_BUSY")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	require.NoError(t, tx.Rollback(ctx))
	r = b.do(t, http.MethodDelete, "/v1/holds/"+holdID, b.buyer, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "RELEASED", r.body["state"])
}

// What operators expect of a service: liveness beside readiness, HEAD on
// every GET, a request id made or kept and echoed.
func TestServiceBasics(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	for _, path := range []string{"/livez", "/healthz", "/readyz"} {
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, path, "", nil).status, path)
	}
	availability := "/v1/products/" + b.product.ID.String() + "/availability"
	get := b.do(t, http.MethodGet, availability, "", nil)
	head := b.do(t, http.MethodHead, availability, "", nil)
	require.Equal(t, http.StatusOK, head.status)
	require.Empty(t, head.raw, "HEAD answers without the body")
	require.Equal(t, get.header.Get("ETag"), head.header.Get("ETag"))
	require.Equal(t, http.StatusOK, b.do(t, http.MethodHead, "/livez", "", nil).status)

	made := get.header.Get("X-Request-Id")
	require.Regexp(t, `^[0-9a-f]{16}-[0-9a-z]+$`, made, "a request without an id gets one: the process's prefix, a count")
	require.NotEqual(t, made, head.header.Get("X-Request-Id"), "each request its own")
	kept := b.do(t, http.MethodGet, availability, "", nil, "X-Request-Id", "abc-123.x")
	require.Equal(t, "abc-123.x", kept.header.Get("X-Request-Id"))
	forged := b.do(t, http.MethodGet, availability, "", nil, "X-Request-Id", "a b\"c")
	require.NotEqual(t, "a b\"c", forged.header.Get("X-Request-Id"), "an id that could forge a log line is replaced")
}

// lockedBuffer is a log destination the server's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The access log: one JSON line per request with its method, route
// template, status, duration, bytes, request id and tenant.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	var logs lockedBuffer
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products, Reservations: env.Service,
		Logger: env.Logger, AccessLog: &logs})
	b := &testBundle{env: env, server: srv}
	p := env.Product(t, testfix.ProductOpts{Capacity: 10})
	r := b.do(t, http.MethodGet, "/v1/products/"+p.ID.String(), env.Tenant.APIKey, nil, "X-Request-Id", "req-42")
	require.Equal(t, http.StatusOK, r.status)
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		if m["msg"] == "request" && m["request_id"] == "req-42" {
			line = m
		}
	}
	require.NotNil(t, line, "the request's line: %s", logs.String())
	require.Equal(t, "GET", line["method"])
	require.Equal(t, "/v1/products/:id", line["route"])
	require.EqualValues(t, 200, line["status"])
	require.Contains(t, line, "duration_ms")
	require.EqualValues(t, len(r.raw), line["bytes"])
	require.Equal(t, env.Tenant.ID.String(), line["tenant"])
}
