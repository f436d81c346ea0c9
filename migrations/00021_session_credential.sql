-- +goose Up
-- A console session dies with the credential it was opened with: the row
-- keeps a SHA-256 of that key (the admin key, or the tenant key, whose
-- api_keys.key_hash is the same digest) and every use checks it is still
-- the credential in force. Sessions opened before cannot be checked, so
-- they end: their users sign in again.
ALTER TABLE console_sessions ADD COLUMN credential_hash bytea;
UPDATE console_sessions SET ended_at = now() WHERE ended_at IS NULL;

-- +goose Down
ALTER TABLE console_sessions DROP COLUMN credential_hash;
