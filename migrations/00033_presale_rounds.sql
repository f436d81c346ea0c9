-- +goose Up
-- A presale of a product with a waiting room is a round of the room: code
-- holders who enter before the window opens are drawn at its opening over
-- the round's own committed seed and take the positions after everyone
-- placed before them; the general sale's draw, later, places its entrants
-- after theirs (draw_offset: the positions given before it). A window's
-- times are the code list's, copied here when the list is made, so that
-- the room reads no other package's table.
CREATE TABLE presale_rounds (
    id           uuid PRIMARY KEY,
    product_id   uuid NOT NULL REFERENCES waiting_rooms (product_id),
    opens_at     timestamptz NOT NULL,
    closes_at    timestamptz NOT NULL CHECK (closes_at > opens_at),
    seed         bytea NOT NULL,
    commitment   text NOT NULL,
    drawn_at     timestamptz,
    entrants     bigint NOT NULL DEFAULT 0,
    draw_offset  bigint NOT NULL DEFAULT 0,
    UNIQUE (product_id, opens_at, closes_at)
);

-- The round an entry entered with a code (NULL: the general sale's line).
ALTER TABLE queue_entries ADD COLUMN round_id uuid REFERENCES presale_rounds (id);
ALTER TABLE waiting_rooms ADD COLUMN draw_offset bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE waiting_rooms DROP COLUMN draw_offset;
ALTER TABLE queue_entries DROP COLUMN round_id;
DROP TABLE presale_rounds;
