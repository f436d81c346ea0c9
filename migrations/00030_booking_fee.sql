-- +goose Up
-- A booking fee per ticket, on top of the seat's price: shown with the
-- prices, added to each order (orders.amount_cents is what was charged,
-- fees included; orders.fee_cents is their part of it) and refunded with
-- the ticket. Like the price, it cannot change once a number is held.
ALTER TABLE products ADD COLUMN fee_cents bigint NOT NULL DEFAULT 0 CHECK (fee_cents >= 0);
ALTER TABLE orders ADD COLUMN fee_cents bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE orders DROP COLUMN fee_cents;
ALTER TABLE products DROP COLUMN fee_cents;
