package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitingroom"
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

// A presale behind the waiting room: the code gates joining the presale's
// line (drawn when its window opens), the room admits its holders, and
// they hold numbers before the general sale; without a code a shopper
// joins the general sale's line and waits for its draw.
func TestPresaleThroughTheWaitingRoom(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	general := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	room := &waitingroom.Settings{Enabled: true, ActiveShoppers: 10, ShoppingSeconds: 1}
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10, WaitingRoom: room, OnSaleAt: general})
	base := "/v1/products/" + p.ID.String()
	from := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	r := b.do(t, http.MethodPost, "/v1/code-lists", b.env.Tenant.APIKey, map[string]any{"kind": "presale", "name": "Fan club",
		"productId": p.ID, "usesPerCode": 1, "validFrom": from, "validUntil": general, "codes": []string{"FAN-1"}})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	fair := b.do(t, http.MethodGet, base+"/queue/fairness", "", nil)
	require.Len(t, fair.body["presales"], 1, "the presale's round is published with its commitment: %s", fair.raw)

	ana, bea := buyerToken(t, b.env.Tenant, "ana", time.Hour), buyerToken(t, b.env.Tenant, "bea", time.Hour)
	join := func(who, code string) response {
		var body any
		if code != "" {
			body = map[string]any{"presaleCode": code}
		}
		return b.do(t, http.MethodPost, base+"/queue", who, body)
	}
	requireProblem(t, join(ana, "NOPE"), http.StatusUnprocessableEntity, "CODE_UNKNOWN")
	r = join(ana, "fan-1")
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	anaQueue := r.body["queueToken"].(string)
	requireProblem(t, join(bea, "FAN-1"), http.StatusUnprocessableEntity, "CODE_USED_UP")
	r = join(bea, "")
	require.Equal(t, http.StatusCreated, r.status, "without a code: the general sale's line")
	beaQueue := r.body["queueToken"].(string)
	r = b.do(t, http.MethodGet, "/v1/queue/"+anaQueue, "", nil)
	require.Equal(t, true, r.body["presale"], string(r.raw))
	require.Equal(t, from.Format(time.RFC3339), mustTime(t, r.body["opensAt"]).UTC().Format(time.RFC3339))

	// The window opens: the draw, then admission.
	b.env.Exec(t, `UPDATE code_lists SET valid_from = now() - interval '1 second' WHERE product_id = $1`, p.ID)
	b.env.Exec(t, `UPDATE presale_rounds SET opens_at = now() - interval '1 second' WHERE product_id = $1`, p.ID)
	for range 2 {
		b.env.Exec(t, `UPDATE waiting_rooms SET updated_at = now() - interval '1 second' WHERE product_id = $1`, p.ID)
		_, err := b.env.Rooms.Tick(t.Context())
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r = b.do(c, http.MethodGet, "/v1/queue/"+anaQueue, "", nil)
		assert.Equal(c, "ADMITTED", r.body["status"])
	}, 5*time.Second, 100*time.Millisecond)
	access := r.body["accessToken"].(string)
	require.Equal(t, "WAITING", b.do(t, http.MethodGet, "/v1/queue/"+beaQueue, "", nil).body["status"], "the general line waits")

	r = b.do(t, http.MethodPost, base+"/reservations", ana, map[string]any{"quantity": 2}, "Idempotency-Key", "ana-1", "X-Access-Token", access)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	requireProblem(t, b.do(t, http.MethodPost, base+"/reservations", bea, map[string]any{"quantity": 1}, "Idempotency-Key", "bea-1"),
		http.StatusUnauthorized, "ACCESS_TOKEN_REQUIRED")
	b.env.Drain(t, p, 10)
	r = b.do(t, http.MethodGet, "/v1/reservations/"+r.body["id"].(string), ana, nil)
	require.Equal(t, reservation.StatusHeld, r.body["status"], "held before the general sale: %s", r.raw)
	b.env.RequireInvariants(t)
}
