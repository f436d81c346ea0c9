-- +goose Up
-- The waiting room keeps its own copy of what it decides by (the tenant, the
-- opening time, the per-buyer limit and its settings), written with the
-- product and moved with it when the opening is rescheduled, so that joins,
-- polls and admission read no other package's table.
ALTER TABLE waiting_rooms
    ADD COLUMN tenant_id uuid,
    ADD COLUMN opens_at timestamptz,
    ADD COLUMN per_buyer_limit integer,
    ADD COLUMN settings jsonb;
UPDATE waiting_rooms r
SET tenant_id = p.tenant_id, opens_at = p.on_sale_at, per_buyer_limit = p.per_buyer_limit, settings = p.waiting_room
FROM products p WHERE p.id = r.product_id;
ALTER TABLE waiting_rooms
    ALTER COLUMN tenant_id SET NOT NULL,
    ALTER COLUMN opens_at SET NOT NULL,
    ALTER COLUMN per_buyer_limit SET NOT NULL,
    ALTER COLUMN settings SET NOT NULL;

-- When admission first saw the entry's buyer reserving: such an entry is never
-- reclaimed, and is not looked up again.
ALTER TABLE queue_entries ADD COLUMN reserved_at timestamptz;

-- +goose Down
ALTER TABLE queue_entries DROP COLUMN reserved_at;
ALTER TABLE waiting_rooms DROP COLUMN tenant_id, DROP COLUMN opens_at, DROP COLUMN per_buyer_limit, DROP COLUMN settings;
