package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"boxoffice/internal/db"
)

// RateLimits caps the on-sale's hottest calls — joining a queue, polling it,
// reserving — per client IP and per buyer, per second. Zero turns a limit
// off.
type RateLimits struct {
	PerIP    int
	PerBuyer int
	// PerIPAny caps every API operation per client and second, before
	// any credential is looked at.
	PerIPAny int
	// LoginPerIP caps the passwordless-login calls (asking for a code and
	// verifying one) per client IP and minute.
	LoginPerIP int
	// TrustedProxies are the load balancers (addresses or CIDR prefixes)
	// whose X-Forwarded-For is believed. Behind one, every shopper has its
	// address; the client is the right-most untrusted address of the header.
	TrustedProxies []netip.Prefix
}

// limitedOps are the rate-limited operations. Limits are applied to
// operations, after routing: matching paths beforehand missed upper-case
// paths and trailing slashes, which Fiber routes all the same.
var limitedOps = map[string]bool{"join-queue": true, "poll-queue": true, "create-reservation": true}

// tooMany is the problem of a reached limit.
func tooMany() *Problem {
	p := problem(http.StatusTooManyRequests, "RATE_LIMITED", "too many requests; retry after a second")
	p.Headers = http.Header{"Retry-After": {"1"}}
	return p
}

// limits are a server's rate-limit windows: huma's middlewares and the fast
// create path (fastCreate) count into the same ones.
type limits struct {
	any, ip, buyer *fixedWindow
}

func newLimits(l RateLimits) *limits {
	return &limits{
		any:   &fixedWindow{max: l.PerIPAny, counts: map[string]int{}},
		ip:    &fixedWindow{max: l.PerIP, counts: map[string]int{}},
		buyer: &fixedWindow{max: l.PerBuyer, counts: map[string]int{}},
	}
}

// The keys each window counts a client by.
func anyKey(client string) string { return clientNetwork(client) }
func ipKey(client string) string  { return "ip:" + clientNetwork(client) }
func buyerKey(who principal) string {
	var buf [64]byte
	b := append(buf[:0], "b:"...)
	b = db.AppendID(b, who.TenantID)
	return string(append(append(b, ':'), who.BuyerID...))
}

// limit is a huma middleware counting the limited operations' calls in w
// per key; key names who is calling ("" skips the limit).
func limit(w *fixedWindow, key func(huma.Context) string) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		if w.max <= 0 || op == nil || !limitedOps[op.OperationID] {
			next(ctx)
			return
		}
		if k := key(ctx); k != "" && !w.allow(k, time.Now()) {
			_ = writeProblem(ctx, tooMany())
			return
		}
		next(ctx)
	}
}

// loginOps are the sign-in operations — passwordless buyer login and the
// console's key exchange: a guessing game for anyone who can call them
// freely, so each IP gets LoginPerIP calls of them a minute (per identifier
// the codes themselves are limited too).
var loginOps = map[string]bool{"store-login": true, "store-login-challenge": true, "store-login-verify": true, "console-sign-in": true}

// loginLimit caps the login operations per client IP and minute.
func (s *Server) loginLimit(l RateLimits) func(huma.Context, func(huma.Context)) {
	w := &fixedWindow{max: l.LoginPerIP, window: time.Minute, counts: map[string]int{}}
	return func(ctx huma.Context, next func(huma.Context)) {
		if op := ctx.Operation(); l.LoginPerIP <= 0 || op == nil || !loginOps[op.OperationID] {
			next(ctx)
			return
		}
		if !w.allow(clientNetwork(clientOf(ctx.Context())), time.Now()) {
			p := problem(http.StatusTooManyRequests, "RATE_LIMITED", "too many login attempts from this address; retry in a minute")
			p.Headers = http.Header{"Retry-After": {"60"}}
			_ = writeProblem(ctx, p)
			return
		}
		next(ctx)
	}
}

// anyLimit caps every API operation per client and second: nothing an
// anonymous client calls (availability, plans, made-up credentials) is
// free of a bound. It runs before authentication.
func (s *Server) anyLimit(ctx huma.Context, next func(huma.Context)) {
	if !s.limits.any.allow(anyKey(clientOf(ctx.Context())), time.Now()) {
		_ = writeProblem(ctx, tooMany())
		return
	}
	next(ctx)
}

// perClient counts what each client holds open (event streams).
type perClient struct {
	mu   sync.Mutex
	max  int
	open map[string]int
}

// acquire takes one for client; false when it already holds max.
func (p *perClient) acquire(client string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.max > 0 && p.open[client] >= p.max {
		return false
	}
	p.open[client]++
	return true
}

func (p *perClient) release(client string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[client]--; p.open[client] <= 0 {
		delete(p.open, client)
	}
}

// tooManyStreams is the problem of a client at its stream cap.
func tooManyStreams() *Problem {
	p := problem(http.StatusTooManyRequests, "TOO_MANY_STREAMS", "this client holds as many open streams as it may; close one")
	p.Headers = http.Header{"Retry-After": {"5"}}
	return p
}

// ipLimit runs before authentication: a flood is turned away before any
// credential is looked at.
func (s *Server) ipLimit() func(huma.Context, func(huma.Context)) {
	return limit(s.limits.ip, func(ctx huma.Context) string { return ipKey(clientOf(ctx.Context())) })
}

// buyerLimit runs after authentication, so that its key is the verified
// tenant and buyer — not a header a caller can vary with case or spaces. A
// queue poll carries no buyer credential; the entry its signed queue token
// names is the key, so that no spelling of a token counts apart.
func (s *Server) buyerLimit() func(huma.Context, func(huma.Context)) {
	return limit(s.limits.buyer, func(ctx huma.Context) string {
		if who := caller(ctx.Context()); who.BuyerID != "" {
			return buyerKey(who)
		}
		token := ctx.Param("token")
		if s.WaitingRoom != nil {
			if c, err := s.WaitingRoom.Tokens().ParseQueue(token); err == nil {
				return "q:" + c.EntryID.String()
			}
		}
		sum := sha256.Sum256([]byte(token))
		return "q:" + hex.EncodeToString(sum[:12])
	})
}

// clientNetwork is what limits count a client by: its IPv4 address, or
// the /64 of its IPv6 address (one subscriber's share: a single host can
// take a whole /64 and vary the rest at will).
func clientNetwork(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Unmap().Is4() {
		return ip
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}

type clientKey struct{}

// clientOf is the calling client's address (see clientIP), as the API's
// first middleware found it.
func clientOf(ctx context.Context) string {
	ip, _ := ctx.Value(clientKey{}).(string)
	return ip
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

// fixedWindow counts calls per key in fixed windows (a second unless
// window says otherwise). Its memory is the keys of one window.
type fixedWindow struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	start  time.Time
	counts map[string]int
}

// allow counts a call of key; false when key has had max calls in this
// window. A max of zero or less is no limit.
func (f *fixedWindow) allow(key string, now time.Time) bool {
	if f.max <= 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.start) >= max(f.window, time.Second) {
		f.start = now
		clear(f.counts)
	}
	f.counts[key]++
	return f.counts[key] <= f.max
}
