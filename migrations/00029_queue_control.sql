-- +goose Up
-- The sale while it runs: a tenant admin may take a shopper out of a
-- waiting room (their turn ends, REMOVED). Admission's pace (L and W) and
-- its pause live in the room's settings, which every step reads.
ALTER TABLE queue_entries ADD COLUMN removed_at timestamptz;

-- +goose Down
ALTER TABLE queue_entries DROP COLUMN removed_at;
