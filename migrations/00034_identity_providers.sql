-- +goose Up
-- A tenant's own identity provider: buyers sign in there and bring its
-- RS256 or ES256 tokens, verified against the provider's published keys
-- (JWKS). Tokens name their issuer and audience, which name the tenant.
ALTER TABLE tenants ADD COLUMN jwks_url text,
                    ADD COLUMN jwt_issuer text,
                    ADD COLUMN jwt_audience text,
                    ADD CHECK ((jwks_url IS NULL) = (jwt_issuer IS NULL) AND (jwks_url IS NULL) = (jwt_audience IS NULL));
CREATE UNIQUE INDEX tenants_identity_provider ON tenants (jwt_issuer, jwt_audience) WHERE jwks_url IS NOT NULL;

-- +goose Down
DROP INDEX tenants_identity_provider;
ALTER TABLE tenants DROP COLUMN jwt_audience, DROP COLUMN jwt_issuer, DROP COLUMN jwks_url;
