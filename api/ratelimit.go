package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
)

// RateLimits caps the on-sale's hottest calls — joining a queue, polling it,
// reserving — per client IP and per buyer, per second. Zero turns a limit
// off.
type RateLimits struct {
	PerIP    int
	PerBuyer int
	// TrustedProxies are the load balancers (addresses or CIDR prefixes)
	// whose X-Forwarded-For is believed. Behind one, every shopper has its
	// address; the client is the right-most untrusted address of the header.
	TrustedProxies []netip.Prefix
}

// limitedOps are the rate-limited operations.
var limitedOps = map[string]bool{"join-queue": true, "poll-queue": true, "create-reservation": true}

// limitedPath reports whether a request is one of the rate-limited calls,
// before routing. Fiber routes case-insensitively and ignores a trailing
// slash, so the path is compared the same way.
func limitedPath(method, path string) bool {
	p := strings.TrimRight(strings.ToLower(path), "/")
	switch {
	case strings.HasPrefix(p, "/v1/queue/"):
		return method == http.MethodGet
	case strings.HasPrefix(p, "/v1/products/") && (strings.HasSuffix(p, "/queue") || strings.HasSuffix(p, "/reservations")):
		return method == http.MethodPost
	}
	return false
}

// tooMany is the problem of a reached limit.
func tooMany() *Problem {
	p := problem(http.StatusTooManyRequests, "RATE_LIMITED", "too many requests; retry after a second")
	p.Headers = http.Header{"Retry-After": {"1"}}
	return p
}

func (s *Server) useIPRateLimit(l RateLimits) {
	if l.PerIP <= 0 {
		return
	}
	s.app.Use(limiter.New(limiter.Config{
		Next: func(c *fiber.Ctx) bool { return !limitedPath(c.Method(), c.Path()) }, Max: l.PerIP, Expiration: time.Second,
		KeyGenerator: func(c *fiber.Ctx) string { return "ip:" + clientIP(c, l.TrustedProxies) },
		LimitReached: func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderRetryAfter, "1")
			return c.Status(http.StatusTooManyRequests).JSON(tooMany(), "application/problem+json")
		},
	}))
}

// clientIP is the peer's address, or — when the peer is a trusted proxy —
// the right-most address in X-Forwarded-For that is not a trusted proxy
// (left of it, anything may be the client's own invention).
func clientIP(c *fiber.Ctx, trusted []netip.Prefix) string {
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok {
		return c.Context().RemoteIP().String()
	}
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := strings.Split(c.Get(fiber.HeaderXForwardedFor), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a garbled header: stop at the last proxy we trust
		}
		if addr = addr.Unmap(); !isTrusted(addr, trusted) {
			return addr.String()
		}
		peer = addr
	}
	return peer.String()
}

func isTrusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// buyerLimit is the per-buyer limit, applied after authentication so that
// its key is the verified tenant and buyer — not a header a caller can
// vary with case or spaces. A queue poll carries no buyer credential; its
// signed queue token (one per entry) is the key.
func (s *Server) buyerLimit(max int) func(huma.Context, func(huma.Context)) {
	w := &fixedWindow{max: max, counts: map[string]int{}}
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		if max <= 0 || op == nil || !limitedOps[op.OperationID] {
			next(ctx)
			return
		}
		var key string
		if who := caller(ctx.Context()); who.BuyerID != "" {
			key = "b:" + who.TenantID.String() + ":" + who.BuyerID
		} else {
			sum := sha256.Sum256([]byte(ctx.Param("token")))
			key = "q:" + hex.EncodeToString(sum[:12])
		}
		if !w.allow(key, time.Now()) {
			s.writeProblem(ctx, tooMany())
			return
		}
		next(ctx)
	}
}

// fixedWindow counts calls per key in one-second windows. Its memory is
// the keys of one second.
type fixedWindow struct {
	mu     sync.Mutex
	max    int
	start  time.Time
	counts map[string]int
}

func (f *fixedWindow) allow(key string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.start) >= time.Second {
		f.start = now
		clear(f.counts)
	}
	f.counts[key]++
	return f.counts[key] <= f.max
}
