package api

import (
	"context"

	"github.com/google/uuid"

	"boxoffice/internal/tenant"
)

// TenantBody is a new tenant.
type TenantBody struct {
	Slug    string            `json:"slug" minLength:"2" maxLength:"63" pattern:"^[a-z0-9][a-z0-9-]*$" doc:"URL-safe identifier"`
	Name    string            `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" doc:"no control characters"`
	Domains []string          `json:"domains,omitempty" maxItems:"20" doc:"Store domains of the white-label store"`
	Theme   map[string]string `json:"theme,omitempty" doc:"Branding of the store (colors, logo URL, ...)"`
}

// TenantCreated is a new tenant with its secrets, shown only this once.
type TenantCreated struct {
	tenant.Tenant
	APIKey           string `json:"apiKey" doc:"Tenant admin API key; stored hashed, shown once"`
	BuyerTokenSecret string `json:"buyerTokenSecret" doc:"HS256 secret for signing this tenant's buyer tokens"`
}

// createTenant serves POST /v1/tenants.
func (s *Server) createTenant(ctx context.Context, in *struct{ Body TenantBody }) (*secretOutput[TenantCreated], error) {
	if err := s.checkDomains(in.Body.Domains); err != nil {
		return nil, err
	}
	t, err := s.Tenants.Create(ctx, tenant.CreateParams{
		Slug: in.Body.Slug, Name: in.Body.Name, Domains: in.Body.Domains, Theme: in.Body.Theme,
	})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return shownOnce(TenantCreated{
		Tenant: t.Tenant, APIKey: t.APIKey, BuyerTokenSecret: t.BuyerTokenSecret,
	}), nil
}

// setTenantQuota serves PUT /v1/tenants/{id}/quota.
func (s *Server) setTenantQuota(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body tenant.Quota
}) (*struct{}, error) {
	if err := s.Tenants.SetQuota(ctx, in.ID, in.Body); err != nil {
		return nil, s.toProblem(err)
	}
	return nil, nil
}
