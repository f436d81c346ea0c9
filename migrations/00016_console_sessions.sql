-- +goose Up
-- Console sign-ins: an API key or the admin key exchanged for a session
-- cookie. Only a hash of the cookie is kept; the row says who signed in
-- (the platform admin, or a tenant's key with its role) and when it ends.
CREATE TABLE console_sessions (
    token_hash   bytea PRIMARY KEY,
    csrf_token   text NOT NULL,
    admin        boolean NOT NULL,
    tenant_id    uuid,
    key_id       uuid,
    role         text,
    client       text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL, -- the absolute end, whatever the use
    ended_at     timestamptz,          -- signed out
    CHECK (admin OR (tenant_id IS NOT NULL AND key_id IS NOT NULL AND role IS NOT NULL))
);
CREATE INDEX console_sessions_expiry_idx ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
