package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/limiter"
)

// RateLimits caps the on-sale's hottest calls — joining a queue, polling it,
// reserving — per client IP and per buyer credential, per second. Zero
// turns a limit off.
type RateLimits struct {
	PerIP    int
	PerBuyer int
}

// limited reports whether the request is one of the rate-limited calls.
func limited(c *fiber.Ctx) bool {
	p := c.Path()
	switch {
	case strings.HasPrefix(p, "/v1/queue/"):
		return c.Method() == http.MethodGet
	case strings.HasPrefix(p, "/v1/products/") && (strings.HasSuffix(p, "/queue") || strings.HasSuffix(p, "/reservations")):
		return c.Method() == http.MethodPost
	}
	return false
}

func (s *Server) useRateLimits(l RateLimits) {
	reached := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderRetryAfter, "1")
		c.Set(fiber.HeaderContentType, "application/problem+json")
		return c.Status(http.StatusTooManyRequests).JSON(
			problem(http.StatusTooManyRequests, "RATE_LIMITED", "too many requests; retry after a second"), "application/problem+json")
	}
	if l.PerIP > 0 {
		s.app.Use(limiter.New(limiter.Config{
			Next: func(c *fiber.Ctx) bool { return !limited(c) }, Max: l.PerIP, Expiration: time.Second,
			KeyGenerator: func(c *fiber.Ctx) string { return "ip:" + c.IP() }, LimitReached: reached,
		}))
	}
	if l.PerBuyer > 0 {
		s.app.Use(limiter.New(limiter.Config{
			Next: func(c *fiber.Ctx) bool { return !limited(c) }, Max: l.PerBuyer, Expiration: time.Second,
			// The buyer's credential (or, for polls, the queue token in the
			// path) identifies the buyer without parsing it on this path.
			KeyGenerator: func(c *fiber.Ctx) string {
				cred := c.Get(fiber.HeaderAuthorization)
				if cred == "" {
					cred = c.Path()
				}
				sum := sha256.Sum256([]byte(cred))
				return "buyer:" + hex.EncodeToString(sum[:8])
			},
			LimitReached: reached,
		}))
	}
}
