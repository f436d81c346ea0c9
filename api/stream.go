package api

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"boxoffice/internal/live"
)

// heartbeat keeps idle streams (and the proxies between) open.
const heartbeat = 15 * time.Second

// streamWriteTimeout bounds one write to a stream's connection.
const streamWriteTimeout = 30 * time.Second

// availabilityStream serves GET /v1/products/{id}/availability/stream as
// server-sent events: a snapshot, then a delta whenever numbers are taken or
// freed (at most one a second). It is a plain Fiber handler because huma's
// Fiber adapter buffers responses; the operation is described in the
// OpenAPI document all the same (streamOperation).
func (s *Server) availabilityStream(c *fiber.Ctx) error {
	fail := func(err error) error { return fiberProblem(c, err) }
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return fail(problem(http.StatusNotFound, "NOT_FOUND", "no such product"))
	}
	ctx := c.UserContext()
	if _, err := s.publicProduct(ctx, id); err != nil {
		return fail(err)
	}
	last := int64(-1)
	if v := c.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			last = n
		}
	}
	client := strings.Clone(clientNetwork(clientIP(c, s.RateLimits.TrustedProxies)))
	if !s.streams.acquire(client) {
		return fail(tooManyStreams())
	}
	sub, err := s.live.Subscribe(ctx, id, last)
	if err != nil {
		s.streams.release(client)
	}
	if errors.Is(err, live.ErrFull) {
		pr := problem(http.StatusServiceUnavailable, "TOO_MANY_STREAMS", "this server streams to as many shoppers as it can; retry shortly")
		pr.Headers = http.Header{"Retry-After": {"5"}}
		return fail(pr)
	}
	if err != nil {
		return fail(s.toProblem(err))
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // proxies must not hold events back
	stopping := s.stopping
	// fasthttp gives a response one write deadline (the server's
	// WriteTimeout) for all of it; a stream lives longer, so each write
	// gets its own, which also ends a stream to a client that stopped
	// reading.
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.streams.release(client)
		defer sub.Close()
		flush := func() bool {
			_ = conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			return w.Flush() == nil
		}
		// A dropped or ended stream is reopened by the browser after this
		// long, with Last-Event-ID.
		if _, err := w.WriteString("retry: 2000\n\n"); err != nil || !flush() {
			return
		}
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					return // too slow: dropped; the browser reconnects
				}
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Version, ev.Name, ev.Data)
				if !flush() {
					return
				}
				s.Metrics.LiveLag(time.Since(ev.Read))
			case <-tick.C:
				if _, err := w.WriteString(": ping\n\n"); err != nil || !flush() {
					return
				}
			case <-stopping:
				return
			}
		}
	})
	return nil
}

// streamOperation describes the stream in the OpenAPI document.
func streamOperation() *huma.Operation {
	return &huma.Operation{
		OperationID: "stream-availability",
		Method:      http.MethodGet,
		Path:        "/v1/products/{id}/availability/stream",
		Summary:     "Live availability as server-sent events: a snapshot, then deltas",
		Description: "Public. `event: snapshot` carries the version, counters and bitmap (as GET /availability); " +
			"`event: delta` carries {version, taken, freed, available, held, sold}, at most one a second. " +
			"Each event's id is its version: reconnect with Last-Event-ID to resume from the recent deltas " +
			"(or get a fresh snapshot when the gap is too old). Comments every 15 s keep the stream open. " +
			"A subscriber that falls behind is disconnected, not buffered; it reconnects and resumes.",
		Tags: []string{"Products"},
		Parameters: []*huma.Param{
			{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: "string", Format: "uuid"}},
			{Name: "Last-Event-ID", In: "header", Schema: &huma.Schema{Type: "integer"}},
		},
		Responses: map[string]*huma.Response{
			"200": {Description: "The event stream", Content: map[string]*huma.MediaType{"text/event-stream": {}}},
			"404": {Description: "No such product"},
			"503": {Description: "Too many streams on this server"},
		},
	}
}
