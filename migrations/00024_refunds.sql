-- +goose Up
-- Undoing a sale: refunds of a whole order or some of its tickets.
--
-- A refund is a provider call with an idempotency key of its own
-- (provider_key), made by a job after the row is committed, so an unknown
-- outcome is resolved by asking with that key and never becomes a second
-- refund. Its tickets are VOID from the moment it is asked for.

-- Whether a refunded seat returns to stock (resell) or stays sold (keep).
ALTER TABLE products ADD COLUMN refund_policy text NOT NULL DEFAULT 'resell'
    CHECK (refund_policy IN ('resell', 'keep'));

-- REFUND_PENDING while a refund of the order is at the provider,
-- REFUND_FAILED when the provider refused it (retried with the same key or
-- settled by hand), REFUNDED once every ticket is refunded; a partly refunded
-- order is CONFIRMED again with refunded_cents > 0.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
    'PENDING_PAYMENT', 'AUTHORIZED', 'CONFIRMED', 'FAILED', 'EXPIRED', 'VOIDED',
    'REFUND_PENDING', 'REFUND_FAILED', 'REFUNDED', 'CANCELLED'));
ALTER TABLE orders ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE orders ADD CONSTRAINT orders_refunded_check CHECK (refunded_cents BETWEEN 0 AND amount_cents);

-- A ticket is VALID until its refund is asked for (VOID); TRANSFERRED when
-- it was handed to someone else under a new code. A resold seat gets a new
-- ticket, so only one VALID ticket per seat.
ALTER TABLE tickets ADD COLUMN status text NOT NULL DEFAULT 'VALID'
    CHECK (status IN ('VALID', 'VOID', 'TRANSFERRED'));
ALTER TABLE tickets ADD COLUMN voided_at timestamptz;
ALTER TABLE tickets ADD COLUMN refund_id uuid;
ALTER TABLE tickets DROP CONSTRAINT tickets_product_id_number_key;
CREATE UNIQUE INDEX tickets_valid_number_idx ON tickets (product_id, number) WHERE status = 'VALID';

-- How many of a converted hold's numbers were refunded: they no longer
-- count against the buyer's limit.
ALTER TABLE holds ADD COLUMN refunded integer NOT NULL DEFAULT 0;

CREATE TABLE refunds (
    id                 uuid PRIMARY KEY,
    tenant_id          uuid NOT NULL,
    order_id           uuid NOT NULL REFERENCES orders (id),
    -- The admin's request key: the same key answers with the same refund.
    idempotency_key    text NOT NULL,
    amount_cents       bigint NOT NULL CHECK (amount_cents > 0),
    currency           text NOT NULL,
    ticket_ids         uuid[] NOT NULL,
    numbers            integer[] NOT NULL,
    reason             text NOT NULL,
    requested_by       text NOT NULL,
    -- PENDING: the provider has not answered; UNKNOWN: it may have acted,
    -- ask with provider_key; REFUNDED / FAILED: its definitive answer
    -- (FAILED is retried with the same key, or settled by hand).
    status             text NOT NULL DEFAULT 'PENDING'
                       CHECK (status IN ('PENDING', 'UNKNOWN', 'REFUNDED', 'FAILED')),
    provider_key       text NOT NULL UNIQUE,
    provider_refund_id text,
    last_error         text,
    settled_by_hand    text,
    -- Whether the seats went back to stock (the product's policy when asked).
    resell             boolean NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    refunded_at        timestamptz,
    -- When the buyer was told (the mail job records it after sending).
    notified_at        timestamptz,
    UNIQUE (tenant_id, idempotency_key)
);
CREATE INDEX refunds_order_idx ON refunds (order_id);
CREATE INDEX refunds_open_idx ON refunds (updated_at) WHERE status IN ('PENDING', 'UNKNOWN');

-- +goose Down
DROP TABLE refunds;
ALTER TABLE holds DROP COLUMN refunded;
DROP INDEX tickets_valid_number_idx;
DELETE FROM tickets WHERE status <> 'VALID';
ALTER TABLE tickets ADD CONSTRAINT tickets_product_id_number_key UNIQUE (product_id, number);
ALTER TABLE tickets DROP COLUMN refund_id, DROP COLUMN voided_at, DROP COLUMN status;
ALTER TABLE orders DROP CONSTRAINT orders_refunded_check, DROP COLUMN refunded_cents;
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
UPDATE orders SET status = 'REFUNDED' WHERE status IN ('REFUND_PENDING', 'REFUND_FAILED', 'CANCELLED');
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
    'PENDING_PAYMENT', 'AUTHORIZED', 'CONFIRMED', 'FAILED', 'EXPIRED', 'VOIDED', 'REFUNDED'));
ALTER TABLE products DROP COLUMN refund_policy;
