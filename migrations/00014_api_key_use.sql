-- +goose Up
-- So that a list of keys means something: the key's first characters (the
-- rest is never stored) and when it was last used.
ALTER TABLE api_keys ADD COLUMN prefix text NOT NULL DEFAULT '', ADD COLUMN last_used_at timestamptz;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN prefix, DROP COLUMN last_used_at;
