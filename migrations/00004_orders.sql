-- +goose Up
-- Checkout: orders for holds, payment attempts at a provider, provider
-- webhooks, tickets, and the switch that pauses new checkouts.

CREATE TABLE orders (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    product_id      uuid NOT NULL,
    buyer_id        text NOT NULL,
    hold_id         uuid NOT NULL UNIQUE, -- one order per hold
    idempotency_key text NOT NULL,
    amount_cents    bigint NOT NULL,
    currency        text NOT NULL,
    email           text, -- where the tickets go
    status          text NOT NULL DEFAULT 'PENDING_PAYMENT'
                    CHECK (status IN ('PENDING_PAYMENT', 'AUTHORIZED', 'CONFIRMED', 'FAILED', 'EXPIRED', 'VOIDED', 'REFUNDED')),
    reason          text,
    capture_status  text NOT NULL DEFAULT 'NONE' CHECK (capture_status IN ('NONE', 'PENDING', 'CAPTURED', 'FAILED')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    confirmed_at    timestamptz,
    tickets_sent_at timestamptz,
    UNIQUE (tenant_id, buyer_id, idempotency_key)
);

-- One row per call sequence at the provider. provider_key is the idempotency
-- key sent with the authorization: the same key always means the same
-- authorization, so an UNKNOWN outcome is resolved by asking with it.
CREATE TABLE payment_attempts (
    id                  uuid PRIMARY KEY,
    order_id            uuid NOT NULL REFERENCES orders (id),
    provider            text NOT NULL,
    provider_key        text NOT NULL UNIQUE,
    payment_method      text NOT NULL,
    status              text NOT NULL DEFAULT 'PENDING'
                        CHECK (status IN ('PENDING', 'UNKNOWN', 'AUTHORIZED', 'DECLINED', 'VOIDED', 'CAPTURED', 'REFUNDED')),
    provider_payment_id text,
    last_error          text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_attempts_order_idx ON payment_attempts (order_id);
CREATE INDEX payment_attempts_open_idx ON payment_attempts (updated_at) WHERE status IN ('PENDING', 'UNKNOWN');
CREATE UNIQUE INDEX payment_attempts_payment_idx ON payment_attempts (provider, provider_payment_id)
    WHERE provider_payment_id IS NOT NULL;

CREATE TABLE webhook_events (
    provider     text NOT NULL,
    event_id     text NOT NULL,
    type         text NOT NULL,
    payment_id   text,
    payment_key  text, -- the authorization's idempotency key, when the event carries it
    payload      jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    processed_at timestamptz,
    PRIMARY KEY (provider, event_id)
);

CREATE TABLE tickets (
    id         uuid PRIMARY KEY,
    order_id   uuid NOT NULL REFERENCES orders (id),
    product_id uuid NOT NULL,
    number     integer NOT NULL,
    code       text NOT NULL UNIQUE,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (product_id, number)
);
CREATE INDEX tickets_order_idx ON tickets (order_id);

-- A single row: whether new checkouts are refused, and why.
CREATE TABLE checkout_control (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    paused     boolean NOT NULL DEFAULT false,
    reason     text,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO checkout_control DEFAULT VALUES;

-- +goose Down
DROP TABLE checkout_control, tickets, webhook_events, payment_attempts, orders;
