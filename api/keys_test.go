package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
)

// A revoked key stops working (within the lookup cache's life: a fresh
// server here has not cached it), and other tenants can neither list nor
// revoke a tenant's keys.
func TestAPIKeyRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	base := "/v1/tenants/" + b.env.Tenant.ID.String() + "/api-keys"
	r := b.do(t, http.MethodPost, base, b.env.Tenant.APIKey, map[string]any{"role": "operator", "label": "gate scanner"})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	key, id := r.body["apiKey"].(string), r.body["id"].(string)

	r = b.do(t, http.MethodGet, base, b.env.Tenant.APIKey, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Contains(t, string(r.raw), `"label":"gate scanner"`)
	require.NotContains(t, string(r.raw), key)
	// The list tells keys apart by their first characters, and says when
	// each was last used.
	listed := func() map[string]any {
		r := b.do(t, http.MethodGet, base, b.env.Tenant.APIKey, nil)
		var keys []map[string]any
		require.NoError(t, json.Unmarshal(r.raw, &keys))
		for _, k := range keys {
			if k["id"] == id {
				return k
			}
		}
		t.Fatalf("key %s not listed", id)
		return nil
	}
	k := listed()
	require.Equal(t, key[:9], k["prefix"])
	require.Nil(t, k["lastUsedAt"], "never used yet")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/ops/queues", key, nil).status)
	require.NotNil(t, listed()["lastUsedAt"])

	other := b.env.NewTenant(t)
	requireProblem(t, b.do(t, http.MethodGet, base, other.APIKey, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodDelete, base+"/"+id, other.APIKey, nil), 404, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodDelete, "/v1/tenants/"+other.ID.String()+"/api-keys/"+id, other.APIKey, nil), 404, "NOT_FOUND")

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, base+"/"+id, b.env.Tenant.APIKey, nil).status)
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, base+"/"+id, adminKey, nil).status, "twice is fine")
	requireProblem(t, b.do(t, http.MethodDelete, base+"/"+uuid.NewString(), adminKey, nil), 404, "NOT_FOUND")

	// A fresh server, as another API process whose cache has expired.
	requireProblem(t, b.fresh(t).do(t, http.MethodGet, "/v1/ops/queues", key, nil), 401, "UNAUTHORIZED")
}

// After a rotation new tokens use the new secret, tokens signed with the old
// one verify during the overlap only.
func TestBuyerSecretRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	rotate := "/v1/tenants/" + b.env.Tenant.ID.String() + "/buyer-token-secret/rotate"
	oldToken := buyerToken(t, b.env.Tenant, "alice", time.Hour)
	requireProblem(t, b.do(t, http.MethodPost, rotate, b.env.NewTenant(t).APIKey, map[string]any{}), 404, "NOT_FOUND")

	r := b.do(t, http.MethodPost, rotate, b.env.Tenant.APIKey, map[string]any{"overlapSeconds": 600})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	secret := r.body["buyerTokenSecret"].(string)
	require.NotEqual(t, b.env.Tenant.BuyerTokenSecret, secret)
	newToken, err := tenant.SignBuyerToken([]byte(secret), b.env.Tenant.ID, "bob", time.Hour)
	require.NoError(t, err)

	// Fresh servers, so no secret is cached.
	check := func(token string) int {
		return b.fresh(t).reserve(t, token, uuid.NewString(), map[string]any{"quantity": 1}).status
	}
	require.Equal(t, http.StatusAccepted, check(newToken))
	require.Equal(t, http.StatusAccepted, check(oldToken), "the previous secret verifies during the overlap")

	r = b.do(t, http.MethodPost, rotate, adminKey, map[string]any{"overlapSeconds": 0})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, http.StatusUnauthorized, check(oldToken), "two rotations later the first secret is gone")
	require.Equal(t, http.StatusUnauthorized, check(newToken), "overlap 0 ends the previous secret at once")
}
