-- +goose Up
-- Keys can be revoked and labelled (dev revokes its own demo key at each
-- start); a tenant's buyer-token secret can be rotated with an overlap in
-- which tokens signed with the previous secret still verify.
ALTER TABLE api_keys ADD COLUMN label text NOT NULL DEFAULT '';
ALTER TABLE tenants
    ADD COLUMN previous_buyer_token_secret text,
    ADD COLUMN previous_secret_expires_at  timestamptz;

-- +goose Down
ALTER TABLE tenants DROP COLUMN previous_buyer_token_secret, DROP COLUMN previous_secret_expires_at;
ALTER TABLE api_keys DROP COLUMN label;
