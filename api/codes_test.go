package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// Code lists through the API, and a presale before the general sale:
// without a code refused, with a code let in and held, a code past its
// uses refused, a buyer let in once needing no code again.
func TestPresaleCodes(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	opens := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10, OnSaleAt: opens})
	key := b.env.Tenant.APIKey
	list := map[string]any{"kind": "presale", "name": "Fan club", "productId": p.ID, "usesPerCode": 1,
		"validFrom": time.Now().Add(-time.Minute).UTC(), "validUntil": opens, "codes": []string{"club-1"}}

	requireProblem(t, b.do(t, http.MethodPost, "/v1/code-lists", key, map[string]any{"kind": "presale", "name": "x", "codes": []string{"A-1"}}),
		http.StatusUnprocessableEntity, "INVALID_PRESALE")
	late := map[string]any{"kind": "presale", "name": "Late", "productId": p.ID, "validFrom": opens, "validUntil": opens.Add(time.Hour),
		"codes": []string{"LATE-1"}}
	requireProblem(t, b.do(t, http.MethodPost, "/v1/code-lists", key, late), http.StatusUnprocessableEntity, "PRESALE_AFTER_OPENING")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/code-lists", key, map[string]any{"name": "Both", "percentOff": 10, "amountOffCents": 100,
		"codes": []string{"BOTH"}}), http.StatusUnprocessableEntity, "INVALID_DISCOUNT")
	requireProblem(t, b.do(t, http.MethodPost, "/v1/code-lists", key, map[string]any{"name": "Bad", "percentOff": 10,
		"codes": []string{"no spaces please"}}), http.StatusUnprocessableEntity, "INVALID_CODE")
	r := b.do(t, http.MethodPost, "/v1/code-lists", key, list)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	require.Equal(t, "PRESALE", r.body["kind"])
	requireProblem(t, b.do(t, http.MethodPost, "/v1/code-lists", key, map[string]any{"name": "Dup", "percentOff": 10,
		"codes": []string{"CLUB-1"}}), http.StatusConflict, "CODE_TAKEN")
	r = b.do(t, http.MethodPost, "/v1/code-lists/"+r.body["id"].(string)+"/codes", key, map[string]any{"generate": 3})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.EqualValues(t, 4, r.body["codes"])

	reserve := func(buyer, code string) response {
		body := map[string]any{"quantity": 1}
		if code != "" {
			body["presaleCode"] = code
		}
		return b.do(t, http.MethodPost, "/v1/products/"+p.ID.String()+"/reservations", buyerToken(t, b.env.Tenant, buyer, time.Hour),
			body, "Idempotency-Key", buyer+code)
	}
	requireProblem(t, reserve("ana", ""), http.StatusForbidden, "PRESALE_CODE_REQUIRED")
	requireProblem(t, reserve("ana", "WRONG"), http.StatusUnprocessableEntity, "CODE_UNKNOWN")
	first := reserve("ana", "club-1")
	require.Equal(t, http.StatusAccepted, first.status, string(first.raw))
	requireProblem(t, reserve("bea", "CLUB-1"), http.StatusUnprocessableEntity, "CODE_USED_UP")
	again := reserve("ana", "")
	require.Equal(t, http.StatusAccepted, again.status, "let in once, in for the window: %s", again.raw)
	b.env.Drain(t, p, 10)
	for _, id := range []any{first.body["id"], again.body["id"]} {
		r := b.do(t, http.MethodGet, "/v1/reservations/"+id.(string), buyerToken(t, b.env.Tenant, "ana", time.Hour), nil)
		require.Equal(t, reservation.StatusHeld, r.body["status"], "held before the general sale: %s", r.raw)
	}
	lists := b.do(t, http.MethodGet, "/v1/code-lists", key, nil)
	require.Equal(t, http.StatusOK, lists.status)
	require.EqualValues(t, 1, lists.body["lists"].([]any)[0].(map[string]any)["used"])
	csv := b.do(t, http.MethodGet, "/v1/code-lists/"+lists.body["lists"].([]any)[0].(map[string]any)["id"].(string)+"/codes.csv", key, nil)
	require.Equal(t, http.StatusOK, csv.status)
	require.Contains(t, string(csv.raw), "CLUB-1,1,0")
	b.env.RequireInvariants(t)
}
