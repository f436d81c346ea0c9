-- +goose Up
-- Webhooks to tenants: endpoints a tenant subscribes to event types, and
-- the deliveries of those events to them (Standard Webhooks signatures).
-- The secret signs every delivery, so it is kept sealed (atrest), not
-- hashed; after a rotation the previous one still signs beside it until
-- previous_until. An endpoint that keeps failing is disabled once it has
-- failed for the deployment's disable-after (a day) since failing_since.
CREATE TABLE webhook_endpoints (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    url             text NOT NULL,
    description     text NOT NULL DEFAULT '',
    event_types     text[] NOT NULL, -- empty: every type
    alert_email     text NOT NULL,
    secret          text NOT NULL,
    previous_secret text,
    previous_until  timestamptz,
    sequence        bigint NOT NULL DEFAULT 0, -- the last delivery's
    enabled         boolean NOT NULL DEFAULT true,
    disabled_reason text NOT NULL DEFAULT '',
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id);

-- One delivery per event and endpoint (event_id is the outbox row; NULL
-- for a test event sent from the console). The body is kept as sent: a
-- retry or a redelivery sends the same bytes under the same webhook-id.
CREATE TABLE webhook_deliveries (
    id           uuid PRIMARY KEY,
    endpoint_id  uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id     bigint,
    event_type   text NOT NULL,
    sequence     bigint NOT NULL,
    body         text NOT NULL,
    status       text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts     integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (endpoint_id, event_id)
);
-- ids are UUIDv7: in the order the deliveries were made.
CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, id);

-- Every try: what the endpoint answered (status_code NULL when nothing
-- came back), how long it took and the start of its answer.
CREATE TABLE webhook_attempts (
    id          bigserial PRIMARY KEY,
    delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL DEFAULT now(),
    status_code integer,
    error       text NOT NULL DEFAULT '',
    duration_ms integer NOT NULL,
    excerpt     text NOT NULL DEFAULT '',
    manual      boolean NOT NULL DEFAULT false
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE webhook_attempts, webhook_deliveries, webhook_endpoints;
