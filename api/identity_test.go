package api_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/testfix"
)

// A tenant with its own identity provider: the admin names its JWKS,
// issuer and audience; buyers then reserve with the provider's RS256
// tokens, beside the tenant's HS256 ones. A JWKS on a private address is
// refused unless the deployment allows private targets.
func TestIdentityProviderBuyers(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "use": "sig",
			"n": b64.EncodeToString(key.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	}))
	t.Cleanup(jwks.Close)

	b := setup(t, testfix.Options{Work: true})
	path := "/v1/tenants/" + b.env.Tenant.ID.String() + "/identity-provider"
	idp := map[string]any{"jwksUrl": jwks.URL, "issuer": "https://login.acme.test/", "audience": "boxoffice"}
	requireProblem(t, b.do(t, http.MethodPut, path, b.env.Tenant.APIKey, idp), http.StatusUnprocessableEntity, "INVALID_JWKS_URL")

	env := b.env
	lenient := &testBundle{env: env, server: api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, PrivateTargets: true})}
	r := lenient.do(t, http.MethodPut, path, env.Tenant.APIKey, map[string]any{"jwksUrl": "http://127.0.0.1:1/jwks", "issuer": "x", "audience": "y"})
	requireProblem(t, r, http.StatusUnprocessableEntity, "JWKS_UNUSABLE")
	r = lenient.do(t, http.MethodPut, path, env.Tenant.APIKey, idp)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, jwks.URL, lenient.do(t, http.MethodGet, path, env.Tenant.APIKey, nil).body["provider"].(map[string]any)["jwksUrl"])

	sign := func(sub string, alg jwt.SigningMethod, k any) string {
		tok := jwt.NewWithClaims(alg, jwt.RegisteredClaims{Issuer: "https://login.acme.test/", Audience: jwt.ClaimStrings{"boxoffice"},
			Subject: sub, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(k)
		require.NoError(t, err)
		return s
	}
	products := "/v1/products/" + b.product.ID.String() + "/reservations"
	r = lenient.do(t, http.MethodPost, products, sign("auth0|ana", jwt.SigningMethodRS256, key), map[string]any{"quantity": 1},
		"Idempotency-Key", "idp-1")
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	b.env.Drain(t, b.product, 10)
	r = lenient.do(t, http.MethodGet, "/v1/reservations/"+r.body["id"].(string), sign("auth0|ana", jwt.SigningMethodRS256, key), nil)
	require.Equal(t, "HELD", r.body["status"], "the provider's sub is the buyer: %s", r.raw)

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	requireProblem(t, lenient.do(t, http.MethodPost, products, sign("auth0|eve", jwt.SigningMethodRS256, other), map[string]any{"quantity": 1},
		"Idempotency-Key", "idp-2"), http.StatusUnauthorized, "INVALID_TOKEN")
	require.Equal(t, http.StatusAccepted, lenient.do(t, http.MethodPost, products, b.buyer, map[string]any{"quantity": 1}, "Idempotency-Key", "hs-1").status,
		"the tenant's HS256 tokens keep working")

	require.Equal(t, http.StatusNoContent, lenient.do(t, http.MethodDelete, path, env.Tenant.APIKey, nil).status)
	require.Nil(t, lenient.do(t, http.MethodGet, path, env.Tenant.APIKey, nil).body["provider"])
}
