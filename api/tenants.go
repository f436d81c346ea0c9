package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"boxoffice/internal/tenant"
)

// TenantBody is a new tenant.
type TenantBody struct {
	Slug    string            `json:"slug" minLength:"2" maxLength:"63" pattern:"^[a-z0-9][a-z0-9-]*$" doc:"URL-safe identifier"`
	Name    string            `json:"name" minLength:"1" maxLength:"200" pattern:"^[^\\p{Cc}]+$" patternDescription:"no control characters"`
	Domains []string          `json:"domains,omitempty" maxItems:"20" doc:"Store domains of the white-label store"`
	Theme   map[string]string `json:"theme,omitempty" doc:"Branding of the store (colors, logo URL, ...)"`
}

// TenantCreated is a new tenant with its secrets, shown only this once.
type TenantCreated struct {
	tenant.Tenant
	APIKey           string `json:"apiKey" doc:"Tenant admin API key; stored hashed, shown once"`
	BuyerTokenSecret string `json:"buyerTokenSecret" doc:"HS256 secret for signing this tenant's buyer tokens"`
}

func (s *Server) registerTenants() {
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-tenant",
		Method:        http.MethodPost,
		Path:          "/v1/tenants",
		Summary:       "Create a white-label tenant",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusCreated,
		Security:      security(schemeAdmin),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 409, 422},
	}, func(ctx context.Context, in *struct{ Body TenantBody }) (*struct{ Body TenantCreated }, error) {
		t, err := s.Tenants.Create(ctx, tenant.CreateParams{
			Slug: in.Body.Slug, Name: in.Body.Name, Domains: in.Body.Domains, Theme: in.Body.Theme,
		})
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body TenantCreated }{TenantCreated{
			Tenant: t.Tenant, APIKey: t.APIKey, BuyerTokenSecret: t.BuyerTokenSecret,
		}}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID:   "set-tenant-quota",
		Method:        http.MethodPut,
		Path:          "/v1/tenants/{id}/quota",
		Summary:       "Set how many products and numbers a tenant may create",
		Description:   "Without one, a tenant has the deployment's defaults (BOXOFFICE_TENANT_MAX_PRODUCTS, BOXOFFICE_TENANT_MAX_CAPACITY). Products already created stay.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusNoContent,
		Security:      security(schemeAdmin),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 404, 422},
	}, func(ctx context.Context, in *struct {
		ID   uuid.UUID `path:"id"`
		Body tenant.Quota
	}) (*struct{}, error) {
		if err := s.Tenants.SetQuota(ctx, in.ID, in.Body); err != nil {
			return nil, s.toProblem(err)
		}
		return nil, nil
	})
}
