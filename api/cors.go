package api

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
)

// CORS lets a tenant's store, served on the tenant's own domains, call the
// API from shoppers' browsers. A response carries Access-Control-Allow-Origin
// only for an origin among the domains of the tenant that owns what it
// returns (the caller's tenant, or the store, product or queue entry it
// names); error responses, which return nothing of a tenant's, are readable
// from any store domain. Preflights carry no credentials and often name no
// tenant (/v1/reservations/{id}), so they succeed for any store domain.
// Credentials travel in the Authorization header, never in cookies: there
// is nothing for a cross-site request to ride on.

// corsMaxAge is how long a browser may reuse a preflight (seconds).
const corsMaxAge = "600"

const (
	corsMethods = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
	// corsHeaders are every request header the store sends
	// (TestCORSHeadersCoverTheStore reads them from its modules).
	corsHeaders = "Authorization, Content-Type, Idempotency-Key, X-Access-Token, X-Queue-Challenge, X-Queue-Solution, " +
		"If-None-Match, Last-Event-ID, Prefer"
	corsExpose = "ETag, Location, Retry-After, Preference-Applied"
)

// domainsTTL bounds how long a new store domain waits for other API
// processes to allow it (this process forgets at once).
const domainsTTL = 10 * time.Second

// storeDomains maps each store domain (host[:port]) to its tenant.
type storeDomains struct {
	mu     sync.Mutex
	byHost map[string]uuid.UUID
	loaded time.Time
}

func (s *Server) forgetDomains() {
	s.domains.mu.Lock()
	s.domains.loaded = time.Time{}
	s.domains.mu.Unlock()
}

// originTenant returns the tenant whose store domain the origin is, or
// devOrigin when it is a local development origin the process allows.
func (s *Server) originTenant(ctx context.Context, origin string) (tenantID uuid.UUID, known bool) {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return uuid.Nil, false
	}
	host := strings.ToLower(u.Host)
	if s.DevOrigins && u.Scheme == "http" {
		if h := u.Hostname(); h == "localhost" || h == "127.0.0.1" {
			return devOrigin, true
		}
	}
	d := &s.domains
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(d.loaded) > domainsTTL {
		byHost, err := s.Tenants.Domains(ctx)
		if err != nil {
			s.Logger.Warn("store domains unavailable", "error", err)
			return uuid.Nil, false
		}
		d.byHost, d.loaded = byHost, time.Now()
	}
	// Stores on the public internet are https; plain http only for a
	// domain registered with its port (a local or staging store).
	if u.Scheme == "http" && u.Port() == "" {
		return uuid.Nil, false
	}
	id, ok := d.byHost[host]
	return id, ok
}

// devOrigin stands for a local development origin: it may read any tenant's
// responses (`boxoffice dev` only).
var devOrigin = uuid.Max

// ownerKey holds, for one request, the tenant that owns what it returns.
type ownerKey struct{}

type owner struct {
	mu sync.Mutex
	id uuid.UUID
}

// setOwner records the tenant that owns what the request returns.
func setOwner(ctx context.Context, tenantID uuid.UUID) {
	if o, ok := ctx.Value(ownerKey{}).(*owner); ok {
		o.mu.Lock()
		o.id = tenantID
		o.mu.Unlock()
	}
}

// cors answers preflights and adds the CORS headers a response may carry.
func (s *Server) cors(c *fiber.Ctx) error {
	// Every answer varies by Origin, also one to a request without it: a
	// cache must not hand a copy made for no origin (or for one store) to
	// a browser on another.
	c.Vary(fiber.HeaderOrigin)
	origin := strings.Clone(c.Get(fiber.HeaderOrigin))
	if origin == "" {
		return c.Next()
	}
	tenantID, known := s.originTenant(c.UserContext(), origin)
	if c.Method() == fiber.MethodOptions && c.Get(fiber.HeaderAccessControlRequestMethod) != "" {
		if known {
			c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
			c.Set(fiber.HeaderAccessControlAllowMethods, corsMethods)
			c.Set(fiber.HeaderAccessControlAllowHeaders, corsHeaders)
			c.Set(fiber.HeaderAccessControlMaxAge, corsMaxAge)
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
	o := &owner{}
	c.SetUserContext(context.WithValue(c.UserContext(), ownerKey{}, o))
	err := c.Next()
	if !known {
		return err
	}
	status := c.Response().StatusCode()
	if fe := (*fiber.Error)(nil); errors.As(err, &fe) {
		status = fe.Code
	}
	o.mu.Lock()
	owned := o.id
	o.mu.Unlock()
	if tenantID == devOrigin || owned == tenantID || (owned == uuid.Nil && status >= 400) {
		c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
		c.Set(fiber.HeaderAccessControlExposeHeaders, corsExpose)
	}
	return err
}
