-- +goose Up
-- Cancelling a date: the product's publication becomes CANCELLED (the
-- claim refuses new reservations with EVENT_CANCELLED, the store says so,
-- no ticket checks in) and a job refunds every order, one refund per order
-- under the key event-cancel-<order>, and mails each buyer once. The job
-- sets cancel_finished_at when no order holds a valid ticket and none is
-- still being paid.
ALTER TABLE products DROP CONSTRAINT products_publication_check;
ALTER TABLE products ADD CONSTRAINT products_publication_check
    CHECK (publication IN ('DRAFT', 'PUBLISHED', 'CLOSED', 'CANCELLED'));
ALTER TABLE products
    ADD COLUMN cancelled_at       timestamptz,
    ADD COLUMN cancel_reason      text,
    ADD COLUMN cancelled_by       text,
    ADD COLUMN cancel_finished_at timestamptz,
    ADD CONSTRAINT products_cancelled_check CHECK ((publication = 'CANCELLED') = (cancelled_at IS NOT NULL));

ALTER TABLE refunds DROP CONSTRAINT refunds_kind_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_kind_check CHECK (kind IN ('REFUND', 'CANCELLATION', 'EVENT_CANCELLED'));
-- A free order of a cancelled date is "refunded" nothing: its tickets are
-- voided all the same, and its buyer told.
ALTER TABLE refunds DROP CONSTRAINT refunds_amount_cents_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_amount_cents_check CHECK (amount_cents > 0 OR (amount_cents = 0 AND kind = 'EVENT_CANCELLED'));

-- +goose Down
DELETE FROM refunds WHERE kind = 'EVENT_CANCELLED';
ALTER TABLE refunds DROP CONSTRAINT refunds_amount_cents_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_amount_cents_check CHECK (amount_cents > 0);
ALTER TABLE refunds DROP CONSTRAINT refunds_kind_check;
ALTER TABLE refunds ADD CONSTRAINT refunds_kind_check CHECK (kind IN ('REFUND', 'CANCELLATION'));
ALTER TABLE products DROP CONSTRAINT products_cancelled_check,
    DROP COLUMN cancelled_at, DROP COLUMN cancel_reason, DROP COLUMN cancelled_by, DROP COLUMN cancel_finished_at;
UPDATE products SET publication = 'CLOSED' WHERE publication = 'CANCELLED';
ALTER TABLE products DROP CONSTRAINT products_publication_check;
ALTER TABLE products ADD CONSTRAINT products_publication_check CHECK (publication IN ('DRAFT', 'PUBLISHED', 'CLOSED'));
