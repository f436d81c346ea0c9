package api_test

import (
	"context"
	"encoding/csv"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/payment"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// signIn exchanges a key for a console session: the cookie and CSRF token.
func (b *testBundle) signIn(t *testing.T, key string) (cookie, csrf string) {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/console/session", "", map[string]any{"key": key})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	set := r.header.Get("Set-Cookie")
	require.Contains(t, set, "HttpOnly")
	require.Contains(t, set, "SameSite=Strict")
	require.Contains(t, set, "Secure", "outside dev the cookie is Secure")
	cookie, _, _ = strings.Cut(set, ";")
	return cookie, r.body["csrfToken"].(string)
}

func TestConsoleSession(t *testing.T) {
	t.Parallel()
	// Checkout is on (its switch is paused below); no payment is made.
	b := setup(t, testfix.Options{Provider: payment.NewSim("http://127.0.0.1:1", time.Second)})
	ctx := context.Background()
	_, opKey, err := b.env.Tenants.CreateKey(ctx, b.env.Tenant.ID, tenant.RoleOperator, "gate")
	require.NoError(t, err)

	// Bad keys get nothing.
	requireProblem(t, b.do(t, http.MethodPost, "/v1/console/session", "", map[string]any{"key": "bo_nope"}), 401, "UNAUTHORIZED")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/console/session", "", map[string]any{"key": "guess"}), 401, "UNAUTHORIZED")

	// A tenant admin's session does what its key does, with the CSRF token
	// on changes.
	cookie, csrf := b.signIn(t, b.env.Tenant.APIKey)
	me := b.do(t, http.MethodGet, "/v1/console/session", "", nil, "Cookie", cookie)
	require.Equal(t, http.StatusOK, me.status, string(me.raw))
	require.Equal(t, "tenant-admin", me.body["role"])
	require.Equal(t, b.env.Tenant.Slug, me.body["tenant"].(map[string]any)["slug"])
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/products", "", nil, "Cookie", cookie).status)
	patch := map[string]any{"name": "Renamed"}
	path := "/v1/products/" + b.product.ID.String()
	requireProblem(t, b.do(t, http.MethodPatch, path, "", patch, "Cookie", cookie), 403, "CSRF_TOKEN_INVALID")
	requireProblem(t, b.do(t, http.MethodPatch, path, "", patch, "Cookie", cookie, "X-CSRF-Token", "forged"), 403, "CSRF_TOKEN_INVALID")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, path, "", patch, "Cookie", cookie, "X-CSRF-Token", csrf).status)
	// Another process accepts the same session (it lives in PostgreSQL).
	require.Equal(t, http.StatusOK, b.fresh(t).do(t, http.MethodGet, "/v1/console/session", "", nil, "Cookie", cookie).status)

	// An operator's session watches but does not manage, and sees only its
	// tenant.
	opCookie, opCSRF := b.signIn(t, opKey)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/ops/sales", "", nil, "Cookie", opCookie).status)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", "", nil, "Cookie", opCookie), 403, "FORBIDDEN")
	requireProblem(t, b.do(t, http.MethodPatch, path, "", patch, "Cookie", opCookie, "X-CSRF-Token", opCSRF), 403, "FORBIDDEN")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/ops/checkout/pause", "", nil, "Cookie", opCookie, "X-CSRF-Token", opCSRF), 403, "FORBIDDEN")
	other := b.env.NewTenant(t)
	otherProduct := b.env.Product(t, testfix.ProductOpts{Tenant: other.ID})
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/sales/"+otherProduct.ID.String(), "", nil, "Cookie", opCookie), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products/"+otherProduct.ID.String()+"/report", "", nil, "Cookie", opCookie), 404, "NOT_FOUND")

	// The platform admin's session pauses checkout with a reason (audited)
	// and opens the River UI; an operator's does neither.
	adminCookie, adminCSRF := b.signIn(t, adminKey)
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/ops/river", "", nil, "Cookie", opCookie).status)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/ops/river/", "", nil, "Cookie", adminCookie).status)
	paused := b.do(t, http.MethodPost, "/v1/ops/checkout/pause", "", map[string]any{"reason": "provider incident"},
		"Cookie", adminCookie, "X-CSRF-Token", adminCSRF)
	require.Equal(t, http.StatusOK, paused.status, string(paused.raw))
	require.Equal(t, "provider incident", paused.body["reason"])
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/v1/ops/checkout/resume", "", nil,
		"Cookie", adminCookie, "X-CSRF-Token", adminCSRF).status)
	log := b.do(t, http.MethodGet, "/v1/audit", adminKey, nil)
	actions := []string{}
	for _, e := range log.body["entries"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	require.Subset(t, actions, []string{"console-sign-in", "ops-checkout-pause", "ops-checkout-resume", "update-product"})

	// Sign-out ends the session everywhere.
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/console/session", "", nil,
		"Cookie", adminCookie, "X-CSRF-Token", adminCSRF).status)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/sales", "", nil, "Cookie", adminCookie), 401, "SESSION_EXPIRED")

	// Idle and absolute expiry, and a revoked key, end a session.
	_, err = b.env.Schema.Pool.Exec(ctx, `UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'
		WHERE NOT admin AND role = 'tenant-admin'`)
	require.NoError(t, err)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", "", nil, "Cookie", cookie), 401, "SESSION_EXPIRED")
	cookie, _ = b.signIn(t, b.env.Tenant.APIKey)
	_, err = b.env.Schema.Pool.Exec(ctx, `UPDATE console_sessions SET expires_at = now() - interval '1 second'
		WHERE NOT admin AND role = 'tenant-admin' AND ended_at IS NULL`)
	require.NoError(t, err)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products", "", nil, "Cookie", cookie), 401, "SESSION_EXPIRED")
	var opKeyID string
	require.NoError(t, b.env.Schema.Pool.QueryRow(ctx, `SELECT key_id FROM console_sessions WHERE role = 'operator'`).Scan(&opKeyID))
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete,
		"/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys/"+opKeyID, b.env.Tenant.APIKey, nil).status)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/sales", "", nil, "Cookie", opCookie), 401, "SESSION_EXPIRED")

	// The console's pages are served, never framed, with only their own scripts.
	page := b.do(t, http.MethodGet, "/console/", "", nil)
	require.Equal(t, http.StatusOK, page.status)
	require.Equal(t, "DENY", page.header.Get("X-Frame-Options"))
	require.Contains(t, page.header.Get("Content-Security-Policy"), "script-src 'self'")
	require.NotRegexp(t, `(src|href)="(https?:)?//`, string(page.raw))
}

