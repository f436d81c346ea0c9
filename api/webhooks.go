package api

import (
	"context"
	"time"

	"github.com/google/uuid"

	"boxoffice/internal/webhook"
)

// WebhookEndpointBody is a new endpoint.
type WebhookEndpointBody struct {
	URL         string   `json:"url" minLength:"1" maxLength:"500" doc:"Where events are POSTed: https, on a public address (unless BOXOFFICE_ALLOW_PRIVATE_TARGETS)"`
	Description string   `json:"description,omitempty" maxLength:"200" pattern:"^[^\\p{Cc}]*$"`
	EventTypes  []string `json:"eventTypes,omitempty" maxItems:"20" doc:"The types it receives (GET /v1/webhook-event-types); empty or absent: every type"`
	AlertEmail  string   `json:"alertEmail" minLength:"3" maxLength:"254" doc:"Mailed if the endpoint is disabled after a day of failures"`
}

// WebhookEndpointCreated is a new endpoint with its secret.
type WebhookEndpointCreated struct {
	webhook.Endpoint
	Secret string `json:"secret" doc:"whsec_…: verifies the webhook-signature of every delivery. Shown once"`
}

// WebhookEndpointList is a tenant's endpoints.
type WebhookEndpointList struct {
	Endpoints []*webhook.Endpoint `json:"endpoints"`
}

// EndpointPath names one of a tenant's webhook endpoints.
type EndpointPath struct {
	ID         uuid.UUID `path:"id" format:"uuid"`
	EndpointID uuid.UUID `path:"endpointId" format:"uuid"`
}

// DeliveryPath names one delivery of an endpoint.
type DeliveryPath struct {
	ID         uuid.UUID `path:"id" format:"uuid"`
	EndpointID uuid.UUID `path:"endpointId" format:"uuid"`
	DeliveryID uuid.UUID `path:"deliveryId" format:"uuid"`
}

// WebhookEventTypes are the types an endpoint may subscribe to.
type WebhookEventTypes struct {
	Types []webhook.EventType `json:"types"`
}

// listWebhookEventTypes serves GET /v1/webhook-event-types.
func (s *Server) listWebhookEventTypes(context.Context, *struct{}) (*struct{ Body WebhookEventTypes }, error) {
	return &struct{ Body WebhookEventTypes }{WebhookEventTypes{Types: webhook.Types}}, nil
}

// createWebhookEndpoint serves POST /v1/tenants/{id}/webhooks.
func (s *Server) createWebhookEndpoint(ctx context.Context, in *struct {
	ID   uuid.UUID `path:"id" format:"uuid"`
	Body WebhookEndpointBody
}) (*secretOutput[WebhookEndpointCreated], error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	e, secret, err := s.Webhooks.Create(ctx, in.ID, webhook.Params{URL: in.Body.URL, Description: in.Body.Description,
		EventTypes: in.Body.EventTypes, AlertEmail: in.Body.AlertEmail})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return shownOnce(WebhookEndpointCreated{Endpoint: *e, Secret: secret}), nil
}

// listWebhookEndpoints serves GET /v1/tenants/{id}/webhooks.
func (s *Server) listWebhookEndpoints(ctx context.Context, in *struct {
	ID uuid.UUID `path:"id" format:"uuid"`
}) (*struct{ Body WebhookEndpointList }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	list, err := s.Webhooks.List(ctx, in.ID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body WebhookEndpointList }{WebhookEndpointList{Endpoints: list}}, nil
}

// getWebhookEndpoint serves GET /v1/tenants/{id}/webhooks/{endpointId}.
func (s *Server) getWebhookEndpoint(ctx context.Context, in *EndpointPath) (*struct{ Body *webhook.Endpoint }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	e, err := s.Webhooks.Get(ctx, in.ID, in.EndpointID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *webhook.Endpoint }{e}, nil
}

// WebhookEndpointChange changes an endpoint; absent fields stay.
type WebhookEndpointChange struct {
	URL         *string  `json:"url,omitempty" minLength:"1" maxLength:"500"`
	Description *string  `json:"description,omitempty" maxLength:"200" pattern:"^[^\\p{Cc}]*$"`
	EventTypes  []string `json:"eventTypes,omitempty" maxItems:"20" doc:"Replaces the subscription; [] for every type"`
	AlertEmail  *string  `json:"alertEmail,omitempty" minLength:"3" maxLength:"254"`
	Enabled     *bool    `json:"enabled,omitempty" doc:"false stops deliveries; true starts them again and forgets past failures"`
}

