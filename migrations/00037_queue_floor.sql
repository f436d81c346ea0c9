-- +goose Up
-- The transaction that queued a request (one for every request of an accept
-- batch), first in the queue's order. Decided requests keep their entries
-- in the queue index until VACUUM, at the front of their product's queue,
-- so a scan from the front walks every request decided since the last
-- VACUUM, and an opening's claims grew slower with every batch. In this
-- order a claim knows where its product's undecided requests start (see
-- Claimer.lockQueued) and the next claim scans from there.
ALTER TABLE reservation_requests ADD COLUMN queued_xid xid8;
-- Requests already queued go first: their accepts ended long ago.
UPDATE reservation_requests SET queued_xid = '1' WHERE status = 'QUEUED';
-- A default set after the column exists fills new rows only (no rewrite).
ALTER TABLE reservation_requests ALTER COLUMN queued_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX reservation_requests_queue_idx ON reservation_requests (product_id, queued_xid, created_at, id)
    WHERE status = 'QUEUED';
DROP INDEX reservation_requests_queued_idx;

-- +goose Down
CREATE INDEX reservation_requests_queued_idx ON reservation_requests (product_id, created_at, id)
    WHERE status = 'QUEUED';
DROP INDEX reservation_requests_queue_idx;
ALTER TABLE reservation_requests DROP COLUMN queued_xid;
