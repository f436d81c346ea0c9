-- +goose Up
-- What operators and admins did: who, when, what, from where. Written by
-- the API for every state-changing operation of theirs; read with GET /v1/audit.
CREATE TABLE audit_log (
    id        bigserial PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    tenant_id uuid,          -- NULL: a platform action
    actor     text NOT NULL, -- platform-admin, or "<role> key <id>"
    action    text NOT NULL, -- the operation id
    target    text NOT NULL, -- method and path
    status    integer NOT NULL,
    client    text NOT NULL
);
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id);

-- +goose Down
DROP TABLE audit_log;
