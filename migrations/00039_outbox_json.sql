-- +goose Up
-- An event's payload is written once, by json.Marshal, and read back whole
-- by the relay; nothing queries inside it on a hot path. As jsonb every
-- write parsed it and every read rendered it back to text, and pglz
-- compressed it: a claim batch's holds.created event (150 holds, 23 KB)
-- cost the database about 0.8 ms to store and 0.4 ms to read. As json,
-- compressed with lz4, 0.3 and 0.07 ms (docs/benchmark-history.md).
-- Operators such as ->> work on json as on jsonb.
ALTER TABLE outbox ALTER COLUMN payload TYPE json USING payload::json;
-- A server built without lz4 keeps its default compression (pglz).
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION default;
ALTER TABLE outbox ALTER COLUMN payload TYPE jsonb USING payload::jsonb;