// updateWebhookEndpoint serves PATCH /v1/tenants/{id}/webhooks/{endpointId}.
func (s *Server) updateWebhookEndpoint(ctx context.Context, in *struct {
	EndpointPath
	Body WebhookEndpointChange
}) (*struct{ Body *webhook.Endpoint }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	b := in.Body
	e, err := s.Webhooks.Update(ctx, in.ID, in.EndpointID, webhook.Change{URL: b.URL, Description: b.Description,
		AlertEmail: b.AlertEmail, EventTypes: b.EventTypes, Enabled: b.Enabled})
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *webhook.Endpoint }{e}, nil
}

// deleteWebhookEndpoint serves DELETE /v1/tenants/{id}/webhooks/{endpointId}.
func (s *Server) deleteWebhookEndpoint(ctx context.Context, in *EndpointPath) (*struct{}, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	if err := s.Webhooks.Delete(ctx, in.ID, in.EndpointID); err != nil {
		return nil, s.toProblem(err)
	}
	return nil, nil
}

// WebhookSecretRotated is an endpoint's new secret.
type WebhookSecretRotated struct {
	Secret             string    `json:"secret" doc:"Shown once"`
	PreviousValidUntil time.Time `json:"previousValidUntil" doc:"Deliveries carry a signature with the previous secret too until then"`
}

// rotateWebhookSecret serves POST /v1/tenants/{id}/webhooks/{endpointId}/secret/rotate.
func (s *Server) rotateWebhookSecret(ctx context.Context, in *struct {
	EndpointPath
	Body *RotateBody
}) (*secretOutput[WebhookSecretRotated], error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	overlap := 24 * 3600
	if in.Body != nil && in.Body.OverlapSeconds != nil {
		overlap = *in.Body.OverlapSeconds
	}
	secret, until, err := s.Webhooks.RotateSecret(ctx, in.ID, in.EndpointID, time.Duration(overlap)*time.Second)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return shownOnce(WebhookSecretRotated{Secret: secret, PreviousValidUntil: until}), nil
}

// DeliveryQueued names a delivery on its way.
type DeliveryQueued struct {
	DeliveryID uuid.UUID `json:"deliveryId" format:"uuid"`
}

// testWebhookEndpoint serves POST /v1/tenants/{id}/webhooks/{endpointId}/test.
func (s *Server) testWebhookEndpoint(ctx context.Context, in *EndpointPath) (*struct{ Body DeliveryQueued }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	id, err := s.Webhooks.SendTest(ctx, in.ID, in.EndpointID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body DeliveryQueued }{DeliveryQueued{id}}, nil
}

// DeliveryList is a page of an endpoint's delivery log.
type DeliveryList struct {
	Deliveries []*webhook.Delivery `json:"deliveries"`
	Next       *uuid.UUID          `json:"next,omitempty" format:"uuid" doc:"Pass as before for the next (older) page"`
}

// listWebhookDeliveries serves GET /v1/tenants/{id}/webhooks/{endpointId}/deliveries.
func (s *Server) listWebhookDeliveries(ctx context.Context, in *struct {
	EndpointPath
	Before uuid.UUID `query:"before" format:"uuid" doc:"Deliveries older than this one"`
	Limit  int       `query:"limit" minimum:"1" maximum:"200" default:"50"`
}) (*struct{ Body DeliveryList }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	var before *uuid.UUID
	if in.Before != uuid.Nil {
		before = &in.Before
	}
	list, err := s.Webhooks.Deliveries(ctx, in.ID, in.EndpointID, before, in.Limit)
	if err != nil {
		return nil, s.toProblem(err)
	}
	out := &struct{ Body DeliveryList }{DeliveryList{Deliveries: list}}
	if len(list) == in.Limit {
		out.Body.Next = &list[len(list)-1].ID
	}
	return out, nil
}

// getWebhookDelivery serves GET /v1/tenants/{id}/webhooks/{endpointId}/deliveries/{deliveryId}.
func (s *Server) getWebhookDelivery(ctx context.Context, in *DeliveryPath) (*struct{ Body *webhook.DeliveryDetail }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	d, err := s.Webhooks.DeliveryOf(ctx, in.ID, in.EndpointID, in.DeliveryID)
	if err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body *webhook.DeliveryDetail }{d}, nil
}

// redeliverWebhook serves POST /v1/tenants/{id}/webhooks/{endpointId}/deliveries/{deliveryId}/redeliver.
func (s *Server) redeliverWebhook(ctx context.Context, in *DeliveryPath) (*struct{ Body DeliveryQueued }, error) {
	if err := keyOwnerOnly(ctx, in.ID); err != nil {
		return nil, err
	}
	if err := s.Webhooks.Redeliver(ctx, in.ID, in.EndpointID, in.DeliveryID); err != nil {
		return nil, s.toProblem(err)
	}
	return &struct{ Body DeliveryQueued }{DeliveryQueued{in.DeliveryID}}, nil
}
