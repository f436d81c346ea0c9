package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"boxoffice/internal/tenant"
)

// APIKeyBody asks for a new API key.
type APIKeyBody struct {
	Role  string `json:"role" enum:"tenant-admin,operator"`
	Label string `json:"label,omitempty" maxLength:"100" pattern:"^[^\\p{Cc}]*$" doc:"What the key is for (shown in lists)"`
}

// APIKeyCreated is a new API key, shown once.
type APIKeyCreated struct {
	ID       uuid.UUID `json:"id" doc:"Names the key to list or revoke it"`
	TenantID uuid.UUID `json:"tenantId"`
	Role     string    `json:"role"`
	Label    string    `json:"label,omitempty"`
	APIKey   string    `json:"apiKey" doc:"Stored hashed, shown once"`
}

// SecretRotated is a tenant's new buyer-token secret, shown once.
type SecretRotated struct {
	BuyerTokenSecret       string    `json:"buyerTokenSecret" doc:"Sign new buyer tokens with this"`
	PreviousValidUntil     time.Time `json:"previousValidUntil" doc:"Tokens signed with the previous secret verify until then"`
	PreviousOverlapSeconds int       `json:"previousOverlapSeconds"`
}

// keyOwnerOnly lets the platform admin act on any tenant and a tenant admin
// on its own; anyone else learns nothing about the tenant.
func keyOwnerOnly(ctx context.Context, tenantID uuid.UUID) error {
	if who := caller(ctx); !who.Admin && who.TenantID != tenantID {
		return problem(http.StatusNotFound, "NOT_FOUND", "no such tenant")
	}
	return nil
}

// keyCacheTTL is how long an API process may still accept a revoked key or
// the previous secret after its overlap: lookups are cached that long.
const keyCacheTTL = 10 * time.Second

func (s *Server) registerKeys() {
	huma.Register(s.api, huma.Operation{
		OperationID:   "create-api-key",
		Method:        http.MethodPost,
		Path:          "/v1/tenants/{id}/api-keys",
		Summary:       "Issue an API key (tenant-admin or operator) for a tenant",
		Description:   "The platform admin, or a tenant admin for its own tenant.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusCreated,
		Security:      security(schemeAdmin, schemeAPI),
		MaxBodyBytes:  maxSmallBody,
		Errors:        []int{401, 403, 404, 422},
	}, func(ctx context.Context, in *struct {
		ID   uuid.UUID `path:"id"`
		Body APIKeyBody
	}) (*struct{ Body APIKeyCreated }, error) {
		if err := keyOwnerOnly(ctx, in.ID); err != nil {
			return nil, err
		}
		id, key, err := s.Tenants.CreateKey(ctx, in.ID, in.Body.Role, in.Body.Label)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body APIKeyCreated }{APIKeyCreated{ID: id, TenantID: in.ID, Role: in.Body.Role,
			Label: in.Body.Label, APIKey: key}}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "list-api-keys",
		Method:      http.MethodGet,
		Path:        "/v1/tenants/{id}/api-keys",
		Summary:     "List a tenant's API keys (never the keys themselves)",
		Tags:        []string{"Tenants"},
		Security:    security(schemeAdmin, schemeAPI),
		Errors:      []int{401, 403, 404},
	}, func(ctx context.Context, in *struct {
		ID uuid.UUID `path:"id"`
	}) (*struct{ Body []tenant.Key }, error) {
		if err := keyOwnerOnly(ctx, in.ID); err != nil {
			return nil, err
		}
		keys, err := s.Tenants.ListKeys(ctx, in.ID)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body []tenant.Key }{keys}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID:   "revoke-api-key",
		Method:        http.MethodDelete,
		Path:          "/v1/tenants/{id}/api-keys/{keyId}",
		Summary:       "Revoke an API key",
		Description:   "Refused by every API process within 10 seconds (lookups are cached that long). Revoking twice is fine.",
		Tags:          []string{"Tenants"},
		DefaultStatus: http.StatusNoContent,
		Security:      security(schemeAdmin, schemeAPI),
		Errors:        []int{401, 403, 404},
	}, func(ctx context.Context, in *struct {
		ID    uuid.UUID `path:"id"`
		KeyID uuid.UUID `path:"keyId"`
	}) (*struct{}, error) {
		if err := keyOwnerOnly(ctx, in.ID); err != nil {
			return nil, err
		}
		if err := s.Tenants.RevokeKey(ctx, in.ID, in.KeyID); err != nil {
			return nil, s.toProblem(err)
		}
		return nil, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "rotate-buyer-token-secret",
		Method:      http.MethodPost,
		Path:        "/v1/tenants/{id}/buyer-token-secret/rotate",
		Summary:     "Rotate the secret buyer tokens are signed with",
		Description: "Returns the new secret once. Tokens signed with the previous secret keep verifying for overlapSeconds " +
			"(default 3600) so the tenant's login can switch without signing anyone out; a second rotation ends the " +
			"first one's overlap.",
		Tags:         []string{"Tenants"},
		Security:     security(schemeAdmin, schemeAPI),
		MaxBodyBytes: maxSmallBody,
		Errors:       []int{401, 403, 404, 422},
	}, func(ctx context.Context, in *struct {
		ID   uuid.UUID `path:"id"`
		Body *struct {
			OverlapSeconds *int `json:"overlapSeconds,omitempty" minimum:"0" maximum:"604800" doc:"Default 3600; 0 ends the previous secret at once"`
		}
	}) (*struct{ Body SecretRotated }, error) {
		if err := keyOwnerOnly(ctx, in.ID); err != nil {
			return nil, err
		}
		overlap := 3600
		if in.Body != nil && in.Body.OverlapSeconds != nil {
			overlap = *in.Body.OverlapSeconds
		}
		secret, until, err := s.Tenants.RotateBuyerTokenSecret(ctx, in.ID, time.Duration(overlap)*time.Second)
		if err != nil {
			return nil, s.toProblem(err)
		}
		return &struct{ Body SecretRotated }{SecretRotated{BuyerTokenSecret: secret, PreviousValidUntil: until,
			PreviousOverlapSeconds: overlap}}, nil
	})
}
