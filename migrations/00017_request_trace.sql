-- +goose Up
-- The trace context of the call that made the request (W3C traceparent),
-- so that the claim transaction deciding it, in another process and maybe
-- another batch, links its span back to it. NULL when tracing is off.
ALTER TABLE reservation_requests ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE reservation_requests DROP COLUMN trace_parent;
