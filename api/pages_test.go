package api_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/inventory"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

func TestAvailabilityPages(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	// Over 1,000,000 numbers: the availability lists pages instead of the
	// whole bitmap.
	const capacity = 1_200_000
	p := b.env.Product(t, testfix.ProductOpts{Capacity: capacity})
	r := b.env.Reserve(t, p, "ana", reservation.Params{Numbers: testfix.Nums(inventory.PageBits+1, capacity)})
	b.env.Drain(t, p, 10)
	require.Equal(t, reservation.StatusHeld, b.env.Get(t, p, r.ID).Status)

	base := "/v1/products/" + p.ID.String() + "/availability"
	a := b.do(t, http.MethodGet, base, "", nil)
	require.Equal(t, http.StatusOK, a.status, string(a.raw))
	require.NotContains(t, a.body, "bitmap")
	require.EqualValues(t, inventory.PageBits, a.body["pageSize"])
	pages := a.body["pages"].([]any)
	require.Len(t, pages, 74)
	second := pages[1].(map[string]any)
	require.EqualValues(t, 1, second["taken"])
	require.EqualValues(t, inventory.PageBits+1, second["first"])
	require.Equal(t, base+"/pages/1", second["href"])
	last := pages[73].(map[string]any)
	require.EqualValues(t, capacity, last["last"])
	require.EqualValues(t, 1, last["taken"])

	page := func(i int, etag string) response {
		return b.do(t, http.MethodGet, fmt.Sprintf("%s/pages/%d", base, i), "", nil, "If-None-Match", etag)
	}
	one := page(1, "")
	require.Equal(t, http.StatusOK, one.status, string(one.raw))
	bits, err := base64.StdEncoding.DecodeString(one.body["bitmap"].(string))
	require.NoError(t, err)
	require.Len(t, bits, inventory.PageBytes)
	require.Equal(t, byte(1), bits[0], "its first number is bit 0 of byte 0")
	require.Equal(t, "public, max-age=1", one.header.Get("Cache-Control"))
	oneTag := one.header.Get("ETag")
	require.Equal(t, http.StatusNotModified, page(1, oneTag).status)
	zero := page(0, "")
	zeroTag := zero.header.Get("ETag")
	tail := page(73, "")
	require.EqualValues(t, capacity-73*inventory.PageBits, tail.body["last"].(float64)-tail.body["first"].(float64)+1)

	// A change on page 1 moves its ETag; page 0 is still the client's copy.
	b.env.Reserve(t, p, "ben", reservation.Params{Numbers: testfix.Nums(inventory.PageBits + 2)})
	b.env.Drain(t, p, 10)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, http.StatusOK, b.do(c, http.MethodGet, base+"/pages/1", "", nil, "If-None-Match", oneTag).status)
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, http.StatusNotModified, page(0, zeroTag).status)

	requireProblem(t, page(74, ""), http.StatusNotFound, "NOT_FOUND")
	requireProblem(t, b.do(t, http.MethodGet, base+"/pages/-1", "", nil), http.StatusUnprocessableEntity, "VALIDATION_FAILED")

	// Up to 1,000,000 numbers the bitmap comes whole, with its one page.
	small := b.do(t, http.MethodGet, "/v1/products/"+b.product.ID.String()+"/availability", "", nil)
	require.NotEmpty(t, small.body["bitmap"])
	require.Len(t, small.body["pages"], 1)
}
