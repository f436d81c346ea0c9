-- +goose Up
-- Transfers: a ticket holder hands a ticket to another e-mail address. The
-- old ticket becomes TRANSFERRED (its code stops admitting at once) and a
-- new ticket of the same order and seat is issued to the receiver, whose
-- buyer identity is the passwordless login's for that address; the order
-- keeps both, and ticket_transfers the history.

-- The product's policy: off unless transfer_hours_before is set (until that
-- many hours before doors, or the start); a seat's ticket changes hands at
-- most transfer_max times.
ALTER TABLE products
    ADD COLUMN transfer_hours_before integer CHECK (transfer_hours_before BETWEEN 0 AND 8760),
    ADD COLUMN transfer_max integer NOT NULL DEFAULT 1 CHECK (transfer_max BETWEEN 1 AND 10);

-- Who holds a ticket when it is not the order's buyer, and how many times
-- its seat changed hands to get there.
ALTER TABLE tickets
    ADD COLUMN holder_buyer_id  text,
    ADD COLUMN holder_email     text,
    ADD COLUMN transferred_from uuid REFERENCES tickets (id),
    ADD COLUMN transfers        integer NOT NULL DEFAULT 0;
CREATE INDEX tickets_holder_idx ON tickets (holder_buyer_id) WHERE holder_buyer_id IS NOT NULL;

-- The per-buyer limit counts what a buyer holds: their holds' numbers less
-- those refunded or given away, plus the tickets they received.
ALTER TABLE holds ADD COLUMN given integer NOT NULL DEFAULT 0;
ALTER TABLE buyer_limits ADD COLUMN received integer NOT NULL DEFAULT 0 CHECK (received >= 0);

CREATE TABLE ticket_transfers (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    order_id        uuid NOT NULL REFERENCES orders (id),
    from_ticket     uuid NOT NULL UNIQUE REFERENCES tickets (id),
    to_ticket       uuid NOT NULL UNIQUE REFERENCES tickets (id),
    from_buyer      text NOT NULL,
    to_buyer        text NOT NULL,
    to_email        text NOT NULL,
    -- The giver's request key: the same key answers with the same transfer.
    idempotency_key text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, from_buyer, idempotency_key)
);
CREATE INDEX ticket_transfers_order_idx ON ticket_transfers (order_id);

-- +goose Down
DROP TABLE ticket_transfers;
ALTER TABLE buyer_limits DROP COLUMN received;
ALTER TABLE holds DROP COLUMN given;
DROP INDEX tickets_holder_idx;
DELETE FROM tickets WHERE transferred_from IS NOT NULL;
UPDATE tickets SET status = 'VALID' WHERE status = 'TRANSFERRED';
ALTER TABLE tickets DROP COLUMN transfers, DROP COLUMN transferred_from, DROP COLUMN holder_email, DROP COLUMN holder_buyer_id;
ALTER TABLE products DROP COLUMN transfer_max, DROP COLUMN transfer_hours_before;
