package api

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"boxoffice/internal/db"
)

// requestIDHeader names a request across the caller's logs and ours: one
// the caller sends is kept (when it is a plain token), else one is made;
// either way the response carries it.
const requestIDHeader = "X-Request-Id"

// requestInfo is what the access log learns while the request runs: the
// tenant, once authentication names it.
type requestInfo struct{ tenant uuid.UUID }

type requestInfoKey struct{}

// noteTenant records the tenant a request acts for, for its access log line.
func noteTenant(ctx context.Context, tenantID uuid.UUID) {
	if ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		ri.tenant = tenantID
	}
}

// requestID is the caller's X-Request-Id when it is 1 to 128 letters,
// digits and ._:- (anything else could forge log lines), or a new one.
func requestID(sent string) string {
	if len(sent) == 0 || len(sent) > 128 {
		return db.NewID().String()
	}
	if strings.IndexFunc(sent, notTokenRune) >= 0 {
		return db.NewID().String()
	}
	return sent
}

func notTokenRune(r rune) bool {
	letterOrDigit := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	return !letterOrDigit && !strings.ContainsRune("._:-", r)
}

// observe measures every request for the metrics and writes its access log
// line: method, route template, status, duration, bytes, request id, trace
// id, tenant.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	id := requestID(c.Get(requestIDHeader))
	c.Set(requestIDHeader, id)
	ri := &requestInfo{}
	c.SetUserContext(context.WithValue(c.UserContext(), requestInfoKey{}, ri))
	err := c.Next()
	status := c.Response().StatusCode()
	if fe := (*fiber.Error)(nil); errors.As(err, &fe) {
		status = fe.Code
	}
	route := c.Route().Path
	if route == "/" && c.Path() != "/" {
		route = "unmatched"
	}
	elapsed := time.Since(start)
	// Fiber's strings point into reused buffers: copy before keeping them.
	method := strings.Clone(c.Method())
	s.Metrics.HTTPRequest(route, method, strconv.Itoa(status), elapsed)
	if s.AccessLog == nil {
		return err
	}
	// A streamed body (server-sent events) is not counted: reading its
	// size would wait for the stream's end.
	bytes := 0
	if !c.Response().IsBodyStream() {
		bytes = len(c.Response().Body())
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("method", method), slog.String("route", route), slog.Int("status", status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000), slog.Int("bytes", bytes),
		slog.String("request_id", id))
	if sc := trace.SpanContextFromContext(c.UserContext()); sc.HasTraceID() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
	}
	if ri.tenant != uuid.Nil {
		attrs = append(attrs, slog.String("tenant", ri.tenant.String()))
	}
	s.AccessLog.LogAttrs(c.UserContext(), slog.LevelInfo, "request", attrs...)
	return err
}
