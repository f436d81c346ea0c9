// Package storefront renders a tenant's store as a static site: one HTML
// page with the tenant's theme and identifiers embedded, its ES module and
// styles under content-hashed names, and nothing loaded from another host.
// The page is a single-page app driven by the public store API: home,
// product with its seat map, waiting room, reserving, checkout, order,
// login. Built once per change, it can be served from a bucket and a CDN
// with no server work per request.
package storefront

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"path"
	"strings"

	"boxoffice/internal/tenant"
	"boxoffice/web"
)

// File is one file of a built store.
type File struct {
	Body         []byte
	ContentType  string
	CacheControl string
}

// Site is a built store: paths (relative to the store's root) to files.
type Site map[string]File

// Source is what a store is built from.
type Source struct {
	Profile tenant.Profile
	// APIBase is where the API answers, without a trailing slash; empty
	// means the store's own origin (development serves both together).
	APIBase string
	// Language picks the strings (default: the theme's language, else "en").
	Language string
	// StripeKey, when set, is the Stripe publishable key: checkout takes
	// cards with Stripe.js from Stripe's own host (the one script from
	// another host a store loads), so card data never touches the store or
	// the API; without it checkout offers the simulator's test methods.
	StripeKey string
}

// fonts are the font stacks a theme may name; anything else is "system".
var fonts = map[string]string{
	"system":   `system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif`,
	"serif":    `Georgia, "Times New Roman", Times, serif`,
	"humanist": `"Gill Sans", "Gill Sans MT", Calibri, "Trebuchet MS", sans-serif`,
	"mono":     `ui-monospace, "SF Mono", Menlo, Consolas, monospace`,
}

// Build renders the store.
func Build(src Source) (Site, error) {
	lang := src.Language
	if lang == "" {
		lang = src.Profile.Theme["language"]
	}
	if lang == "" {
		lang = "en"
	}
	strs, err := fs.ReadFile(web.Store, "store/strings/"+lang+".json")
	if err != nil {
		return nil, fmt.Errorf("store strings %q: %w", lang, err)
	}
	site := Site{}
	assets := map[string]string{} // logical name → hashed name
	for _, name := range []string{"app.js", "style.css"} {
		body, err := fs.ReadFile(web.Store, "store/"+name)
		if err != nil {
			return nil, fmt.Errorf("store asset %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(name)
		hashed := "assets/" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		assets[name] = hashed
		site[hashed] = File{Body: body, ContentType: contentType(ext), CacheControl: cacheControl(hashed)}
	}
	theme := map[string]string{}
	for k, v := range src.Profile.Theme {
		theme[k] = v
	}
	for _, k := range []string{"primary", "accent", "background", "text"} {
		theme[k] = src.Profile.Colour(k)
	}
	font := fonts[theme["font"]]
	if font == "" {
		font = fonts["system"]
	}
	config, err := json.Marshal(map[string]any{
		"slug": src.Profile.Slug, "name": src.Profile.Name, "apiBase": src.APIBase, "lang": lang,
		"strings": json.RawMessage(strs), "logoUrl": theme["logoUrl"], "stripeKey": src.StripeKey,
		"loginUrl": theme["loginUrl"],
	})
	if err != nil {
		return nil, err
	}
	var words map[string]string
	if err := json.Unmarshal(strs, &words); err != nil {
		return nil, fmt.Errorf("store strings %q: %w", lang, err)
	}
	tmpl, err := template.ParseFS(web.Store, "store/index.html")
	if err != nil {
		return nil, fmt.Errorf("store page: %w", err)
	}
	var page bytes.Buffer
	err = tmpl.Execute(&page, map[string]any{
		"Name": src.Profile.Name, "Lang": lang, "Logo": theme["logoUrl"],
		// Colours are validated #rrggbb by the tenant store; the font is
		// one of ours: safe inside a style element.
		"Style": template.CSS(fmt.Sprintf(":root{--primary:%s;--accent:%s;--bg:%s;--text:%s;--font:%s}",
			theme["primary"], theme["accent"], theme["background"], theme["text"], font)),
		"Config": string(config), "Script": assets["app.js"], "CSS": assets["style.css"],
		"Skip": words["skip"], "NoScript": words["noscript"], "APIOrigin": origin(src.APIBase),
	})
	if err != nil {
		return nil, fmt.Errorf("store page: %w", err)
	}
	site["index.html"] = File{Body: page.Bytes(), ContentType: "text/html; charset=utf-8", CacheControl: cacheControl("index.html")}
	return site, nil
}

// origin is the scheme and host of an absolute URL, or "" (a relative API
// base is the store's own origin: nothing to connect to early).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// cacheControl is how long browsers and CDNs keep a store file: hashed
// assets and uploaded logos for good (each build or upload has new names),
// the page a minute.
func cacheControl(name string) string {
	if strings.HasPrefix(name, "assets/") || strings.HasPrefix(name, "logo/") {
		return "public, max-age=31536000, immutable"
	}
	return "public, max-age=60"
}

func contentType(ext string) string {
	switch ext {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "application/octet-stream"
}
