// Package inventory owns each product's availability row: the bitmap (one bit
// per number, set = held or sold) and the counters beside it: held, sold,
// offered (free numbers withheld for the waiting list's offers) and
// available = capacity - held - sold - offered. Apply is the only code that
// writes the row.
package inventory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/bits-and-blooms/bitset"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Snapshot is the inventory row of one product at one moment.
type Snapshot struct {
	ProductID uuid.UUID
	Capacity  int
	Available int
	Held      int
	Sold      int
	// Offered are free numbers (clear bits) withheld from sale for the
	// waiting list's outstanding offers.
	Offered int
	Version int64
	// Bitmap holds bit n-1 for number n: byte i, bit j (least significant
	// first) is number 8*i+j+1.
	Bitmap    []byte
	UpdatedAt time.Time
}

// Bits decodes the bitmap into a bit set indexed by number-1.
func (s *Snapshot) Bits() *bitset.BitSet { return Decode(s.Bitmap, s.Capacity) }

// Decode turns stored bitmap bytes into a bit set of capacity bits.
func Decode(b []byte, capacity int) *bitset.BitSet {
	words := make([]uint64, (capacity+63)/64)
	var tail [8]byte
	for i := range words {
		chunk := b[min(i*8, len(b)):min(i*8+8, len(b))]
		if len(chunk) < 8 {
			tail = [8]byte{}
			copy(tail[:], chunk)
			chunk = tail[:]
		}
		words[i] = binary.LittleEndian.Uint64(chunk)
	}
	return bitset.FromWithLength(uint(capacity), words)
}

// Encode writes a bit set as bitmap bytes (ceil(capacity/8) of them) into buf,
// reusing its storage, and returns the bytes.
func Encode(bits *bitset.BitSet, capacity int, buf []byte) []byte {
	n := (capacity + 7) / 8
	if cap(buf) < n+8 {
		buf = make([]byte, 0, n+8)
	}
	buf = buf[:len(bits.Words())*8]
	for i, w := range bits.Words() {
		binary.LittleEndian.PutUint64(buf[i*8:], w)
	}
	return buf[:n]
}

// Create inserts the empty inventory row of a new product.
func Create(ctx context.Context, tx pgx.Tx, productID uuid.UUID, capacity int) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO inventory (product_id, capacity, available, bitmap)
		VALUES ($1, $2, $2, $3)`, productID, capacity, make([]byte, (capacity+7)/8))
	if err != nil {
		return fmt.Errorf("insert inventory of %s: %w", productID, err)
	}
	return nil
}

// Get reads the current row without locking it: the read path and the claim
// transaction's planning step use it; only Apply decides.
func Get(ctx context.Context, q db.DBTX, productID uuid.UUID) (*Snapshot, error) {
	s := &Snapshot{ProductID: productID}
	err := q.QueryRow(ctx, `
		SELECT capacity, available, held, sold, offered, version, bitmap, updated_at
		FROM inventory WHERE product_id = $1`, productID).
		Scan(&s.Capacity, &s.Available, &s.Held, &s.Sold, &s.Offered, &s.Version, &s.Bitmap, &s.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("read inventory of %s: %w", productID, db.NotFound(err))
	}
	return s, nil
}

// Changed reads the product's row if its version differs from since (-1:
// always), in one primary-key read that fetches the bitmap only then;
// changed is false, with a nil snapshot, when nothing moved.
func Changed(ctx context.Context, q db.DBTX, productID uuid.UUID, since int64) (snap *Snapshot, changed bool, err error) {
	s := &Snapshot{ProductID: productID}
	err = q.QueryRow(ctx, `
		SELECT capacity, available, held, sold, offered, version, CASE WHEN version <> $2 THEN bitmap END, updated_at
		FROM inventory WHERE product_id = $1`, productID, since).
		Scan(&s.Capacity, &s.Available, &s.Held, &s.Sold, &s.Offered, &s.Version, &s.Bitmap, &s.UpdatedAt)
	if err != nil {
		return nil, false, fmt.Errorf("read inventory of %s: %w", productID, db.NotFound(err))
	}
	if s.Version == since {
		return nil, false, nil
	}
	return s, true, nil
}

// Available returns how many of the product's numbers are neither held,
// sold nor offered, without reading the bitmap.
func Available(ctx context.Context, q db.DBTX, productID uuid.UUID) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `SELECT available FROM inventory WHERE product_id = $1`, productID).Scan(&n); err != nil {
		return 0, fmt.Errorf("available of %s: %w", productID, db.NotFound(err))
	}
	return n, nil
}

// Taken returns how many of the product's numbers are held or sold, and
// locks the row until the caller's transaction ends: a claim committing
// meanwhile waits, so a change allowed "while nothing is held" stays true
// until it commits.
func Taken(ctx context.Context, tx pgx.Tx, productID uuid.UUID) (int, error) {
	var n int
	if err := tx.QueryRow(ctx, `SELECT held + sold FROM inventory WHERE product_id = $1 FOR UPDATE`, productID).Scan(&n); err != nil {
		return 0, fmt.Errorf("taken of %s: %w", productID, db.NotFound(err))
	}
	return n, nil
}

// Counts are a product's counters.
type Counts struct {
	Available, Held, Sold, Offered int
}

// CountsOf returns the counters of several products in one query, without
// their bitmaps.
func CountsOf(ctx context.Context, q db.DBTX, ids []uuid.UUID) (map[uuid.UUID]Counts, error) {
	rows, err := q.Query(ctx, `SELECT product_id, available, held, sold, offered FROM inventory WHERE product_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("counters: %w", err)
	}
	out := make(map[uuid.UUID]Counts, len(ids))
	var id uuid.UUID
	var c Counts
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.Available, &c.Held, &c.Sold, &c.Offered}, func() error { out[id] = c; return nil }); err != nil {
		return nil, fmt.Errorf("counters: %w", err)
	}
	return out, nil
}

