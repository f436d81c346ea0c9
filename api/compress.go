package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/compress"
)

// compressResponses gzips (or brotli-compresses) what the API answers when
// the client accepts it: JSON, problems, the store's assets. Bodies below a
// couple of hundred bytes and ones already encoded (see encoded) are left
// as they are, and so are event streams, whose events must leave as they
// happen.
func compressResponses() fiber.Handler {
	inner := compress.New(compress.Config{Level: compress.LevelBestSpeed, Next: func(c *fiber.Ctx) bool {
		return strings.HasSuffix(c.Path(), "/stream")
	}})
	return func(c *fiber.Ctx) error {
		// Every answer varies by encoding, also an uncompressed one: a
		// cache must not hand a gzipped copy to a client that cannot read it.
		c.Vary(fiber.HeaderAcceptEncoding)
		return inner(c)
	}
}

// encoded is a large JSON body rendered once and kept both plain and
// gzipped, so that serving it again costs neither encoding nor compressing.
type encoded struct {
	plain, gzipped []byte
}

// encode renders v at a gzip level: the default for what is encoded once
// (a plan version), a fast one for what is encoded every second.
func encode(v any, level int) (*encoded, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, level)
	if _, err := zw.Write(plain); err != nil {
		return nil, fmt.Errorf("compress response: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress response: %w", err)
	}
	return &encoded{plain: plain, gzipped: buf.Bytes()}, nil
}

func (e *encoded) size() int { return len(e.plain) + len(e.gzipped) }

// encodedOutput answers with an encoded body (or 304 when the caller has
// this version).
type encodedOutput struct {
	ETag         string `header:"ETag"`
	CacheControl string `header:"Cache-Control"`
	Body         func(huma.Context)
}

// reply answers with e, gzipped when the request accepts gzip.
func (e *encoded) reply(etag, cacheControl, ifNoneMatch, acceptEncoding string) *encodedOutput {
	return &encodedOutput{ETag: etag, CacheControl: cacheControl, Body: func(ctx huma.Context) {
		if ifNoneMatch == etag {
			ctx.SetStatus(http.StatusNotModified)
			return
		}
		ctx.SetHeader("Content-Type", "application/json")
		body := e.plain
		if acceptsGzip(acceptEncoding) {
			ctx.SetHeader("Content-Encoding", "gzip")
			body = e.gzipped
		}
		ctx.SetStatus(http.StatusOK)
		_, _ = ctx.BodyWriter().Write(body)
	}}
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed and not
// refused with q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "x-gzip" && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// encodedResponse documents an operation answering with encoded JSON of
// type T: huma cannot see the type through the body function.
func encodedResponse[T any](s *Server, description string) map[string]*huma.Response {
	schema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[T](), true, "")
	return map[string]*huma.Response{"200": {Description: description,
		Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}}
}
