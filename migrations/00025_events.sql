-- +goose Up
-- The event: what shoppers come for. An event is the show — its name,
-- description, image, entry note, venue and the venue's time zone — and
-- each of its dates is a product (a seated plan or numbered stock) with its
-- own start, doors, end and sale window. A series is an event with several
-- dates. Every product had its own description and image: each becomes an
-- event of one date, named and described as the product was.
CREATE TABLE events (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    slug          text NOT NULL,
    name          text NOT NULL,
    description   text NOT NULL DEFAULT '',
    image_url     text NOT NULL DEFAULT '',
    entry_note    text NOT NULL DEFAULT '',
    venue_name    text NOT NULL DEFAULT '',
    venue_address text NOT NULL DEFAULT '',
    venue_map_url text NOT NULL DEFAULT '',
    -- IANA name: every face shows the dates in the venue's time zone.
    time_zone     text NOT NULL DEFAULT 'UTC',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, slug)
);

ALTER TABLE products
    ADD COLUMN event_id    uuid REFERENCES events (id),
    ADD COLUMN starts_at   timestamptz,
    ADD COLUMN doors_at    timestamptz,
    ADD COLUMN ends_at     timestamptz,
    ADD COLUMN off_sale_at timestamptz,
    ADD CONSTRAINT products_doors_check CHECK (doors_at <= starts_at),
    ADD CONSTRAINT products_end_check CHECK (ends_at > starts_at),
    ADD CONSTRAINT products_sale_window_check CHECK (off_sale_at > on_sale_at);

-- A rehearsal's shadow shares its product's event (it is deleted with the
-- rehearsal; the event stays).
INSERT INTO events (id, tenant_id, slug, name, description, image_url, created_at)
SELECT gen_random_uuid(), tenant_id, slug, name, description, image_url, created_at
FROM products WHERE rehearsal_of IS NULL;
UPDATE products p SET event_id = e.id FROM events e
WHERE p.rehearsal_of IS NULL AND e.tenant_id = p.tenant_id AND e.slug = p.slug;
UPDATE products p SET event_id = r.event_id FROM products r WHERE p.rehearsal_of = r.id;
ALTER TABLE products ALTER COLUMN event_id SET NOT NULL, DROP COLUMN description, DROP COLUMN image_url;
CREATE INDEX products_event_idx ON products (event_id);

-- Mail sent once per key (a change notice per order): recorded after the
-- send, so a worker that dies in between sends it again — at least once,
-- and a duplicate only then.
CREATE TABLE mail_sent (
    key     text PRIMARY KEY,
    sent_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE mail_sent;
ALTER TABLE products ADD COLUMN description text NOT NULL DEFAULT '', ADD COLUMN image_url text NOT NULL DEFAULT '';
UPDATE products p SET description = e.description, image_url = e.image_url FROM events e WHERE e.id = p.event_id;
ALTER TABLE products DROP CONSTRAINT products_doors_check, DROP CONSTRAINT products_end_check,
    DROP CONSTRAINT products_sale_window_check,
    DROP COLUMN event_id, DROP COLUMN starts_at, DROP COLUMN doors_at, DROP COLUMN ends_at, DROP COLUMN off_sale_at;
DROP TABLE events;
