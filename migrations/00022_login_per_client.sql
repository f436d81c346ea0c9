-- +goose Up
-- Login limits count per identifier and client, not per identifier alone:
-- a stranger asking for someone's codes, or guessing at them, runs out of
-- tries without locking the owner out or killing the owner's code.
CREATE TABLE login_clients (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    identifier   text NOT NULL,
    client       text NOT NULL, -- an IPv4 address or an IPv6 /64
    window_start timestamptz NOT NULL DEFAULT now(),
    sends        integer NOT NULL DEFAULT 0,
    tries        integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, identifier, client)
);
CREATE INDEX login_clients_window_idx ON login_clients (window_start);

-- SMS codes sent per tenant and UTC day, against the daily cap.
CREATE TABLE login_sms_days (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    day       date NOT NULL,
    sent      integer NOT NULL,
    PRIMARY KEY (tenant_id, day)
);

-- The calling codes (+351, +44, ...) a tenant's store sends SMS codes to;
-- none: no SMS.
ALTER TABLE tenants ADD COLUMN sms_countries text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE tenants DROP COLUMN sms_countries;
DROP TABLE login_sms_days, login_clients;
