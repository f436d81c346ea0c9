package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humafiber"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/google/uuid"

	"boxoffice/internal/audit"
	"boxoffice/internal/db"
	"boxoffice/internal/session"
	"boxoffice/internal/tenant"
	"boxoffice/web"
)

// The console (web/console) signs in by exchanging a key for a session
// cookie, then calls the same operations as any API client: a session is
// one more way to carry the admin's or an API key's authority. The cookie
// is HttpOnly (scripts never see it) and SameSite=Strict; every state
// change must also carry the session's CSRF token in X-CSRF-Token.
const (
	sessionCookie = "bo_console"
	csrfHeader    = "X-CSRF-Token"
)

var (
	errSessionEnded = problem(http.StatusUnauthorized, "SESSION_EXPIRED", "the console session ended: sign in again")
	errCSRF         = problem(http.StatusForbidden, "CSRF_TOKEN_INVALID", "missing or wrong "+csrfHeader+" for this session")
)

// ConsoleSignIn exchanges a key for a session.
type ConsoleSignIn struct {
	Key string `json:"key" minLength:"1" maxLength:"200" doc:"The platform admin key or a tenant's API key (tenant-admin or operator)"`
}

// ConsoleSession is who the console is signed in as.
type ConsoleSession struct {
	Role        string     `json:"role" enum:"platform-admin,tenant-admin,operator"`
	Tenant      *ViewOf    `json:"tenant,omitempty" doc:"The key's tenant; absent for the platform admin"`
	CSRFToken   string     `json:"csrfToken" doc:"Send it as X-CSRF-Token on every change"`
	ExpiresAt   time.Time  `json:"expiresAt" doc:"The session's absolute end"`
	IdleSeconds int        `json:"idleSeconds" doc:"The session ends after this long without a request"`
	KeyID       *uuid.UUID `json:"keyId,omitempty"`
}

// ViewOf names a tenant in the console.
type ViewOf struct {
	ID   uuid.UUID `json:"id"`
	Slug string    `json:"slug"`
	Name string    `json:"name"`
}

type consoleSessionOut struct {
	SetCookie    string `header:"Set-Cookie"`
	CacheControl string `header:"Cache-Control"`
	Body         ConsoleSession
}

// consoleSignIn serves POST /v1/console/session.
func (s *Server) consoleSignIn(ctx context.Context, in *struct {
	Body ConsoleSignIn
}) (*consoleSessionOut, error) {
	if s.Sessions == nil {
		return nil, errNoConsole
	}
	key := strings.TrimSpace(in.Body.Key)
	var who session.Who
	switch {
	case s.isAdminKey(key):
		who.Admin = true
	case strings.HasPrefix(key, tenant.APIKeyPrefix):
		owner, err := s.Tenants.LookupKey(ctx, key)
		if errors.Is(err, db.ErrNotFound) {
			return nil, errUnauthorized
		}
		if err != nil {
			return nil, s.toProblem(err)
		}
		who = session.Who{TenantID: owner.TenantID, KeyID: owner.KeyID, Role: owner.Role}
	default:
		return nil, errUnauthorized
	}
	token, sess, err := s.Sessions.Create(ctx, who, key, clientOf(ctx))
	if err != nil {
		return nil, s.toProblem(err)
	}
	if s.Audit != nil {
		e := audit.Entry{Action: "console-sign-in", Actor: "platform-admin", Target: "POST /v1/console/session",
			Status: http.StatusCreated, From: clientOf(ctx)}
		if !who.Admin {
			e.Actor, e.TenantID = who.Role+" key "+who.KeyID.String(), &who.TenantID
		}
		if err := s.Audit.Record(ctx, e); err != nil {
			s.Logger.Error("audit entry lost", "action", e.Action, "error", err)
		}
	}
	out, err := s.sessionView(ctx, sess)
	if err != nil {
		return nil, err
	}
	out.SetCookie = s.cookie(token, sess.ExpiresAt).String()
	return out, nil
}

// consoleWhoAmI serves GET /v1/console/session.
func (s *Server) consoleWhoAmI(ctx context.Context, _ *struct{}) (*consoleSessionOut, error) {
	sess, ok := ctx.Value(sessionKey{}).(session.Session)
	if !ok {
		return nil, errUnauthorized // a bearer credential has no session
	}
	return s.sessionView(ctx, sess)
}

// consoleSignOut serves DELETE /v1/console/session.
func (s *Server) consoleSignOut(ctx context.Context, in *struct {
	Token string `cookie:"bo_console"`
}) (*struct {
	SetCookie string `header:"Set-Cookie"`
}, error) {
	if err := s.Sessions.End(ctx, in.Token); err != nil {
		return nil, s.toProblem(err)
	}
	gone := s.cookie("", time.Unix(0, 0)) //nolint:gosec // G124: the session cookie (cookie), expired
	gone.MaxAge = -1
	return &struct {
		SetCookie string `header:"Set-Cookie"`
	}{gone.String()}, nil
}

