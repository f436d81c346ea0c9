-- +goose Up
-- An order's status changes are announced on boxoffice_order_changed,
-- delivered at the commit that made them: a read of the order waiting for
-- its payment's outcome (GET /v1/orders/{id} with Prefer: wait) is woken
-- by it instead of polling. A trigger, so that every path that changes a
-- status (payment outcomes, expiry, refunds, the console) announces it; an
-- order made already past PENDING_PAYMENT (nothing to pay) is announced
-- too, so an order no notification named is still pending. The payload is
-- the id's 16 bytes in base64 without padding.
-- +goose StatementBegin
CREATE FUNCTION orders_announce_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('boxoffice_order_changed', rtrim(encode(uuid_send(NEW.id), 'base64'), '='));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_status_changed AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION orders_announce_change();
CREATE TRIGGER orders_made_settled AFTER INSERT ON orders
    FOR EACH ROW WHEN (NEW.status <> 'PENDING_PAYMENT') EXECUTE FUNCTION orders_announce_change();

-- +goose Down
DROP TRIGGER orders_made_settled ON orders;
DROP TRIGGER orders_status_changed ON orders;
DROP FUNCTION orders_announce_change();
