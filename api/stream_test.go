package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"boxoffice/api"
	"boxoffice/internal/reservation"
	"boxoffice/internal/testfix"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, name string
	data     map[string]any
}

// openStream connects to a product's availability stream over a real
// connection (the stream never ends, so app.Test cannot read it).
func openStream(t *testing.T, base, path string, headers ...string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	events := make(chan sseEvent, 100)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return resp, events
}

func nextEvent(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		require.True(t, ok, "stream ended")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sseEvent{}
}

func TestAvailabilityStream(t *testing.T) {
	t.Parallel()
	b := setup(t, testfix.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = b.server.App().Listener(ln) }()
	t.Cleanup(func() { _ = b.server.App().ShutdownWithTimeout(time.Second) })
	base := "http://" + ln.Addr().String()
	path := "/v1/products/" + b.product.ID.String() + "/availability/stream"

	resp, events := openStream(t, base, path)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	snap := nextEvent(t, events)
	require.Equal(t, "snapshot", snap.name)
	require.EqualValues(t, 100, snap.data["available"])
	require.NotEmpty(t, snap.data["bitmap"])

	b.env.Reserve(t, b.product, "alice", reservation.Params{Numbers: []int32{5, 6}})
	b.env.Drain(t, b.product, 10)
	delta := nextEvent(t, events)
	require.Equal(t, "delta", delta.name)
	require.Equal(t, []any{float64(5), float64(6)}, delta.data["taken"])
	require.EqualValues(t, 98, delta.data["available"])
	v, err := strconv.ParseInt(delta.id, 10, 64)
	require.NoError(t, err)
	require.Equal(t, float64(v), delta.data["version"])

	// Resuming from the snapshot's version replays the delta; the ids
	// carry on.
	_, resumed := openStream(t, base, path, "Last-Event-ID", snap.id)
	again := nextEvent(t, resumed)
	require.Equal(t, "delta", again.name)
	require.Equal(t, delta.id, again.id)

	// Unknown products and drafts are not found.
	r, _ := openStream(t, base, "/v1/products/00000000-0000-0000-0000-000000000000/availability/stream")
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}

// Anonymous callers are bounded: every API call counts against a
// per-client limit (before any credential is looked at), and one client
// holds at most so many streams open; made-up keys answer 401 every time.
func TestAnonymousCallersBounded(t *testing.T) {
	t.Parallel()
	env := testfix.New(t, testfix.Options{})
	p := env.Product(t, testfix.ProductOpts{Capacity: 50})
	srv := api.New(api.Deps{Pool: env.Schema.Pool, Tenants: env.Tenants, Products: env.Products,
		Reservations: env.Service, Logger: env.Logger, StreamsPerClient: 2,
		RateLimits: api.RateLimits{PerIPAny: 5, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("0.0.0.0/32")}}})
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(cancel)
	b := &testBundle{env: env, server: srv}
	path := "/v1/products/" + p.ID.String() + "/availability"
	codes := map[int]int{}
	for range 15 {
		codes[b.do(t, http.MethodGet, path, "", nil, "X-Forwarded-For", "203.0.113.5").status]++
	}
	require.GreaterOrEqual(t, codes[http.StatusTooManyRequests], 5, "five a second, even across a window: %v", codes)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, path, "", nil, "X-Forwarded-For", "203.0.113.6").status,
		"another client has its own allowance")
	for range 3 {
		r := b.do(t, http.MethodGet, "/v1/products", "bo_madeup_0123456789abcdef", nil, "X-Forwarded-For", "203.0.113.7")
		require.Equal(t, http.StatusUnauthorized, r.status, string(r.raw))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() { cancel(); _ = srv.App().ShutdownWithTimeout(time.Second); _ = ln.Close() })
	base := "http://" + ln.Addr().String()
	stream := path + "/stream"
	first, events := openStream(t, base, stream, "X-Forwarded-For", "198.51.100.1")
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, "snapshot", nextEvent(t, events).name)
	second, _ := openStream(t, base, stream, "X-Forwarded-For", "198.51.100.1")
	require.Equal(t, http.StatusOK, second.StatusCode)
	third, _ := openStream(t, base, stream, "X-Forwarded-For", "198.51.100.1")
	require.Equal(t, http.StatusTooManyRequests, third.StatusCode, "a third stream from one client")
	other, _ := openStream(t, base, stream, "X-Forwarded-For", "198.51.100.2")
	require.Equal(t, http.StatusOK, other.StatusCode, "another client streams")
	// Closing one frees its place, once the server's writes to it fail
	// (deltas here; heartbeats every 15 s otherwise).
	second.Body.Close()
	n := int32(0)
	require.Eventually(t, func() bool {
		n++
		env.Reserve(t, p, fmt.Sprint("buyer-", n), reservation.Params{Numbers: []int32{n}})
		env.Drain(t, p, 10)
		r, _ := openStream(t, base, stream, "X-Forwarded-For", "198.51.100.1")
		return r.StatusCode == http.StatusOK
	}, 20*time.Second, 500*time.Millisecond)
}
