-- +goose Up
-- One-time login codes for stores whose tenants have no login of their own.
-- One live code per identifier (an e-mail address or a phone number): a new
-- request replaces it. Stored as a salted hash; dead after expiry, use or
-- five wrong tries. The send window limits codes per identifier.
CREATE TABLE login_codes (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    identifier    text NOT NULL,
    salt          bytea NOT NULL,
    code_hash     bytea NOT NULL,
    expires_at    timestamptz NOT NULL,
    tries         integer NOT NULL DEFAULT 0,
    used_at       timestamptz,
    window_start  timestamptz NOT NULL DEFAULT now(),
    sends         integer NOT NULL DEFAULT 1,
    PRIMARY KEY (tenant_id, identifier)
);

-- The stable, opaque buyer id each identifier logs in as (a buyer token's sub).
CREATE TABLE login_buyers (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    identifier text NOT NULL,
    buyer_id   text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, identifier),
    UNIQUE (tenant_id, buyer_id)
);

-- +goose Down
DROP TABLE login_buyers, login_codes;
