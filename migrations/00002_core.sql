-- +goose Up
-- The core schema: tenants and their keys, products with their inventory row,
-- reservation requests, holds and the claims that the unique index arbitrates.

CREATE TABLE tenants (
    id                 uuid PRIMARY KEY,
    slug               text NOT NULL UNIQUE,
    name               text NOT NULL,
    domains            text[] NOT NULL DEFAULT '{}',
    theme              jsonb NOT NULL DEFAULT '{}',
    -- HS256 secret the tenant's own login uses to sign buyer tokens. Kept in
    -- clear because verifying an HMAC needs the secret itself.
    buyer_token_secret text NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    role       text NOT NULL CHECK (role IN ('tenant-admin', 'operator')),
    -- SHA-256 of the key: keys are long random strings, so a fast hash is
    -- enough, and the key itself is shown once and never stored.
    key_hash   bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

CREATE TABLE products (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    slug            text NOT NULL,
    name            text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('seated', 'numbered')),
    capacity        integer NOT NULL CHECK (capacity BETWEEN 1 AND 10000000),
    layout          jsonb,
    price_cents     bigint NOT NULL CHECK (price_cents >= 0),
    currency        text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    per_buyer_limit integer NOT NULL CHECK (per_buyer_limit BETWEEN 1 AND 100),
    hold_seconds    integer NOT NULL CHECK (hold_seconds BETWEEN 30 AND 86400),
    on_sale_at      timestamptz NOT NULL,
    status          text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'CLOSED')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, slug)
);
CREATE INDEX products_tenant_idx ON products (tenant_id, created_at);

-- One row per product: the availability bitmap (bit n-1 set = number n held
-- or sold) and the counters beside it. Only internal/inventory writes it.
CREATE TABLE inventory (
    product_id uuid PRIMARY KEY REFERENCES products (id),
    capacity   integer NOT NULL,
    available  integer NOT NULL CHECK (available >= 0),
    held       integer NOT NULL DEFAULT 0 CHECK (held >= 0),
    sold       integer NOT NULL DEFAULT 0 CHECK (sold >= 0),
    version    bigint NOT NULL DEFAULT 0,
    bitmap     bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (available = capacity - held - sold)
);
-- The bitmap is rewritten on every claim batch; compressing it costs CPU while
-- the row lock is held and saves little, so store it uncompressed.
ALTER TABLE inventory ALTER COLUMN bitmap SET STORAGE EXTERNAL;

CREATE TABLE reservation_requests (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    product_id      uuid NOT NULL REFERENCES products (id),
    buyer_id        text NOT NULL,
    idempotency_key text NOT NULL,
    -- SHA-256 of the canonical request body: a replay with the same key and a
    -- different body is refused.
    request_hash    bytea NOT NULL,
    numbers         integer[],
    quantity        integer,
    mode            text CHECK (mode IN ('best', 'random')),
    accept_fewer    boolean NOT NULL DEFAULT false,
    status          text NOT NULL DEFAULT 'QUEUED'
                    CHECK (status IN ('QUEUED', 'HELD', 'REJECTED', 'EXPIRED', 'RELEASED', 'CONVERTED')),
    reason          text,
    hold_id         uuid,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    enqueued_at     timestamptz,
    processed_at    timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    UNIQUE (tenant_id, buyer_id, idempotency_key),
    CHECK ((numbers IS NULL) <> (quantity IS NULL))
);
-- The claim worker's work list: QUEUED requests of one product in arrival order.
CREATE INDEX reservation_requests_queued_idx ON reservation_requests (product_id, created_at, id)
    WHERE status = 'QUEUED';

-- Serialises claims of one buyer on one product: every claim transaction locks
-- the rows of its buyers (sorted) before it counts their live holds. The count
-- itself is derived from holds so that expiry never leaves it stale.
CREATE TABLE buyer_limits (
    product_id    uuid NOT NULL,
    buyer_id      text NOT NULL,
    last_claim_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (product_id, buyer_id)
);

-- buyer_limits, holds and claims are written only by the claim transaction
-- and the code that ends holds, hundreds of rows per commit; they carry no
-- foreign keys because the per-row trigger checks cost more than the writes.
CREATE TABLE holds (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL,
    product_id  uuid NOT NULL,
    buyer_id    text NOT NULL,
    request_id  uuid NOT NULL,
    numbers     integer[] NOT NULL,
    state       text NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'CONVERTED', 'EXPIRED', 'RELEASED')),
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz
);
CREATE INDEX holds_buyer_idx ON holds (product_id, buyer_id) WHERE state IN ('ACTIVE', 'CONVERTED');
-- The sweeper's and the claim's way to expired holds (and so to the claims
-- they may take over).
CREATE INDEX holds_active_expiry_idx ON holds (product_id, expires_at) WHERE state = 'ACTIVE';

-- One row per claimed number; free numbers have no row. The primary key on
-- (product_id, number) is the arbiter: two transactions can never both own a
-- number. It is the only index: claims are found through their hold's numbers.
CREATE TABLE claims (
    product_id uuid NOT NULL,
    number     integer NOT NULL,
    hold_id    uuid NOT NULL,
    state      text NOT NULL CHECK (state IN ('HELD', 'SOLD')),
    expires_at timestamptz,
    PRIMARY KEY (product_id, number)
);

CREATE TABLE outbox (
    id           bigserial PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    topic        text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE outbox, claims, holds, buyer_limits, reservation_requests, inventory, products, api_keys, tenants;