// Products returns the ids of every product with an inventory row, in order.
func Products(ctx context.Context, q db.DBTX) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT product_id FROM inventory ORDER BY product_id`)
	if err != nil {
		return nil, fmt.Errorf("list inventories: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("list inventories: %w", err)
	}
	return ids, nil
}

// Change is what one transaction does to a product's inventory.
type Change struct {
	// Set are numbers that became held (bit was clear).
	Set []int32
	// Clear are numbers that became free (bit was set).
	Clear []int32
	// HeldDelta, SoldDelta and OfferedDelta move the counters; available
	// follows.
	HeldDelta    int
	SoldDelta    int
	OfferedDelta int
}

// ErrOverCommitted means a change would leave available below zero: more
// numbers held, sold and offered than there are. A claim planned against
// a snapshot taken before offers were made meets it, and plans again
// under the row lock.
var ErrOverCommitted = errors.New("inventory: more numbers held, sold and offered than the capacity")

// Apply locks the product's inventory row, applies the change to the bitmap
// and counters and writes the row back, in the caller's transaction. Callers
// run it last, just before commit, so the hot row is locked for as short a
// time as possible. Setting a bit that is already set, or clearing one that
// is clear, means the claims and the bitmap disagree: Apply refuses, and the
// caller's transaction rolls back rather than record a double sale.
func Apply(ctx context.Context, tx pgx.Tx, productID uuid.UUID, c Change) error {
	_, err := ApplyAvailable(ctx, tx, productID, c)
	return err
}

// ApplyAvailable is Apply that also returns how many numbers are left
// available after the change (-1 when the change was empty and nothing was
// read).
func ApplyAvailable(ctx context.Context, tx pgx.Tx, productID uuid.UUID, c Change) (int, error) {
	if len(c.Set) == 0 && len(c.Clear) == 0 && c.HeldDelta == 0 && c.SoldDelta == 0 && c.OfferedDelta == 0 {
		return -1, nil
	}
	var capacity int
	var raw []byte
	err := tx.QueryRow(ctx, `SELECT capacity, bitmap FROM inventory WHERE product_id = $1 FOR UPDATE`, productID).
		Scan(&capacity, &raw)
	if err != nil {
		return 0, fmt.Errorf("lock inventory of %s: %w", productID, db.NotFound(err))
	}
	var bitmap []byte
	if len(c.Set) > 0 || len(c.Clear) > 0 {
		bits := Decode(raw, capacity)
		for _, n := range c.Set {
			if n < 1 || int(n) > capacity || bits.Test(uint(n-1)) {
				return 0, fmt.Errorf("inventory of %s: number %d already taken in bitmap", productID, n)
			}
			bits.Set(uint(n - 1))
		}
		for _, n := range c.Clear {
			if n < 1 || int(n) > capacity || !bits.Test(uint(n-1)) {
				return 0, fmt.Errorf("inventory of %s: number %d already free in bitmap", productID, n)
			}
			bits.Clear(uint(n - 1))
		}
		bitmap = Encode(bits, capacity, raw[:0])
	}
	var available int
	err = tx.QueryRow(ctx, `
		UPDATE inventory
		SET bitmap = coalesce($2, bitmap), held = held + $3, sold = sold + $4, offered = offered + $5,
		    available = available - $3 - $4 - $5, version = version + 1, updated_at = now()
		WHERE product_id = $1 AND available - $3 - $4 - $5 >= 0
		RETURNING available`, productID, bitmap, c.HeldDelta, c.SoldDelta, c.OfferedDelta).Scan(&available)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("update inventory of %s: %w", productID, ErrOverCommitted)
	}
	if err != nil {
		return 0, fmt.Errorf("update inventory of %s: %w", productID, err)
	}
	return available, nil
}

// Lock takes the product's inventory row lock for the rest of tx: the
// synchronous claim serialises on it.
func Lock(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM inventory WHERE product_id = $1 FOR UPDATE`, productID); err != nil {
		return fmt.Errorf("lock inventory of %s: %w", productID, err)
	}
	return nil
}

// Purge deletes a product's inventory row, in tx: a rehearsal's shadow,
// once it has ended. Never for a real product.
func Purge(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM inventory WHERE product_id = $1`, productID); err != nil {
		return fmt.Errorf("purge inventory of %s: %w", productID, err)
	}
	return nil
}
