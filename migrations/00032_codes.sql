-- +goose Up
-- Codes a tenant hands out: discount codes (a percentage or an amount off
-- an order's tickets) and presale codes (a window before the general sale,
-- open to their holders). A list shares its terms; each discount code may
-- be used by uses_per_code orders, each buyer may use the list's codes
-- per_buyer times; each presale code admits uses_per_code buyers.
CREATE TABLE code_lists (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    kind             text NOT NULL CHECK (kind IN ('DISCOUNT', 'PRESALE')),
    name             text NOT NULL,
    -- NULL: every product of the tenant
    product_id       uuid REFERENCES products (id),
    percent_off      integer CHECK (percent_off BETWEEN 1 AND 100),
    amount_off_cents bigint CHECK (amount_off_cents > 0),
    uses_per_code    integer NOT NULL DEFAULT 1 CHECK (uses_per_code > 0),
    per_buyer        integer NOT NULL DEFAULT 1 CHECK (per_buyer > 0),
    valid_from       timestamptz,
    valid_until      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'DISCOUNT' OR (percent_off IS NULL) <> (amount_off_cents IS NULL)),
    CHECK (kind <> 'PRESALE' OR (product_id IS NOT NULL AND valid_from IS NOT NULL AND valid_until IS NOT NULL
                                 AND percent_off IS NULL AND amount_off_cents IS NULL)),
    CHECK (valid_until IS NULL OR valid_from IS NULL OR valid_until > valid_from)
);
CREATE INDEX code_lists_tenant ON code_lists (tenant_id, created_at DESC);

-- Codes are unique per tenant, whatever their list: a shopper types one.
CREATE TABLE codes (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    code       text NOT NULL CHECK (code ~ '^[A-Z0-9-]{3,40}$'),
    list_id    uuid NOT NULL REFERENCES code_lists (id),
    PRIMARY KEY (tenant_id, code)
);
CREATE INDEX codes_list ON codes (list_id, code);

-- A use is taken in the order's transaction: RESERVED while the order may
-- still be paid (until its hold ends), FINAL once it is confirmed,
-- RELEASED when it fails for good. A RESERVED use past reserved_until
-- counts for nothing.
CREATE TABLE code_uses (
    id             uuid PRIMARY KEY,
    tenant_id      uuid NOT NULL,
    code           text NOT NULL,
    list_id        uuid NOT NULL REFERENCES code_lists (id),
    product_id     uuid NOT NULL,
    order_id       uuid NOT NULL UNIQUE,
    buyer_id       text NOT NULL,
    discount_cents bigint NOT NULL CHECK (discount_cents >= 0),
    state          text NOT NULL DEFAULT 'RESERVED' CHECK (state IN ('RESERVED', 'FINAL', 'RELEASED')),
    reserved_until timestamptz NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    ended_at       timestamptz
);
CREATE INDEX code_uses_code ON code_uses (tenant_id, code) WHERE state <> 'RELEASED';
CREATE INDEX code_uses_buyer ON code_uses (list_id, buyer_id) WHERE state <> 'RELEASED';

-- A buyer let into a presale with a code: once per list, counted against
-- the code's uses.
CREATE TABLE presale_uses (
    list_id    uuid NOT NULL REFERENCES code_lists (id),
    buyer_id   text NOT NULL,
    tenant_id  uuid NOT NULL,
    code       text NOT NULL,
    product_id uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, buyer_id)
);
CREATE INDEX presale_uses_code ON presale_uses (tenant_id, code);
CREATE INDEX presale_uses_product ON presale_uses (product_id, buyer_id);

-- What an order's code took off its tickets.
ALTER TABLE orders ADD COLUMN discount_cents bigint NOT NULL DEFAULT 0 CHECK (discount_cents >= 0),
                   ADD COLUMN discount_code text;

-- +goose Down
ALTER TABLE orders DROP COLUMN discount_code, DROP COLUMN discount_cents;
DROP TABLE presale_uses, code_uses, codes, code_lists;
