-- +goose Up
-- No usable secret at rest. A ticket's code is its id and an HMAC under
-- BOXOFFICE_TICKET_SECRET, derived whenever it is shown, so it is not kept:
-- a backup holds no code a gate would accept.
ALTER TABLE tickets DROP COLUMN code;

-- order.confirmed events carried the codes; their consumer reads only the
-- order id.
UPDATE outbox
SET payload = jsonb_set(payload, '{tickets}',
        (SELECT coalesce(jsonb_agg(t - 'code'), '[]'::jsonb) FROM jsonb_array_elements(payload -> 'tickets') t))
WHERE topic = 'order.confirmed' AND jsonb_typeof(payload -> 'tickets') = 'array';

-- Login codes are now HMACs under BOXOFFICE_SECRETS_KEY: the live ones,
-- plain salted hashes, can no longer be checked and expire now (they lived
-- ten minutes; the send and try counts stay).
UPDATE login_codes SET expires_at = now() WHERE expires_at > now();

-- Buyer-token secrets are sealed by `boxoffice migrate` after this
-- migration (tenant.Store.Reseal), with the key from the environment.

-- +goose Down
-- Codes cannot be restored in SQL: they are derived from the ticket secret.
ALTER TABLE tickets ADD COLUMN code text;
