package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/tenant"
)

// Security schemes, named in each operation's Security and in the OpenAPI
// document.
const (
	schemeAdmin    = "adminKey"
	schemeAPI      = "apiKey"      // a tenant-admin API key
	schemeOperator = "operatorKey" // an operator or tenant-admin API key
	schemeBuyer    = "buyerToken"
	schemeSession  = "consoleSession" // the console's cookie (console.go)
)

// security lists an operation's schemes; one that takes a key also takes
// the console's session, which stands in for the key it was opened with.
func security(schemes ...string) []map[string][]string {
	out := make([]map[string][]string, 0, len(schemes)+1)
	session := false
	for _, s := range schemes {
		out = append(out, map[string][]string{s: {}})
		session = session || s == schemeAdmin || s == schemeAPI || s == schemeOperator
	}
	if session {
		out = append(out, map[string][]string{schemeSession: {}})
	}
	return out
}

// principal is who called: the platform admin, a tenant's key (TenantID and
// Role set) or a buyer (TenantID and BuyerID set).
type principal struct {
	Admin    bool
	TenantID uuid.UUID
	Role     string
	KeyID    uuid.UUID // the API key's, for the audit log
	BuyerID  string
}

type principalKey struct{}

// actor names the principal in the audit log and in what it asked for (a
// refund's requestedBy).
func (p principal) actor() string {
	if p.Admin {
		return "platform-admin"
	}
	if p.KeyID == uuid.Nil && p.BuyerID != "" {
		return "buyer " + p.BuyerID
	}
	return p.Role + " key " + p.KeyID.String()
}

// caller returns the principal authenticate stored for the operation.
func caller(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

var (
	errUnauthorized = problem(http.StatusUnauthorized, "UNAUTHORIZED", "missing or invalid credentials")
	errForbidden    = problem(http.StatusForbidden, "FORBIDDEN", "these credentials may not do this")
	errBadToken     = problem(http.StatusUnauthorized, "INVALID_TOKEN", "buyer token is invalid or expired")
)

// isPublic says whether an operation's security names no scheme (none, or
// only the empty requirement the document gives public operations).
func isPublic(security []map[string][]string) bool {
	for _, req := range security {
		if len(req) > 0 {
			return false
		}
	}
	return true
}

// authenticate runs before huma reads the body, so an unauthenticated caller
// learns nothing about validation. It accepts the credential kinds the
// operation's Security lists and stores the principal in the context.
func (s *Server) authenticate(ctx huma.Context, next func(huma.Context)) {
	op := ctx.Operation()
	if op == nil || isPublic(op.Security) {
		next(ctx)
		return
	}
	allowed := func(scheme string) bool {
		return slices.ContainsFunc(op.Security, func(m map[string][]string) bool { _, ok := m[scheme]; return ok })
	}
	// Fiber's header strings point into a reused buffer; the token may be
	// kept as a cache key, so copy it.
	token, _ := strings.CutPrefix(ctx.Header("Authorization"), "Bearer ")
	token = strings.Clone(strings.TrimSpace(token))

	var who principal
	var err error
	switch {
	case token == "" && (allowed(schemeAdmin) || allowed(schemeAPI) || allowed(schemeOperator)):
		// No bearer: the console's session cookie may carry the authority.
		var c context.Context
		if who, c, err = s.withSession(ctx, allowed); err == nil {
			ctx = huma.WithContext(ctx, c)
		}
	case token == "":
		err = errUnauthorized
	case allowed(schemeAdmin) && s.isAdminKey(token), strings.HasPrefix(token, tenant.APIKeyPrefix):
		who, err = s.bearer(ctx.Context(), token, allowed)
	case allowed(schemeBuyer):
		var b tenant.Buyer
		if tenant.IsProviderToken(token) {
			b, err = s.providerBuyer(ctx.Context(), token)
		} else {
			b, err = tenant.VerifyBuyerToken(ctx.Context(), tokenKeys{s}, token)
		}
		if errors.Is(err, tenant.ErrBadBuyerToken) {
			err = errBadToken
		}
		who.TenantID, who.BuyerID = b.TenantID, b.ID
	default:
		err = errUnauthorized
	}
	if err != nil {
		_ = writeProblem(ctx, s.toProblem(err))
		return
	}
	noteCaller(ctx.Context(), who)
	next(huma.WithValue(ctx, principalKey{}, who))
}

// noteCaller marks the response as the caller's tenant's (CORS) and names
// the tenant in the access log.
func noteCaller(ctx context.Context, who principal) {
	if who.TenantID != uuid.Nil {
		setOwner(ctx, who.TenantID)
		noteTenant(ctx, who.TenantID)
	}
}

// isAdminKey reports whether token is the platform admin key.
func (s *Server) isAdminKey(token string) bool {
	return s.AdminKey != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.AdminKey)) == 1
}

// bearer resolves the admin key or an API key to its principal, as far as
// the operation's schemes allow.
func (s *Server) bearer(ctx context.Context, token string, allowed func(string) bool) (principal, error) {
	switch {
	case allowed(schemeAdmin) && s.isAdminKey(token):
		return principal{Admin: true}, nil
	case strings.HasPrefix(token, tenant.APIKeyPrefix) && (allowed(schemeAPI) || allowed(schemeOperator)):
		owner, err := s.lookupKey(ctx, token)
		if err != nil {
			return principal{}, err
		}
		return keyPrincipal(owner.TenantID, owner.Role, owner.KeyID, allowed)
	}
	return principal{}, errUnauthorized
}

// keyPrincipal is a tenant's key (or a session opened with one) where the
// operation takes its role: tenant admins wherever an API or operator key
// goes, operators where operator keys go.
func keyPrincipal(tenantID uuid.UUID, role string, keyID uuid.UUID, allowed func(string) bool) (principal, error) {
	if role == tenant.RoleTenantAdmin && (allowed(schemeAPI) || allowed(schemeOperator)) ||
		role == tenant.RoleOperator && allowed(schemeOperator) {
		return principal{TenantID: tenantID, Role: role, KeyID: keyID}, nil
	}
	return principal{}, errForbidden
}

// lookupKey resolves an API key to its tenant and role.
func (s *Server) lookupKey(ctx context.Context, key string) (tenant.KeyOwner, error) {
	owner, err := s.keys.Get(ctx, key)
	if errors.Is(err, db.ErrNotFound) {
		return owner, errUnauthorized
	}
	return owner, err
}

// tokenKeys reads tenants' buyer-token keys through the cache.
type tokenKeys struct{ s *Server }

func (tk tokenKeys) BuyerTokenKeys(ctx context.Context, id uuid.UUID) ([]*tenant.TokenKey, error) {
	return tk.s.tokenKeys.Get(ctx, id)
}
