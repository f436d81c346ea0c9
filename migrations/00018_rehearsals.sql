-- +goose Up
-- Rehearsals: a tenant admin plays the on-sale against a shadow copy of a
-- product (rehearsal_of names the real one) with synthetic buyers, through
-- the real waiting room, claims and a test-mode payment provider. A shadow
-- is a draft that never reaches a store, a list or a quota.
ALTER TABLE products ADD COLUMN rehearsal_of uuid REFERENCES products (id);

CREATE TABLE rehearsals (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    product_id  uuid NOT NULL,           -- the real product
    shadow_id   uuid,                    -- its shadow, once made
    params      jsonb NOT NULL,          -- buyers, L, W, arrivals, share that pays
    status      text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'RUNNING', 'DONE', 'FAILED')),
    result      jsonb,
    error       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    started_at  timestamptz,
    finished_at timestamptz
);
CREATE INDEX rehearsals_product_idx ON rehearsals (product_id, created_at);

-- +goose Down
DROP TABLE rehearsals;
ALTER TABLE products DROP COLUMN rehearsal_of;
