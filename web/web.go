// Package web holds the pages BoxOffice serves itself — HTML, ES modules and
// CSS written here and embedded in the binary, so that nothing is loaded
// from another host.
package web

import "embed"

// Docs is the API reference page: it renders /openapi.json in the browser.
//
//go:embed docs
var Docs embed.FS

// Store is a tenant's store: the page template, its ES module, styles and
// translated strings, which internal/storefront renders into a static site.
//
//go:embed store
var Store embed.FS

// Console is the operators' and tenant admins' console, served at
// /console/: it calls the API with a session cookie.
//
//go:embed console
var Console embed.FS
