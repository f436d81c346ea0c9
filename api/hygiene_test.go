package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/audit"
	"boxoffice/internal/testfix"
)

// Bad input gets a 4xx, never a 500: NUL and invalid UTF-8 in a query, a
// header or a body; validation answers name no Go types and echo no body;
// audit entries stay on one line; secrets are never cached; a buyer token
// cannot live for ever.
func TestBadInputIsAClientError(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key := b.env.Tenant.APIKey
	product := "/v1/products/" + b.product.ID.String()

	requireProblem(t, b.do(t, http.MethodGet, "/v1/tickets/verify?code=a%00b", key, nil), 400, "MALFORMED_REQUEST")
	requireProblem(t, b.do(t, http.MethodGet, "/v1/tenant/orders?q=%ff%fe", key, nil), 400, "MALFORMED_REQUEST")
	requireProblem(t, b.reserve(t, b.buyer, "k\xff", map[string]any{"quantity": 1}), 400, "MALFORMED_REQUEST")
	requireProblem(t, b.do(t, http.MethodPatch, product, key, `{"description":"a\u0000b"}`), 422, "INVALID_TEXT")
	got := b.do(t, http.MethodGet, product, key, nil)
	require.NotContains(t, got.body["description"], "\x00", "nothing half-written")

	// A buyer whose sub holds a NUL is not a buyer.
	claims := fmt.Sprintf(`{"sub":"a\u0000b","tid":"%s","exp":%d}`, b.env.Tenant.ID, time.Now().Add(time.Hour).Unix())
	forged := signJWT(t, b.env.Tenant.BuyerTokenSecret, claims)
	requireProblem(t, b.reserve(t, forged, "k-nul", map[string]any{"quantity": 1}), 401, "INVALID_TOKEN")
	forever := signJWT(t, b.env.Tenant.BuyerTokenSecret, fmt.Sprintf(`{"sub":"ana","tid":"%s","exp":1e300}`, b.env.Tenant.ID))
	requireProblem(t, b.reserve(t, forever, "k-forever", map[string]any{"quantity": 1}), 401, "INVALID_TOKEN")

	// Validation answers: no Go names, no echo of the body.
	r := b.reserve(t, b.buyer, "k-big", `{"quantity":99999999999999999999}`)
	requireProblem(t, r, 422, "VALIDATION_FAILED")
	require.NotContains(t, string(r.raw), "ReservationBody")
	require.NotContains(t, string(r.raw), "Go ")
	r = b.reserve(t, b.buyer, "k-echo", `{"quantity":1,"padding":"`+strings.Repeat("x", 60_000)+`"}`)
	requireProblem(t, r, 422, "VALIDATION_FAILED")
	require.Less(t, len(r.raw), 2048, "the body is not echoed back")

	// Secrets shown once are never cached.
	created := b.do(t, http.MethodPost, "/v1/tenants", adminKey, map[string]any{"slug": "secretive", "name": "Secretive"})
	require.Equal(t, http.StatusCreated, created.status, string(created.raw))
	require.Equal(t, "no-store", created.header.Get("Cache-Control"))
	newKey := b.do(t, http.MethodPost, "/v1/tenants/"+b.env.Tenant.ID.String()+"/api-keys", key, map[string]any{"role": "operator", "label": "x"})
	require.Equal(t, http.StatusCreated, newKey.status, string(newKey.raw))
	require.Equal(t, "no-store", newKey.header.Get("Cache-Control"))
	rotated := b.do(t, http.MethodPost, "/v1/tenants/"+b.env.Tenant.ID.String()+"/buyer-token-secret/rotate", key, map[string]any{})
	require.Equal(t, http.StatusOK, rotated.status, string(rotated.raw))
	require.Equal(t, "no-store", rotated.header.Get("Cache-Control"))

	// An audit entry is one line, whatever the path held.
	log := audit.New(b.env.Schema.Pool)
	require.NoError(t, log.Record(t.Context(), audit.Entry{TenantID: &b.env.Tenant.ID, Actor: "x", Action: "probe",
		Target: "PUT /v1/products/1\r\nFORGED 200 ok\x1b[2J", Status: 404, From: "127.0.0.1"}))
	entries, err := log.List(t.Context(), b.env.Tenant.ID, 0, 10)
	require.NoError(t, err)
	var probe string
	for _, e := range entries {
		if e.Action == "probe" {
			probe = e.Target
		}
	}
	require.NotEmpty(t, probe)
	require.NotContains(t, probe, "\r")
	require.NotContains(t, probe, "\n")
	require.NotContains(t, probe, "\x1b")
}

// signJWT signs claims as HS256 with secret, whatever they say.
func signJWT(t *testing.T, secret, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(claims))
	return input + "." + enc.EncodeToString(hmacSHA256([]byte(secret), input))
}

func hmacSHA256(key []byte, input string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(input))
	return m.Sum(nil)
}
