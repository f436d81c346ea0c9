package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

const seatMapCSV = `section,row,seat,x,y,price_level
North,A,1,10,5,Front
North,A,2,11,5,Front
North,B,1,10,6,
South,A,101,40,5,
`

func TestSeatMap(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, tn := b.storeTenant(t, "venue")
	id := b.createProduct(t, key, map[string]any{"kind": "seated", "capacity": 4, "priceCents": 3000,
		"layout": map[string]any{"sections": []any{map[string]any{"name": "Hall", "rows": []any{
			map[string]any{"name": "1", "seats": 4}}}}}})
	path := "/v1/products/" + id

	// A CSV naming a level without a price is refused; with the levels set
	// first it imports.
	r := b.do(t, http.MethodPut, path+"/seat-map", key, seatMapCSV, "Content-Type", "text/csv")
	requireProblem(t, r, 422, "INVALID_LAYOUT")
	r = b.do(t, http.MethodPut, path+"/layout", key, map[string]any{
		"priceLevels": []any{map[string]any{"name": "Front", "priceCents": 8000}},
		"sections":    []any{map[string]any{"name": "Hall", "rows": []any{map[string]any{"name": "1", "seats": 4}}}}})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.EqualValues(t, 2, r.body["layoutVersion"])
	r = b.do(t, http.MethodPut, path+"/seat-map", key, seatMapCSV, "Content-Type", "text/csv")
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.EqualValues(t, 3, r.body["layoutVersion"])
	requireProblem(t, b.do(t, http.MethodPut, path+"/seat-map", key, "section,row\nA,1\n", "Content-Type", "text/csv"),
		422, "INVALID_LAYOUT")
	requireProblem(t, b.do(t, http.MethodPut, path+"/seat-map", key,
		"section,row,seat,x,y,price_level\nA,1,1,0,0,\nB,1,1,0,0,\nA,2,1,0,0,\n", "Content-Type", "text/csv"),
		422, "INVALID_LAYOUT")

	// The plan: every seat with its number, label, position and level.
	r = b.do(t, http.MethodGet, path+"/layout", "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, "public, max-age=60", r.header.Get("Cache-Control"), "replaceable until the first hold")
	sections := r.body["sections"].([]any)
	require.Len(t, sections, 2)
	north := sections[0].(map[string]any)
	seat := north["rows"].([]any)[0].(map[string]any)["seats"].([]any)[1].(map[string]any)
	require.Equal(t, map[string]any{"number": float64(2), "label": "2", "x": float64(11), "y": float64(5), "priceLevel": "Front"}, seat)
	south := sections[1].(map[string]any)["rows"].([]any)[0].(map[string]any)["seats"].([]any)[0].(map[string]any)
	require.EqualValues(t, 4, south["number"])
	require.Equal(t, "101", south["label"])
	etag := r.header.Get("ETag")
	require.Equal(t, http.StatusNotModified, b.do(t, http.MethodGet, path+"/layout", "", nil, "If-None-Match", etag).status)

	// Once a number is held the plan is fixed, and cached for long.
	p, err := b.env.Products.Get(t.Context(), tn.ID, uuid.MustParse(id))
	require.NoError(t, err)
	res := b.env.Reserve(t, p, "alice", reservation.Params{Numbers: []int32{4}})
	b.env.Drain(t, p, 10)
	held := b.env.Get(t, p, res.ID)
	require.Equal(t, reservation.StatusHeld, held.Status)
	requireProblem(t, b.do(t, http.MethodPut, path+"/seat-map", key, seatMapCSV, "Content-Type", "text/csv"), 409, "LAYOUT_LOCKED")
	require.Eventually(t, func() bool {
		return b.do(t, http.MethodGet, path+"/layout", "", nil).header.Get("Cache-Control") == "public, max-age=86400, immutable"
	}, 5*time.Second, 100*time.Millisecond)

	// The buyer's poll names the seat.
	r = b.do(t, http.MethodGet, "/v1/reservations/"+res.ID.String(), buyerToken(t, tn, "alice", time.Hour), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.Equal(t, []any{"South · Row A · Seat 101"}, r.body["seats"])

	// Numbered products have no plan; a numbered product takes no seat map.
	num := b.createProduct(t, key, map[string]any{})
	requireProblem(t, b.do(t, http.MethodGet, "/v1/products/"+num+"/layout", "", nil), 404, "NO_LAYOUT")
	requireProblem(t, b.do(t, http.MethodPut, "/v1/products/"+num+"/seat-map", key, seatMapCSV, "Content-Type", "text/csv"),
		409, "NOT_SEATED")
}

// TestCreateFromSeatMap: a seated product is created from a CSV seat map
// with its levels' prices in one request; a create that fails (a level
// without a price) writes nothing, so the same slug can be tried again.
func TestCreateFromSeatMap(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, _ := b.storeTenant(t, "csv-create")
	body := map[string]any{"slug": "from-csv", "name": "From CSV", "kind": "seated", "capacity": 4,
		"priceCents": 3000, "currency": "EUR", "publication": "DRAFT", "seatMap": seatMapCSV}
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, body), 422, "INVALID_LAYOUT")
	r := b.do(t, http.MethodGet, "/v1/products", key, nil)
	require.Empty(t, r.body["products"], "a failed create leaves no draft")

	body["priceLevels"] = []any{map[string]any{"name": "Front", "priceCents": 9000}}
	r = b.do(t, http.MethodPost, "/v1/products", key, body)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	layout := r.body["layout"].(map[string]any)
	require.Equal(t, []any{map[string]any{"name": "Front", "priceCents": 9000.0}}, layout["priceLevels"])
	require.Len(t, layout["sections"], 2)

	body["slug"] = "both"
	body["layout"] = map[string]any{"sections": []any{map[string]any{"name": "Hall", "rows": []any{
		map[string]any{"name": "1", "seats": 4}}}}}
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, body), 422, "INVALID_LAYOUT")
}

