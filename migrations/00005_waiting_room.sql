-- +goose Up
-- The virtual waiting room: one room per product that turns it on, and one
-- entry per buyer. Positions of those present before opening come from a
-- draw over a seed committed to in advance; later arrivals queue in order.

ALTER TABLE products ADD COLUMN waiting_room jsonb;

CREATE TABLE waiting_rooms (
    product_id       uuid PRIMARY KEY REFERENCES products (id),
    seed             bytea NOT NULL,   -- secret until the draw, then published
    commitment       text NOT NULL,    -- hex SHA-256 of the seed, public from the start
    drawn_at         timestamptz,
    pre_open_count   bigint NOT NULL DEFAULT 0, -- entrants in the draw
    next_position    bigint NOT NULL DEFAULT 0, -- last position given to a later arrival
    admitted_through bigint NOT NULL DEFAULT 0, -- "now serving": positions up to this are admitted
    sold_out         boolean NOT NULL DEFAULT false,
    rate_per_second  double precision NOT NULL DEFAULT 0,
    rate_reason      text,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE queue_entries (
    id          uuid PRIMARY KEY,
    product_id  uuid NOT NULL,
    tenant_id   uuid NOT NULL,
    buyer_id    text NOT NULL,
    joined_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    pre_open    boolean NOT NULL,
    position    bigint,
    admitted_at timestamptz,
    left_at     timestamptz,
    UNIQUE (product_id, buyer_id),
    UNIQUE (product_id, position)
);
CREATE INDEX queue_entries_unplaced_idx ON queue_entries (product_id, joined_at) WHERE position IS NULL;

-- Each admission step: positions up to "through" were admitted at "at"; a
-- poll derives an admitted shopper's access-token expiry from it.
CREATE TABLE admission_steps (
    product_id uuid NOT NULL,
    through    bigint NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (product_id, through)
);

-- +goose Down
DROP TABLE admission_steps, queue_entries, waiting_rooms;
ALTER TABLE products DROP COLUMN waiting_room;