func (s *Server) sessionView(ctx context.Context, sess session.Session) (*consoleSessionOut, error) {
	out := &consoleSessionOut{CacheControl: "no-store", Body: ConsoleSession{Role: "platform-admin", CSRFToken: sess.CSRF,
		ExpiresAt: sess.ExpiresAt, IdleSeconds: int(s.Sessions.Limits().Idle / time.Second)}}
	if !sess.Admin {
		p, err := s.Tenants.ProfileOf(ctx, sess.TenantID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		out.Body.Role, out.Body.KeyID = sess.Role, &sess.KeyID
		out.Body.Tenant = &ViewOf{ID: sess.TenantID, Slug: p.Slug, Name: p.Name}
	}
	return out, nil
}

// cookie is the session cookie: Secure except in `boxoffice dev` (plain
// http on localhost), where DevOrigins is set.
func (s *Server) cookie(token string, expires time.Time) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: expires, HttpOnly: true, //nolint:gosec // G124: Secure but in dev, as said
		Secure: !s.DevOrigins, SameSite: http.SameSiteStrictMode}
}

var errNoConsole = problem(http.StatusServiceUnavailable, "CONSOLE_UNAVAILABLE", "this server keeps no console sessions")

type sessionKey struct{}

// consoleSession is the live session of token, provided the credential it
// was opened with is still in force: the admin key configured now, or the
// tenant key unrevoked. A session outlives neither a restart with another
// admin key nor its key's revocation, whichever process revoked it.
func (s *Server) consoleSession(ctx context.Context, token string) (session.Session, error) {
	sess, err := s.Sessions.Get(ctx, token)
	if err != nil {
		return session.Session{}, err
	}
	if sess.Admin {
		if !sess.OpenedWith(s.AdminKey) {
			return session.Session{}, session.ErrNoSession
		}
		return sess, nil
	}
	ok, err := s.Tenants.KeyInForce(ctx, sess.KeyID, sess.CredentialHash())
	if err != nil {
		return session.Session{}, err
	}
	if !ok {
		return session.Session{}, session.ErrNoSession
	}
	return sess, nil
}

// fromSession resolves the console's session cookie to the principal it
// carries, refusing a state change without the session's CSRF token. The
// session stands in for the key it was opened with: it may do what the
// operation's Security lets that key do.
func (s *Server) fromSession(c *fiber.Ctx, allowed func(string) bool) (principal, session.Session, error) {
	token := c.Cookies(sessionCookie)
	if token == "" || s.Sessions == nil {
		return principal{}, session.Session{}, errUnauthorized
	}
	sess, err := s.consoleSession(c.UserContext(), strings.Clone(token))
	if errors.Is(err, session.ErrNoSession) {
		return principal{}, session.Session{}, errSessionEnded
	}
	if err != nil {
		return principal{}, session.Session{}, err
	}
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
	default:
		if subtle.ConstantTimeCompare([]byte(c.Get(csrfHeader)), []byte(sess.CSRF)) != 1 {
			return principal{}, session.Session{}, errCSRF
		}
	}
	switch {
	case sess.Admin && allowed(schemeAdmin):
		return principal{Admin: true}, sess, nil
	case sess.Admin:
		return principal{}, session.Session{}, errForbidden
	}
	who, err := keyPrincipal(sess.TenantID, sess.Role, sess.KeyID, allowed)
	if err != nil {
		return principal{}, session.Session{}, err
	}
	return who, sess, nil
}

// withSession authenticates a huma operation by the session cookie.
func (s *Server) withSession(ctx huma.Context, allowed func(string) bool) (principal, context.Context, error) {
	who, sess, err := s.fromSession(humafiber.Unwrap(ctx), allowed)
	if err != nil {
		return principal{}, nil, err
	}
	return who, context.WithValue(ctx.Context(), sessionKey{}, sess), nil
}

// consolePages serves the console's pages at /console/ (embedded; they
// call the API with the session cookie).
func consolePages() fiber.Handler {
	pages, _ := fs.Sub(web.Console, "console")
	return filesystem.New(filesystem.Config{Root: http.FS(pages), Index: "index.html", MaxAge: 60})
}

// consoleHeaders keeps the console from being framed (clickjacking) and
// lets it run only its own scripts, and connect only to the API and the
// stores' bucket (uploads go there straight, with presigned URLs).
func (s *Server) consoleHeaders() fiber.Handler {
	connect := "'self'"
	if s.StoreBucket != nil {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		if origin, err := s.StoreBucket.UploadOrigin(ctx); err == nil {
			connect += " " + origin
		} else {
			s.Logger.Warn("the console cannot upload pictures", "error", err)
		}
	}
	policy := "default-src 'self'; img-src 'self' data: https:; style-src 'self'; script-src 'self'; " +
		"connect-src " + connect + "; frame-src 'self'; frame-ancestors 'none'"
	return func(c *fiber.Ctx) error {
		if c.Path() == "/console" {
			return c.Redirect("/console/", http.StatusMovedPermanently) // the pages' links are relative
		}
		c.Set("X-Frame-Options", "DENY")
		c.Set("Content-Security-Policy", policy)
		c.Set("Referrer-Policy", "no-referrer")
		return c.Next()
	}
}
