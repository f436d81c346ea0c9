package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"boxoffice/internal/db"
	"boxoffice/internal/tenant"
)

// authHeader is embedded in every authenticated operation's input.
type authHeader struct {
	Authorization string `header:"Authorization" doc:"Bearer credential"`
}

var (
	errUnauthorized = problem(http.StatusUnauthorized, "UNAUTHORIZED", "missing or invalid credentials")
	errForbidden    = problem(http.StatusForbidden, "FORBIDDEN", "these credentials may not do this")
	errBadToken     = problem(http.StatusUnauthorized, "INVALID_TOKEN", "buyer token is invalid or expired")
)

func bearer(h authHeader) string {
	token, ok := strings.CutPrefix(h.Authorization, "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

// requireAdmin accepts only the platform admin key.
func (s *Server) requireAdmin(h authHeader) error {
	token := bearer(h)
	if token == "" || s.AdminKey == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.AdminKey)) != 1 {
		return errUnauthorized
	}
	return nil
}

// requireTenantAdmin accepts a tenant-admin API key and returns its tenant.
func (s *Server) requireTenantAdmin(ctx context.Context, h authHeader) (uuid.UUID, error) {
	token := bearer(h)
	if !strings.HasPrefix(token, tenant.APIKeyPrefix) {
		return uuid.Nil, errUnauthorized
	}
	owner, err := s.keys.Get(ctx, token)
	if errors.Is(err, db.ErrNotFound) {
		return uuid.Nil, errUnauthorized
	}
	if err != nil {
		return uuid.Nil, err
	}
	if owner.Role != tenant.RoleTenantAdmin {
		return uuid.Nil, errForbidden
	}
	return owner.TenantID, nil
}

// requireBuyer accepts a buyer JWT signed with its tenant's secret.
func (s *Server) requireBuyer(ctx context.Context, h authHeader) (tenant.Buyer, error) {
	token := bearer(h)
	if token == "" || strings.HasPrefix(token, tenant.APIKeyPrefix) {
		return tenant.Buyer{}, errUnauthorized
	}
	buyer, err := tenant.VerifyBuyerToken(ctx, secretSource{s}, token)
	if err != nil {
		if errors.Is(err, tenant.ErrBadBuyerToken) {
			return tenant.Buyer{}, errBadToken
		}
		return tenant.Buyer{}, err
	}
	return buyer, nil
}

// principal is a tenant admin or a buyer: the two callers that may read a
// tenant's products and reservations. Buyer is empty for an admin.
type principal struct {
	TenantID uuid.UUID
	BuyerID  string
}

func (s *Server) requireAdminOrBuyer(ctx context.Context, h authHeader) (principal, error) {
	if strings.HasPrefix(bearer(h), tenant.APIKeyPrefix) {
		id, err := s.requireTenantAdmin(ctx, h)
		return principal{TenantID: id}, err
	}
	b, err := s.requireBuyer(ctx, h)
	return principal{TenantID: b.TenantID, BuyerID: b.ID}, err
}

// secretSource reads buyer-token secrets through the cache; an unknown
// tenant is a bad token, not a server error.
type secretSource struct{ s *Server }

func (ss secretSource) BuyerTokenSecret(ctx context.Context, id uuid.UUID) ([]byte, error) {
	return ss.s.secrets.Get(ctx, id)
}