func TestLiveSaleAndReport(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	// Three buyers ask; one more asks for a number already taken.
	for _, buyer := range []string{"ana", "bo", "cy"} {
		r := b.reserve(t, buyerToken(t, b.env.Tenant, buyer, time.Hour), "k-"+buyer, map[string]any{"quantity": 2})
		require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	}
	path := "/v1/ops/sales/" + b.product.ID.String()
	v := b.do(t, http.MethodGet, path, b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, v.status, string(v.raw))
	require.EqualValues(t, 3, v.body["requests"].(map[string]any)["queued"], "the backlog before the claim")

	b.env.Drain(t, b.product, 10)
	// Refused as it is recorded: the answer brings the decision.
	r := b.reserve(t, buyerToken(t, b.env.Tenant, "dee", time.Hour), "k-dee", map[string]any{"numbers": []int{1}})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "REJECTED", r.body["status"])
	require.Equal(t, "SEAT_TAKEN", r.body["reason"])

	// Another process shows the same figures: they come from the database.
	v = b.fresh(t).do(t, http.MethodGet, path, adminKey, nil)
	require.Equal(t, http.StatusOK, v.status, string(v.raw))
	req := v.body["requests"].(map[string]any)
	require.EqualValues(t, 0, req["queued"])
	require.EqualValues(t, 1, req["rejections"].(map[string]any)["SEAT_TAKEN"])
	require.EqualValues(t, 3, v.body["holds"].(map[string]any)["active"])
	require.EqualValues(t, 6, v.body["product"].(map[string]any)["held"])
	require.Empty(t, v.body["invariant"].(map[string]any)["violations"])
	hist := v.body["history"].(map[string]any)
	require.Len(t, hist["accepted"], 60)
	sum := func(key string) (n float64) {
		for _, x := range hist[key].([]any) {
			n += x.(float64)
		}
		return n
	}
	require.EqualValues(t, 4, sum("accepted"))
	require.EqualValues(t, 4, sum("decided"))
	require.EqualValues(t, 0, hist["queued"].([]any)[59])

	// The report's funnel adds up, and its CSV says the same.
	rep := b.do(t, http.MethodGet, "/v1/products/"+b.product.ID.String()+"/report", b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, rep.status, string(rep.raw))
	tot := rep.body["totals"].(map[string]any)
	require.EqualValues(t, 4, tot["reserved"])
	require.EqualValues(t, 3, tot["held"])
	require.EqualValues(t, 6, tot["numbersHeld"])
	require.EqualValues(t, 1, tot["conflicts"])
	require.Equal(t, b.product.EventID.String(), rep.body["event"].(map[string]any)["id"], "the report names its event")
	out := b.do(t, http.MethodGet, "/v1/products/"+b.product.ID.String()+"/report.csv", b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, out.status)
	require.Contains(t, out.header.Get("Content-Type"), "text/csv")
	recs, err := csv.NewReader(strings.NewReader(string(out.raw))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, "minute", recs[0][0])
	last := recs[len(recs)-1]
	require.Equal(t, []string{"total", "0", "0", "4", "3", "6", "0", "1", "1", "0", "0", "0", "0"}, last)

	// The stream (exercised in the console's browser tests) wants a key
	// or a session.
	requireProblem(t, b.do(t, http.MethodGet, path+"/stream", "", nil), 401, "UNAUTHORIZED")
}

func TestRehearsalEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	ctx := context.Background()
	_, opKey, err := b.env.Tenants.CreateKey(ctx, b.env.Tenant.ID, tenant.RoleOperator, "")
	require.NoError(t, err)
	path := "/v1/products/" + b.product.ID.String() + "/rehearsals"
	body := map[string]any{"buyers": 100, "activeShoppers": 50, "shoppingSeconds": 30}
	requireProblem(t, b.do(t, http.MethodPost, path, opKey, body), 403, "FORBIDDEN")
	requireProblem(t, b.do(t, http.MethodPost, path, b.env.Tenant.APIKey, map[string]any{"buyers": 0}), 422, "VALIDATION_FAILED")
	r := b.do(t, http.MethodPost, path, b.env.Tenant.APIKey, body)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "QUEUED", r.body["status"])
	requireProblem(t, b.do(t, http.MethodPost, path, b.env.Tenant.APIKey, body), 409, "REHEARSAL_RUNNING")
	id := r.body["id"].(string)
	got := b.do(t, http.MethodGet, "/v1/rehearsals/"+id, opKey, nil)
	require.Equal(t, http.StatusOK, got.status, string(got.raw))
	require.EqualValues(t, 100, got.body["params"].(map[string]any)["buyers"])
	list := b.do(t, http.MethodGet, path, b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, list.status)
	other := b.env.NewTenant(t)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/rehearsals/"+id, other.APIKey, nil), 404, "NOT_FOUND")
}

// A console session dies with the credential it was opened with: an admin
// session when the admin key changes or is removed (a restart with another
// key), a tenant session when its key is revoked, whichever process
// revoked it. A stream opened with a key ends once the key is revoked.
func TestConsoleSessionDiesWithItsCredential(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	ctx := context.Background()
	adminCookie, _ := b.signIn(t, adminKey)
	rotated := *b
	rotated.server = b.newServerWithAdminKey(t, "a-new-admin-key-after-the-restart")
	none := *b
	none.server = b.newServerWithAdminKey(t, "")
	for name, other := range map[string]*testBundle{"rotated": &rotated, "none": &none} {
		requireProblem(t, other.do(t, http.MethodGet, "/v1/console/session", "", nil, "Cookie", adminCookie), 401, "SESSION_EXPIRED")
		require.Equal(t, http.StatusUnauthorized, other.do(t, http.MethodGet, "/ops/river/", "", nil, "Cookie", adminCookie).status, name)
		requireProblem(t, other.do(t, http.MethodPost, "/v1/tenants", "", map[string]any{"slug": "sneaky", "name": "Sneaky"},
			"Cookie", adminCookie), 401, "SESSION_EXPIRED")
	}
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/console/session", "", nil, "Cookie", adminCookie).status,
		"the key it was opened with still opens it")
	newCookie, _ := rotated.signIn(t, "a-new-admin-key-after-the-restart")
	require.Equal(t, http.StatusOK, rotated.do(t, http.MethodGet, "/v1/console/session", "", nil, "Cookie", newCookie).status)

	// A tenant key revoked in the database, not through this process's
	// revoke (which also ends its sessions), still ends the session.
	_, opKey, err := b.env.Tenants.CreateKey(ctx, b.env.Tenant.ID, tenant.RoleOperator, "gate")
	require.NoError(t, err)
	opCookie, _ := b.signIn(t, opKey)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/ops/sales", "", nil, "Cookie", opCookie).status)
	_, err = b.env.Schema.Pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1`, tenant.HashKey(opKey))
	require.NoError(t, err)
	requireProblem(t, b.do(t, http.MethodGet, "/v1/ops/sales", "", nil, "Cookie", opCookie), 401, "SESSION_EXPIRED")

	// A live-sale stream opened with a key stops when the key is revoked.
	keyID, streamKey, err := b.env.Tenants.CreateKey(ctx, b.env.Tenant.ID, tenant.RoleOperator, "wall")
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = b.server.App().Listener(ln) }()
	t.Cleanup(func() { _ = b.server.App().ShutdownWithTimeout(time.Second); _ = ln.Close() })
	resp, events := openStream(t, "http://"+ln.Addr().String(), "/v1/ops/sales/"+b.product.ID.String()+"/stream",
		"Authorization", "Bearer "+streamKey)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "sale", nextEvent(t, events).name)
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete,
		"/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys/"+keyID.String(), b.env.Tenant.APIKey, nil).status)
	deadline := time.After(30 * time.Second) // the key cache's TTL, then a tick
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream outlived its revoked key")
		}
	}
}
