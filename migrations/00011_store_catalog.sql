-- +goose Up
-- What a store shows and sells. A product has a description and a picture,
-- and a publication: DRAFT (the tenant's eyes only), PUBLISHED (in the store,
-- on sale from on_sale_at) or CLOSED (shown, selling nothing more). The old
-- ACTIVE status is PUBLISHED.
ALTER TABLE products
    ADD COLUMN description text NOT NULL DEFAULT '',
    ADD COLUMN image_url text NOT NULL DEFAULT '',
    DROP CONSTRAINT products_status_check;
UPDATE products SET status = 'PUBLISHED' WHERE status = 'ACTIVE';
ALTER TABLE products RENAME COLUMN status TO publication;
ALTER TABLE products
    ALTER COLUMN publication SET DEFAULT 'PUBLISHED',
    ADD CONSTRAINT products_publication_check CHECK (publication IN ('DRAFT', 'PUBLISHED', 'CLOSED'));

-- A seat map may be replaced until the first number is held; the version
-- tells caches (the claim's, browsers') which one they have.
ALTER TABLE products ADD COLUMN layout_version integer NOT NULL DEFAULT 1;

-- A ticket names its seat as people read it ("North · Row A · Seat 7"),
-- fixed when the ticket is issued.
ALTER TABLE tickets ADD COLUMN label text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE tickets DROP COLUMN label;
ALTER TABLE products DROP COLUMN layout_version;
ALTER TABLE products DROP CONSTRAINT products_publication_check;
UPDATE products SET publication = 'ACTIVE' WHERE publication IN ('DRAFT', 'PUBLISHED');
ALTER TABLE products RENAME COLUMN publication TO status;
ALTER TABLE products
    ALTER COLUMN status SET DEFAULT 'ACTIVE',
    ADD CONSTRAINT products_status_check CHECK (status IN ('ACTIVE', 'CLOSED')),
    DROP COLUMN description,
    DROP COLUMN image_url;
