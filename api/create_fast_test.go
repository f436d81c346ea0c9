package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/testfix"
)

// TestReservationsFastAndHumaAlike: a reservation takes the fast path
// (api/create_fast.go) when it is the plain case and huma's route
// otherwise; both answer as the document says, and both count into the
// same rate limits. (TestBadInput's table goes through the same route.)
func TestReservationsFastAndHumaAlike(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	b := &testBundle{env: env, server: api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, RateLimits: api.RateLimits{PerBuyer: 2}})}
	b.product = env.Product(t, testfix.ProductOpts{Capacity: 100, PerBuyerLimit: 4})
	path := "/v1/products/" + b.product.ID.String() + "/reservations"
	alice := buyerToken(t, env.Tenant, "alice", time.Hour)

	// The plain case, then its replay.
	r := b.do(t, http.MethodPost, path, alice, map[string]any{"numbers": []int{7}}, "Idempotency-Key", "one")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, r.body["statusUrl"], r.header.Get("Location"))
	require.Equal(t, "QUEUED", r.body["status"])
	require.NotEmpty(t, r.body["id"])

	// Another answer format asked for: huma's route, the same answer, and
	// the same buyer's window.
	r = b.do(t, http.MethodPost, path, alice, map[string]any{"numbers": []int{7}}, "Idempotency-Key", "one",
		"Accept", "application/json, */*")
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	limited := b.do(t, http.MethodPost, path, alice, map[string]any{"quantity": 1}, "Idempotency-Key", "two")
	requireProblem(t, limited, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Equal(t, "1", limited.header.Get("Retry-After"))

	// What the schema refuses is huma's to answer, as documented.
	bob := buyerToken(t, env.Tenant, "bob", time.Hour)
	requireProblem(t, b.do(t, http.MethodPost, path, bob, map[string]any{"quantity": 1},
		"Idempotency-Key", strings.Repeat("k", 201)), http.StatusUnprocessableEntity, "VALIDATION_FAILED")
	requireProblem(t, b.do(t, http.MethodPost, path, bob, map[string]any{"quantity": 1, "presaleCode": strings.Repeat("c", 41)},
		"Idempotency-Key", "k"), http.StatusUnprocessableEntity, "VALIDATION_FAILED")
	// Other credentials too: a tenant's API key may not reserve, a
	// tampered token is refused.
	carol := buyerToken(t, env.Tenant, "carol", time.Hour)
	requireProblem(t, b.do(t, http.MethodPost, path, env.Tenant.APIKey, map[string]any{"quantity": 1},
		"Idempotency-Key", "k"), http.StatusUnauthorized, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodPost, path, carol[:len(carol)-2]+"xx", map[string]any{"quantity": 1},
		"Idempotency-Key", "k"), http.StatusUnauthorized, "INVALID_TOKEN")
	// A problem of the handler's own, on the fast path.
	requireProblem(t, b.do(t, http.MethodPost, path, carol, map[string]any{"numbers": []int{101}},
		"Idempotency-Key", "k"), http.StatusUnprocessableEntity, "NUMBER_OUT_OF_RANGE")
	require.Equal(t, 1, b.countRequests(t), "only alice's first request was recorded")

	// A member named twice is read as huma's route reads it: the last.
	dan := buyerToken(t, env.Tenant, "dan", time.Hour)
	r = b.do(t, http.MethodPost, path, dan, `{"numbers":[8],"numbers":[9]}`, "Idempotency-Key", "twice")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	var numbers []int32
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT numbers FROM reservation_requests WHERE id = $1`, r.body["id"]).Scan(&numbers))
	require.Equal(t, []int32{9}, numbers)
	// And a member name in another case as the schema's own (huma's
	// validation and encoding/json both match names so).
	r = b.do(t, http.MethodPost, path, dan, `{"Numbers":[10]}`, "Idempotency-Key", "case")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT numbers FROM reservation_requests WHERE id = $1`, r.body["id"]).Scan(&numbers))
	require.Equal(t, []int32{10}, numbers)
	// A body the fast path has seen is read from its memo, the same.
	erin := buyerToken(t, env.Tenant, "erin", time.Hour)
	r = b.do(t, http.MethodPost, path, erin, `{"numbers":[8],"numbers":[9]}`, "Idempotency-Key", "twice")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.NoError(t, env.Schema.Pool.QueryRow(context.Background(),
		`SELECT numbers FROM reservation_requests WHERE id = $1`, r.body["id"]).Scan(&numbers))
	require.Equal(t, []int32{9}, numbers)
}
