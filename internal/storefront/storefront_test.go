package storefront_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"boxoffice/internal/storefront"
	"boxoffice/internal/tenant"
	"boxoffice/web"
)

// Every language has every string: one file per language, the same keys.
func TestStringsComplete(t *testing.T) {
	files, err := fs.Glob(web.Store, "store/strings/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 2)
	var want []string
	for _, f := range files {
		b, err := fs.ReadFile(web.Store, f)
		require.NoError(t, err)
		var m map[string]string
		require.NoError(t, json.Unmarshal(b, &m), f)
		keys := slices.Sorted(maps.Keys(m))
		if want == nil {
			want = keys
		}
		require.Equal(t, want, keys, "%s has other keys than %s", f, files[0])
		for k, v := range m {
			require.NotEmpty(t, v, "%s: %s", f, k)
		}
	}
}

// A build embeds the tenant's name, theme and language, and its assets carry
// content hashes.
func TestBuild(t *testing.T) {
	site, err := storefront.Build(storefront.Source{Profile: tenant.Profile{Slug: "arena", Name: "Arena <Norte>",
		Theme: map[string]string{"primary": "#123456", "language": "pt", "font": "serif"}}, APIBase: "https://api.example"})
	require.NoError(t, err)
	page := string(site["index.html"].Body)
	require.Contains(t, page, `<html lang="pt"`)
	require.Contains(t, page, "<title>Arena &lt;Norte&gt;</title>", "the name is escaped")
	require.Contains(t, page, "--primary:#123456")
	require.Contains(t, page, "Georgia")
	require.Contains(t, page, "Saltar para o conteúdo")
	require.Contains(t, page, "https://api.example")
	require.Contains(t, page, `<link rel="preconnect" href="https://api.example" crossorigin>`, "the API's connection opens with the page")
	var assets int
	for name, f := range site {
		if strings.HasPrefix(name, "assets/") {
			assets++
			require.Regexp(t, `^assets/(app|style)\.[0-9a-f]{12}\.(js|css)$`, name)
			require.Equal(t, "public, max-age=31536000, immutable", f.CacheControl)
			require.Contains(t, page, name)
		}
	}
	require.Equal(t, 2, assets)
	require.Equal(t, "public, max-age=60", site["index.html"].CacheControl)
}
