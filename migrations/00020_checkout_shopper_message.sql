-- +goose Up
-- What shoppers are told while checkout is paused, apart from the reason
-- operators give each other (which may name an incident or a provider).
ALTER TABLE checkout_control ADD COLUMN shopper_message text;

-- +goose Down
ALTER TABLE checkout_control DROP COLUMN shopper_message;
