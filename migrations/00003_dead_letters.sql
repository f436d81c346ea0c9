-- +goose Up
-- Set when a request's queue message is about to go to the dead-letter queue
-- (SQS): the repair job leaves such requests to the operator's redrive.
ALTER TABLE reservation_requests ADD COLUMN dead_lettered_at timestamptz;

-- +goose Down
ALTER TABLE reservation_requests DROP COLUMN dead_lettered_at;
