-- +goose Up
-- A waiting list per product. Numbers that come back after a sell-out are
-- offered to the next in line: an offer withholds its numbers from sale
-- (inventory.offered), so available = capacity - held - sold - offered.
ALTER TABLE inventory ADD COLUMN offered integer NOT NULL DEFAULT 0 CHECK (offered >= 0);
ALTER TABLE inventory DROP CONSTRAINT inventory_check;
ALTER TABLE inventory ADD CONSTRAINT inventory_check CHECK (available = capacity - held - sold - offered);

CREATE TABLE waitlist_entries (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    product_id       uuid NOT NULL REFERENCES products (id),
    buyer_id         text NOT NULL,
    email            text NOT NULL,
    -- how many numbers the shopper wants (at most the per-buyer limit)
    quantity         integer NOT NULL CHECK (quantity > 0),
    state            text NOT NULL DEFAULT 'WAITING'
                     CHECK (state IN ('WAITING', 'OFFERED', 'CONVERTED', 'EXPIRED', 'DECLINED', 'LEFT')),
    -- the line's order: offers go to the lowest first
    seq              bigserial NOT NULL,
    joined_at        timestamptz NOT NULL DEFAULT now(),
    offered_quantity integer CHECK (offered_quantity > 0),
    offered_at       timestamptz,
    offer_expires_at timestamptz,
    hold_id          uuid,
    ended_at         timestamptz,
    CHECK (state <> 'OFFERED' OR (offered_quantity IS NOT NULL AND offer_expires_at IS NOT NULL))
);
-- One place in line per buyer and product at a time.
CREATE UNIQUE INDEX waitlist_entries_live ON waitlist_entries (product_id, buyer_id)
    WHERE state IN ('WAITING', 'OFFERED');
CREATE INDEX waitlist_entries_line ON waitlist_entries (product_id, seq) WHERE state = 'WAITING';
CREATE INDEX waitlist_entries_offers ON waitlist_entries (product_id, offer_expires_at) WHERE state = 'OFFERED';
CREATE INDEX waitlist_entries_tenant ON waitlist_entries (tenant_id, product_id);

-- A request made with an offer: the claim spends the offer.
ALTER TABLE reservation_requests ADD COLUMN offer_id uuid;

-- +goose Down
ALTER TABLE reservation_requests DROP COLUMN offer_id;
DROP TABLE waitlist_entries;
ALTER TABLE inventory DROP CONSTRAINT inventory_check;
ALTER TABLE inventory ADD CONSTRAINT inventory_check CHECK (available = capacity - held - sold);
ALTER TABLE inventory DROP COLUMN offered;
