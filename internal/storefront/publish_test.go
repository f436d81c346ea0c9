package storefront_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// call makes one API request as the tenant's admin.
func (w *world) call(t *testing.T, method, path string, body any) map[string]any {
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
	require.Less(t, resp.StatusCode, 300, string(raw))
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
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

	up := w.call(t, http.MethodPost, "/v1/store/logo", map[string]any{"contentType": "image/svg+xml"})
	logo := `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10" fill="#123456"/></svg>`
	req, err := http.NewRequest(http.MethodPut, up["uploadUrl"].(string), strings.NewReader(logo))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/svg+xml")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the upload goes straight to the bucket")
	logoURL := up["logoUrl"].(string)
	require.Regexp(t, `^logo/[0-9a-f-]{36}\.svg$`, logoURL)

	w.call(t, http.MethodPut, "/v1/store", map[string]any{"name": "Harbour Hall",
		"theme": map[string]string{"primary": "#0a7d6b", "logoUrl": logoURL, "font": "humanist"}})
	require.Eventually(t, func() bool {
		_, page, _ := get(t, store)
		return strings.Contains(page, "<title>Harbour Hall</title>") && strings.Contains(page, `src="`+logoURL+`"`) &&
			strings.Contains(page, "--primary:#0a7d6b")
	}, 20*time.Second, 100*time.Millisecond, "the store is rebuilt by the job")
	status, body, h := get(t, store+logoURL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, logo, body)
	require.Equal(t, "image/svg+xml", h.Get("Content-Type"))
}
