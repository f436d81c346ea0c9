-- +goose Up
-- A shopper may cancel their own order until some hours before doors (or
-- the start, when doors are not set), for a fee per ticket: the product's
-- policy, off unless the tenant sets cancel_hours_before. A cancellation is
-- a refund of every valid ticket less the fee, and ends the order
-- CANCELLED.
ALTER TABLE products
    ADD COLUMN cancel_hours_before integer CHECK (cancel_hours_before BETWEEN 0 AND 8760),
    ADD COLUMN cancel_fee_cents bigint NOT NULL DEFAULT 0 CHECK (cancel_fee_cents >= 0);
ALTER TABLE refunds
    ADD COLUMN kind text NOT NULL DEFAULT 'REFUND' CHECK (kind IN ('REFUND', 'CANCELLATION')),
    ADD COLUMN fee_cents bigint NOT NULL DEFAULT 0 CHECK (fee_cents >= 0);

-- +goose Down
ALTER TABLE refunds DROP COLUMN kind, DROP COLUMN fee_cents;
ALTER TABLE products DROP COLUMN cancel_hours_before, DROP COLUMN cancel_fee_cents;