// A seat map cannot make the API serve or hold more than a stadium: over
// 200,000 seats (even from a 1.5 KB body) or 20,000 rows is a 422 that
// writes nothing, and a CSV obeys the rules a JSON layout does. A big plan
// is rendered once and served gzipped.
func TestSeatMapLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	key, _ := b.storeTenant(t, "stadium")
	rows := func(n, seats int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"name": fmt.Sprint("R", i), "seats": seats}
		}
		return out
	}
	product := func(slug string, capacity int, layout any) map[string]any {
		return map[string]any{"slug": slug, "name": "Big", "kind": "seated", "capacity": capacity,
			"priceCents": 1500, "currency": "EUR", "layout": layout}
	}
	huge := product("huge", 4_000_000, map[string]any{"sections": []any{map[string]any{"name": "S", "rows": rows(40, 100_000)}}})
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, huge), 422, "INVALID_LAYOUT")
	many := product("many", 20_001, map[string]any{"sections": []any{map[string]any{"name": "S", "rows": rows(6667, 1)},
		map[string]any{"name": "T", "rows": rows(6667, 1)}, map[string]any{"name": "U", "rows": rows(6667, 1)}}})
	requireProblem(t, b.do(t, http.MethodPost, "/v1/products", key, many), 422, "INVALID_LAYOUT")
	list := b.do(t, http.MethodGet, "/v1/products", key, nil)
	require.Empty(t, list.body["products"], "a refused create leaves no draft")

	// CSV: control characters and over-long labels are refused as in JSON.
	for name, line := range map[string]string{
		"bell in a section": "A\x07,1,1,0,0,",
		"newline in a row":  "A,\"1\n2\",1,0,0,",
		"escape in a seat":  "A,1,\x1b[31m,0,0,",
		"long label":        "A,1," + strings.Repeat("9", 33) + ",0,0,",
	} {
		body := product("csv-"+strings.ReplaceAll(name, " ", "-"), 1, nil)
		delete(body, "layout")
		body["seatMap"] = "section,row,seat,x,y,price_level\n" + strings.NewReplacer("\\x07", "\x07", "\\x1b", "\x1b").Replace(line) + "\n"
		r := b.do(t, http.MethodPost, "/v1/products", key, body)
		requireProblem(t, r, 422, "INVALID_LAYOUT")
		require.Less(t, len(r.raw), 4096, "%s: the answer does not echo the input", name)
	}

	// A big plan (the cap itself is TestSeatMapCaps's: 200,000 seats under
	// -race outlast a request's timeout here), served gzipped from one
	// rendering.
	id := b.createProduct(t, key, product("big", 20_000, map[string]any{"sections": []any{
		map[string]any{"name": "S", "rows": rows(100, 100)}, map[string]any{"name": "T", "rows": rows(100, 100)}}}))
	plain := b.do(t, http.MethodGet, "/v1/products/"+id+"/layout", "", nil)
	require.Equal(t, http.StatusOK, plain.status)
	require.Empty(t, plain.header.Get("Content-Encoding"))
	zipped := b.do(t, http.MethodGet, "/v1/products/"+id+"/layout", "", nil, "Accept-Encoding", "br;q=0, gzip")
	require.Equal(t, http.StatusOK, zipped.status)
	require.Equal(t, "gzip", zipped.header.Get("Content-Encoding"))
	require.Equal(t, "application/json", zipped.header.Get("Content-Type"))
	require.Contains(t, zipped.header.Get("Vary"), "Accept-Encoding")
	require.Contains(t, zipped.header.Get("Vary"), "Origin")
	require.Less(t, len(zipped.raw)*10, len(plain.raw), "gzipped to a tenth at most")
	zr, err := gzip.NewReader(bytes.NewReader(zipped.raw))
	require.NoError(t, err)
	unzipped, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, plain.raw, unzipped)
	var view struct {
		Sections []struct{ Rows []struct{ Seats []any } }
	}
	require.NoError(t, json.Unmarshal(unzipped, &view))
	require.Len(t, view.Sections[1].Rows[99].Seats, 100)
	require.Empty(t, b.do(t, http.MethodGet, "/v1/products/"+id+"/layout", "", nil, "Accept-Encoding", "gzip;q=0").header.Get("Content-Encoding"))

	// Availability and ordinary JSON answers are compressed too.
	avail := b.do(t, http.MethodGet, "/v1/products/"+id+"/availability", "", nil, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, avail.status)
	require.Equal(t, "gzip", avail.header.Get("Content-Encoding"))
	listed := b.do(t, http.MethodGet, "/v1/products", key, nil, "Accept-Encoding", "gzip")
	require.Equal(t, "gzip", listed.header.Get("Content-Encoding"))
}
