package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/testfix"
)

func TestAuditLog(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, tn := b.storeTenant(t, "audited")
	otherKey, _ := b.storeTenant(t, "bystander")

	// Actions: the platform admin sets a quota; the tenant's admin creates a
	// product, changes it, issues and revokes a key.
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodPut, "/v1/tenants/"+tn.ID.String()+"/quota", adminKey,
		map[string]any{"products": 50, "capacity": 100000}).status)
	id := b.createProduct(t, key, map[string]any{})
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPatch, "/v1/products/"+id, key, map[string]any{"name": "Renamed"}).status)
	r := b.do(t, http.MethodPost, "/v1/tenants/"+tn.ID.String()+"/api-keys", key, map[string]any{"role": "operator", "label": "gate"})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	keyID := r.body["id"].(string)
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/tenants/"+tn.ID.String()+"/api-keys/"+keyID, key, nil).status)
	// A refused change is recorded with its status.
	requireProblem(t, b.do(t, http.MethodPatch, "/v1/products/"+id, key, map[string]any{"onSaleAt": "2000-01-01T00:00:00Z"}),
		409, "ALREADY_ON_SALE")
	// Reads are not actions.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/v1/products/"+id, key, nil).status)

	actions := func(token string) []map[string]any {
		r := b.do(t, http.MethodGet, "/v1/audit", token, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		var out []map[string]any
		for _, e := range r.body["entries"].([]any) {
			out = append(out, e.(map[string]any))
		}
		return out
	}
	mine := actions(key)
	var names []string
	for _, e := range mine {
		names = append(names, e["action"].(string))
		require.Equal(t, tn.ID.String(), e["tenantId"])
		require.NotEmpty(t, e["from"])
	}
	require.Equal(t, []string{"update-product", "revoke-api-key", "create-api-key", "update-product", "create-product",
		"set-tenant-quota"}, names, "newest first, the tenant's own")
	require.EqualValues(t, 409, mine[0]["status"])
	require.Equal(t, "platform-admin", mine[5]["actor"])
	require.Regexp(t, `^tenant-admin key [0-9a-f-]{36}$`, mine[1]["actor"])
	require.Contains(t, mine[1]["target"], "DELETE /v1/tenants/")

	// Another tenant sees none of it; the platform admin sees it all.
	require.Empty(t, actions(otherKey))
	all := actions(adminKey)
	require.GreaterOrEqual(t, len(all), len(mine)+2, "tenant creations are platform actions")
	// Paging.
	r = b.do(t, http.MethodGet, "/v1/audit?limit=2", key, nil)
	page := r.body["entries"].([]any)
	require.Len(t, page, 2)
	last := page[1].(map[string]any)["id"].(float64)
	r = b.do(t, http.MethodGet, "/v1/audit?limit=2&before="+itoa(int64(last)), key, nil)
	require.Equal(t, "create-api-key", r.body["entries"].([]any)[0].(map[string]any)["action"])
}
