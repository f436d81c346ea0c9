// Package web holds the pages BoxOffice serves itself — HTML, ES modules and
// CSS written here and embedded in the binary, so that nothing is loaded
// from another host.
package web

import "embed"

// Docs is the API reference page: it renders /openapi.json in the browser.
//
//go:embed docs
var Docs embed.FS
