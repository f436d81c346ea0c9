-- +goose Up
-- An order keeps its numbers and their seat names as they were sold: its
-- reads (a shopper polls while paying) need neither the hold nor the
-- product's seat map. Orders from before keep empty seats; they are named
-- from the seat map when read.
ALTER TABLE orders ADD COLUMN numbers integer[] NOT NULL DEFAULT '{}', ADD COLUMN seats text[] NOT NULL DEFAULT '{}';
UPDATE orders o SET numbers = h.numbers FROM holds h WHERE h.id = o.hold_id;

-- +goose Down
ALTER TABLE orders DROP COLUMN numbers, DROP COLUMN seats;
