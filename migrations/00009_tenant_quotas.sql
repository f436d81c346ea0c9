-- +goose Up
-- Per-tenant limits on what a tenant may create; NULL takes the deployment's
-- defaults (BOXOFFICE_TENANT_MAX_PRODUCTS, BOXOFFICE_TENANT_MAX_CAPACITY).
ALTER TABLE tenants ADD COLUMN max_products integer, ADD COLUMN max_capacity bigint;

-- +goose Down
ALTER TABLE tenants DROP COLUMN max_products, DROP COLUMN max_capacity;
