-- +goose Up
-- The claim bitmap split into pages of 16,384 numbers (2,048 bytes), so a
-- claim batch rewrites only the pages it touches instead of the whole
-- product's bitmap (1.25 MB for 10,000,000 numbers). A page's version is
-- the inventory version that last changed it: readers fetch only the pages
-- that moved. Only internal/inventory writes it, always after locking the
-- product's inventory row and in page order.
CREATE TABLE inventory_pages (
    product_id uuid NOT NULL REFERENCES inventory (product_id) ON DELETE CASCADE,
    page       integer NOT NULL CHECK (page >= 0), -- numbers 16384*page+1 .. 16384*(page+1)
    version    bigint NOT NULL DEFAULT 0,
    taken      integer NOT NULL DEFAULT 0 CHECK (taken >= 0), -- set bits
    bits       bytea NOT NULL,
    PRIMARY KEY (product_id, page)
) WITH (fillfactor = 50);
-- A page (2 KB) stays in the heap row: never compressed (random bits do not
-- compress and the row lock is held while it is written) nor toasted
-- (every update would rewrite its chunks). Half-empty heap pages leave room
-- for the updated row beside the old one (a HOT update: no index write).
ALTER TABLE inventory_pages ALTER COLUMN bits SET STORAGE PLAIN;

-- inventory_flip sets (to 1) or clears (to 0) the bits at offsets of a
-- page (bit i is bit i%8, least significant first, of byte i/8). A bit
-- already so means the claims and the bitmap disagree: it refuses, and the
-- transaction rolls back rather than record a double sale. Flipping in the
-- database spares the claim a round trip carrying the pages both ways.
-- +goose StatementBegin
CREATE FUNCTION inventory_flip(bits bytea, offsets integer[], to_value integer) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    o integer;
BEGIN
    FOREACH o IN ARRAY offsets LOOP
        IF get_bit(bits, o) = to_value THEN
            RAISE EXCEPTION 'inventory: bit % of the page is already %', o, to_value;
        END IF;
        bits := set_bit(bits, o, to_value);
    END LOOP;
    RETURN bits;
END
$$;
-- +goose StatementEnd

INSERT INTO inventory_pages (product_id, page, version, taken, bits)
SELECT i.product_id, g, i.version,
       bit_count(substring(i.bitmap FROM g * 2048 + 1 FOR 2048)),
       substring(i.bitmap FROM g * 2048 + 1 FOR 2048)
FROM inventory i
CROSS JOIN LATERAL generate_series(0, (length(i.bitmap) - 1) / 2048) AS g;

ALTER TABLE inventory DROP COLUMN bitmap;

-- +goose Down
ALTER TABLE inventory ADD COLUMN bitmap bytea;
UPDATE inventory i SET bitmap = (
    SELECT string_agg(p.bits, ''::bytea ORDER BY p.page) FROM inventory_pages p WHERE p.product_id = i.product_id);
ALTER TABLE inventory ALTER COLUMN bitmap SET NOT NULL;
ALTER TABLE inventory ALTER COLUMN bitmap SET STORAGE EXTERNAL;
DROP TABLE inventory_pages;
DROP FUNCTION inventory_flip(bytea, integer[], integer);
