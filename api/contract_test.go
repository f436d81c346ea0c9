package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"boxoffice/api"
)

// The API document is the contract: every response an API test receives
// is checked against it with kin-openapi — its status must be declared
// for the operation, its headers and body must match what is declared.
// A response the document does not describe fails the test that got it.

// contracts holds each server's contract; parsed holds each distinct
// document parsed once (most servers serve the same one).
var contracts, parsed sync.Map // *api.Server → *contract; document's SHA-256 → *contract

type contract struct {
	once   sync.Once
	router routers.Router
	err    error
}

func init() {
	// Downloads are checked for their type; their bytes are not parsed.
	for _, ct := range []string{"text/csv", "text/calendar", "application/pdf", "image/svg+xml", "text/event-stream"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

func contractOf(srv *api.Server) *contract {
	c, _ := contracts.LoadOrStore(srv, &contract{})
	ct := c.(*contract)
	ct.once.Do(func() {
		resp, err := srv.App().Test(httptest.NewRequest(http.MethodGet, "/openapi.json", nil), 10_000)
		if err != nil {
			ct.err = err
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			ct.err = err
			return
		}
		sum := sha256.Sum256(raw)
		p, _ := parsed.LoadOrStore(string(sum[:]), &contract{})
		doc := p.(*contract)
		doc.once.Do(func() {
			d, err := openapi3.NewLoader().LoadFromData(raw)
			if err != nil {
				doc.err = err
				return
			}
			doc.router, doc.err = legacy.NewRouter(d)
		})
		ct.router, ct.err = doc.router, doc.err
	})
	return ct
}

// requireDeclared fails t when the response to req is not what the
// document declares for the operation.
func requireDeclared(t require.TestingT, srv *api.Server, req *http.Request, status int, header http.Header, body []byte) {
	if !strings.HasPrefix(req.URL.Path, "/v1/") || req.Method == http.MethodOptions {
		return // pages, health, the document itself and CORS preflights are not operations
	}
	c := contractOf(srv)
	require.NoError(t, c.err, "load the API document")
	// The route is found by method and path alone (a query the server
	// refused, with a NUL in it say, must not hide the operation).
	bare := req.Clone(context.Background())
	bare.URL.RawQuery = ""
	head := req.Method == http.MethodHead
	if head {
		bare.Method = http.MethodGet // HEAD is every GET without its body
	}
	route, params, err := c.router.FindRoute(bare)
	if err != nil && slices.Contains([]int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed}, status) {
		return // no such operation, and the server says so (or refused the request before looking)
	}
	require.NoError(t, err, "%s %s answered %d and is not in the API document", req.Method, req.URL.Path, status)
	if header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		body, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: bare, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head},
	})
	require.NoError(t, err, "%s %s answered %d, not as the API document declares: %s", req.Method, req.URL.Path, status, body)
}
