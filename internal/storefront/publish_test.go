package storefront_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/testfix"
)

// call makes one API request as the tenant's admin, which must succeed.
func (w *world) call(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	status, raw := w.try(t, method, path, body)
	require.Less(t, status, 300, raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &out))
	return out
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header
}

// A tenant admin uploads a logo straight to the bucket and changes the
// store's name and theme: a work process rebuilds and republishes the store.
func TestThemeChangeRepublishes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slug := w.env.Tenant.Slug
	store := w.publish(t, slug)

	up := w.call(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/png"})
	logo := tinyPNG(t)
	require.Equal(t, http.StatusOK, upload(t, up["uploadUrl"].(string), "image/png", logo), "the upload goes straight to the bucket")
	logoURL := up["logoUrl"].(string)
	require.Regexp(t, `^logo/[0-9a-f-]{36}\.png$`, logoURL)

	w.call(t, http.MethodPut, "/v1/store", map[string]any{"name": "Harbour Hall",
		"theme": map[string]string{"primary": "#0a7d6b", "logoUrl": logoURL, "font": "humanist"}})
	require.Eventually(t, func() bool {
		_, page, _ := get(t, store)
		return strings.Contains(page, "<title>Harbour Hall</title>") && strings.Contains(page, `src="`+logoURL+`"`) &&
			strings.Contains(page, "--primary:#0a7d6b")
	}, 20*time.Second, 100*time.Millisecond, "the store is rebuilt by the job")
	status, body, h := get(t, store+logoURL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, string(logo), body)
	require.Equal(t, "image/png", h.Get("Content-Type"))
	require.Equal(t, "sandbox; default-src 'none'", h.Get("Content-Security-Policy"), "an upload never runs as a page")
}

// A logo is an image of an allowed type and size, checked when the theme
// names it: SVG (a document that can run script) is not taken, a file that
// is not what its name says or is over 256 KiB is refused and deleted, and
// a tenant gets at most 20 upload URLs an hour.
func TestLogoUploadsBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := w.publish(t, w.env.Tenant.Slug)
	status, _ := w.try(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/svg+xml"})
	require.Equal(t, http.StatusUnprocessableEntity, status)

	refused := map[string][]byte{
		"html named png": []byte("<!doctype html><script>alert(document.cookie)</script>"),
		"too big":        append(tinyPNG(t), bytes.Repeat([]byte{0}, 300<<10)...),
	}
	for name, file := range refused {
		up := w.call(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/png"})
		require.Equal(t, http.StatusOK, upload(t, up["uploadUrl"].(string), "image/png", file), name)
		status, raw := w.try(t, http.MethodPut, "/v1/store", map[string]any{"name": "Hall",
			"theme": map[string]string{"logoUrl": up["logoUrl"].(string)}})
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", name, raw)
		require.Contains(t, raw, "INVALID_STORE")
		gone, _, _ := get(t, store+up["logoUrl"].(string))
		require.Equal(t, http.StatusNotFound, gone, "%s: the refused upload is deleted", name)
	}
	never, raw := w.try(t, http.MethodPut, "/v1/store", map[string]any{"name": "Hall",
		"theme": map[string]string{"logoUrl": "logo/00000000-0000-0000-0000-000000000000.png"}})
	require.Equal(t, http.StatusUnprocessableEntity, never, raw)

	for range 20 - len(refused) {
		w.call(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/webp"})
	}
	status, raw = w.try(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/webp"})
	require.Equal(t, http.StatusTooManyRequests, status, raw)
}

// An event's picture is uploaded to the store's own files, like a logo, and
// shown on the event's page; a file that is not a picture, or over 2 MiB,
// is refused and deleted.
func TestEventPictureUpload(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := w.publish(t, w.env.Tenant.Slug)
	p := w.env.Product(t, testfix.ProductOpts{Capacity: 10})

	up := w.call(t, http.MethodPost, "/v1/store/images", map[string]any{"contentType": "image/png"})
	picture := up["imageUrl"].(string)
	require.Regexp(t, `^images/[0-9a-f-]{36}\.png$`, picture)
	require.Equal(t, http.StatusOK, upload(t, up["uploadUrl"].(string), "image/png", tinyPNG(t)))
	w.call(t, http.MethodPatch, "/v1/events/"+p.EventID.String(), map[string]any{"imageUrl": picture})
	status, body, h := get(t, store+picture)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, string(tinyPNG(t)), body)
	require.Equal(t, "sandbox; default-src 'none'", h.Get("Content-Security-Policy"), "an upload never runs as a page")

	b := browsertest.Browser(t)
	browsertest.Do(t, b, chromedp.Navigate(store+"#/p/"+p.ID.String()),
		browsertest.WaitJS(`(() => { const i = document.querySelector('.event-hero img'); return !!i && i.complete && i.naturalWidth === 4 })()`))

	for name, file := range map[string][]byte{
		"html named png": []byte("<!doctype html><script>alert(document.cookie)</script>"),
		"too big":        append(tinyPNG(t), bytes.Repeat([]byte{0}, 2<<20)...),
	} {
		up := w.call(t, http.MethodPost, "/v1/store/images", map[string]any{"contentType": "image/png"})
		require.Equal(t, http.StatusOK, upload(t, up["uploadUrl"].(string), "image/png", file), name)
		status, raw := w.try(t, http.MethodPatch, "/v1/events/"+p.EventID.String(), map[string]any{"imageUrl": up["imageUrl"]})
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", name, raw)
		require.Contains(t, raw, "INVALID_IMAGE")
		gone, _, _ := get(t, store+up["imageUrl"].(string))
		require.Equal(t, http.StatusNotFound, gone, "%s: the refused upload is deleted", name)
	}
	status, raw := w.try(t, http.MethodPatch, "/v1/events/"+p.EventID.String(), map[string]any{"imageUrl": "images/../logo/x.png"})
	require.Equal(t, http.StatusUnprocessableEntity, status, raw)
}

// try makes one API request as the tenant's admin and returns the status
// and body, whatever they are.
func (w *world) try(t *testing.T, method, path string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, w.base+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.env.Tenant.APIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// upload PUTs body to a presigned URL.
func upload(t *testing.T, url, contentType string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// tinyPNG is a 4×4 logo.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = 0x7f
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}
