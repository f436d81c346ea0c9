-- +goose Up
-- Check-in at the gate: the first scan of a ticket records when and by which
-- key; later scans report that it was already used.
ALTER TABLE tickets ADD COLUMN checked_in_at timestamptz, ADD COLUMN checked_in_by text;

-- +goose Down
ALTER TABLE tickets DROP COLUMN checked_in_at, DROP COLUMN checked_in_by;
