-- +goose Up
-- An admitted shopper's turn ends when they leave or when the slot is
-- reclaimed for going unused; ended_at is either, so that API processes can
-- refresh the set of ended turns incrementally.
ALTER TABLE queue_entries ADD COLUMN reclaimed_at timestamptz, ADD COLUMN ended_at timestamptz;
UPDATE queue_entries SET ended_at = left_at WHERE left_at IS NOT NULL;
CREATE INDEX queue_entries_ended_idx ON queue_entries (product_id, ended_at) WHERE ended_at IS NOT NULL;

-- +goose Down
DROP INDEX queue_entries_ended_idx;
ALTER TABLE queue_entries DROP COLUMN reclaimed_at, DROP COLUMN ended_at;
