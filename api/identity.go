package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/netguard"
	"boxoffice/internal/tenant"
)

// verifiedToken is an identity provider's token checked once: its buyer,
// good until the token expires.
type verifiedToken struct {
	buyer   tenant.Buyer
	expires time.Time
}

// verifyProviderToken checks an identity provider's token (the cache's
// loader: each distinct token is verified once).
func (s *Server) verifyProviderToken(ctx context.Context, token string) (verifiedToken, error) {
	b, exp, err := tenant.VerifyProviderToken(ctx, issuerSource{s}, s.keySets, token)
	return verifiedToken{buyer: b, expires: exp}, err
}

// providerBuyer is the buyer of an identity provider's token.
func (s *Server) providerBuyer(ctx context.Context, token string) (tenant.Buyer, error) {
	v, err := s.providerTokens.Get(ctx, token)
	if err != nil {
		return tenant.Buyer{}, err
	}
	if time.Now().After(v.expires) {
		s.providerTokens.Forget(token)
		return tenant.Buyer{}, tenant.ErrBadBuyerToken
	}
	return v.buyer, nil
}

// issuerSource finds a provider token's tenant through the cache.
type issuerSource struct{ s *Server }

func (is issuerSource) IssuerOf(ctx context.Context, issuer string, audiences []string) (tenant.Issuer, error) {
	return is.s.issuers.Get(ctx, issuer+"\x00"+strings.Join(audiences, "\x00"))
}

// IdentityProviderBody names a tenant's identity provider.
type IdentityProviderBody struct {
	JWKSURL  string `json:"jwksUrl" minLength:"1" maxLength:"500" doc:"The provider's JWKS: https, on a public address (unless BOXOFFICE_ALLOW_PRIVATE_TARGETS)"`
	Issuer   string `json:"issuer" minLength:"1" maxLength:"500" pattern:"^[^\\p{Cc}]+$" doc:"The iss of its tokens"`
	Audience string `json:"audience" minLength:"1" maxLength:"500" pattern:"^[^\\p{Cc}]+$" doc:"The aud of its tokens for this tenant"`
}

// IdentityProviderView is a tenant's identity provider, or none.
type IdentityProviderView struct {
	Provider *tenant.IdentityProvider `json:"provider,omitempty" doc:"Absent: buyers sign in with HS256 tokens or the store's passwordless login only"`
}

// putIdentityProvider serves PUT /v1/tenants/{id}/identity-provider.
func (s *Server) putIdentityProvider(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body IdentityProviderBody
}) (*struct{ Body IdentityProviderView }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	p := &tenant.IdentityProvider{JWKSURL: strings.TrimSpace(in.Body.JWKSURL), Issuer: in.Body.Issuer, Audience: in.Body.Audience}
	if err := (netguard.Guard{AllowPrivate: s.PrivateTargets}).CheckURL(p.JWKSURL); err != nil {
		return nil, problem(http.StatusUnprocessableEntity, "INVALID_JWKS_URL", err.Error())
	}
	// Fetched once now: a wrong URL is told to the admin setting it, not
	// to every buyer later.
	if err := s.keySets.CheckKeys(ctx, p.JWKSURL); err != nil {
		return nil, problem(http.StatusUnprocessableEntity, "JWKS_UNUSABLE", publicMessage(err.Error()))
	}
	err := s.Tenants.SetIdentityProvider(ctx, in.ID, p)
	if errors.Is(err, tenant.ErrIdentityProviderTaken) {
		return nil, problem(http.StatusConflict, "IDENTITY_PROVIDER_TAKEN", err.Error())
	}
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body IdentityProviderView }{IdentityProviderView{p}}, nil
}

// getIdentityProvider serves GET /v1/tenants/{id}/identity-provider.
func (s *Server) getIdentityProvider(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body IdentityProviderView }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	p, err := s.Tenants.IdentityProviderOf(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body IdentityProviderView }{IdentityProviderView{p}}, nil
}

// deleteIdentityProvider serves DELETE /v1/tenants/{id}/identity-provider.
func (s *Server) deleteIdentityProvider(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{}, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	if err := s.Tenants.SetIdentityProvider(ctx, in.ID, nil); err != nil {
		return nil, s.toProblem(err)
	}
	return nil, nil
}
