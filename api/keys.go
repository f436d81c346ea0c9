package api

import (
	"context"
	"net/http"
	"time"

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

// createApiKey serves POST /v1/tenants/{id}/api-keys.
func (s *Server) createApiKey(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body APIKeyBody
}) (*secretOutput[APIKeyCreated], error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	id, key, err := s.Tenants.CreateKey(ctx, in.ID, in.Body.Role, in.Body.Label)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return shownOnce(APIKeyCreated{ID: id, TenantID: in.ID, Role: in.Body.Role,
		Label: in.Body.Label, APIKey: key}), nil
}

// listApiKeys serves GET /v1/tenants/{id}/api-keys.
func (s *Server) listApiKeys(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body []tenant.Key }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	keys, err := s.Tenants.ListKeys(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body []tenant.Key }{keys}, nil
}

// revokeApiKey serves DELETE /v1/tenants/{id}/api-keys/{keyId}.
func (s *Server) revokeApiKey(ctx context.Context, in *struct {
	ID    uuid.UUID `path:"id" format:"uuid"`
	KeyID uuid.UUID `path:"keyId" format:"uuid"`
}) (*struct{}, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	if err := s.Tenants.RevokeKey(ctx, in.ID, in.KeyID); err != nil {
		return nil, s.toProblem(err)
	}
	// A console signed in with the key ends with it.
	if s.Sessions != nil {
		if err := s.Sessions.EndForKey(ctx, in.KeyID); err != nil {
			return nil, s.toProblem(err)
		}
	}
	return nil, nil
}

// RotateBody tunes a rotation.
type RotateBody struct {
	OverlapSeconds *int `json:"overlapSeconds,omitempty" minimum:"0" maximum:"604800" doc:"Default 3600; 0 ends the previous secret at once"`
}

// rotateBuyerTokenSecret serves POST /v1/tenants/{id}/buyer-token-secret/rotate.
func (s *Server) rotateBuyerTokenSecret(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body *RotateBody
}) (*secretOutput[SecretRotated], error) {
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
	return shownOnce(SecretRotated{BuyerTokenSecret: secret, PreviousValidUntil: until,
		PreviousOverlapSeconds: overlap}), nil
}
