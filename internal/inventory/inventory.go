// Package inventory owns each product's availability: the counters in its
// inventory row (held, sold, offered — free numbers withheld for the
// waiting list's offers — and available = capacity - held - sold - offered,
// with a version that increases with every change) and the bitmap beside
// them (one bit per number, set = held or sold), split into pages of
// PageBits numbers so a change rewrites only the pages it touches. Apply is
// the only code that writes them.
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

// PageBits is how many numbers one page of the bitmap holds: 2,048 bytes,
// which stay in the table's row (docs/architecture.md, "The paged bitmap").
const PageBits = 16384

// PageBytes is the size of a full page.
const PageBytes = PageBits / 8

// WholeBitmapUpTo is the largest product whose whole bitmap is served in
// one answer (125 KB); larger ones are read page by page.
const WholeBitmapUpTo = 1_000_000

// PageOf returns the page holding number n.
func PageOf(n int32) int { return int(n-1) / PageBits }

// PageCount is how many pages a product of capacity numbers has.
func PageCount(capacity int) int { return (capacity + PageBits - 1) / PageBits }

// Page is one page of a product's bitmap.
type Page struct {
	// Index: page i holds numbers i*PageBits+1 .. (i+1)*PageBits.
	Index int
	// Version is the inventory version that last changed the page.
	Version int64
	// Taken counts its set bits.
	Taken int
	// Bits as in Snapshot.Bitmap, from the page's first number (the last
	// page is shorter when the capacity ends inside it); nil in an index.
	Bits []byte
}

// First and Last are the numbers the page holds, for a product of capacity.
func (p Page) First() int            { return p.Index*PageBits + 1 }
func (p Page) Last(capacity int) int { return min((p.Index+1)*PageBits, capacity) }

// Snapshot is the inventory of one product at one moment.
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
	// Pages in page order: every page from Get, those changed since the
	// version asked from Changed, every page without its bits from Index.
	Pages     []Page
	UpdatedAt time.Time
}

// Bitmap assembles the pages into the product's whole bitmap: bit n-1 for
// number n, byte i, bit j (least significant first) is number 8*i+j+1.
// Pages not in the snapshot read as zeros.
func (s *Snapshot) Bitmap() []byte {
	out := make([]byte, (s.Capacity+7)/8)
	for _, p := range s.Pages {
		copy(out[p.Index*PageBytes:], p.Bits)
	}
	return out
}

// Bits decodes the pages into a bit set indexed by number-1 (pages not in
// the snapshot read as clear).
func (s *Snapshot) Bits() *bitset.BitSet {
	words := make([]uint64, (s.Capacity+63)/64)
	for _, p := range s.Pages {
		DecodePage(words, p)
	}
	return bitset.FromWithLength(uint(s.Capacity), words)
}

// Decode turns stored bitmap bytes into a bit set of capacity bits.
func Decode(b []byte, capacity int) *bitset.BitSet {
	words := make([]uint64, (capacity+63)/64)
	decodeInto(words, b)
	return bitset.FromWithLength(uint(capacity), words)
}

// DecodePage writes a page's bits into words, the words of a bit set of
// the product's whole capacity.
func DecodePage(words []uint64, p Page) { decodeInto(words[p.Index*PageBits/64:], p.Bits) }

// decodeInto fills the first ceil(len(b)/8) words from b.
func decodeInto(words []uint64, b []byte) {
	var tail [8]byte
	for i := 0; i*8 < len(b) && i < len(words); i++ {
		chunk := b[i*8 : min(i*8+8, len(b))]
		if len(chunk) < 8 {
			tail = [8]byte{}
			copy(tail[:], chunk)
			chunk = tail[:]
		}
		words[i] = binary.LittleEndian.Uint64(chunk)
	}
}

// Create inserts the inventory of a new product: its counters and its
// empty pages.
func Create(ctx context.Context, tx pgx.Tx, productID uuid.UUID, capacity int) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO inventory (product_id, capacity, available) VALUES ($1, $2, $2)`, productID, capacity)
	if err != nil {
		return fmt.Errorf("insert inventory of %s: %w", productID, err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO inventory_pages (product_id, page, bits)
		SELECT $1, g, decode(repeat('00', least($3, ($2 + 7) / 8 - g * $3)), 'hex')
		FROM generate_series(0, ($2 - 1) / $4) AS g`, productID, capacity, PageBytes, PageBits)
	if err != nil {
		return fmt.Errorf("insert inventory pages of %s: %w", productID, err)
	}
	return nil
}

// read is Get, Changed and Index: the counters and the pages changed after
// since (all of them for -1), with their bits or not, in one statement so
// that they are of one moment.
func read(ctx context.Context, q db.DBTX, productID uuid.UUID, since int64, withBits bool, pages []int) (*Snapshot, error) {
	rows, err := q.Query(ctx, `
		SELECT i.capacity, i.available, i.held, i.sold, i.offered, i.version, i.updated_at,
		       p.page, p.version, p.taken, CASE WHEN $3 THEN p.bits END
		FROM inventory i
		LEFT JOIN inventory_pages p ON p.product_id = i.product_id AND p.version > $2
		                              AND ($4::int[] IS NULL OR p.page = ANY($4))
		WHERE i.product_id = $1
		ORDER BY p.page`, productID, since, withBits, pages)
	if err != nil {
		return nil, fmt.Errorf("read inventory of %s: %w", productID, err)
	}
	defer rows.Close()
	s := &Snapshot{ProductID: productID}
	var page, taken *int
	var version *int64
	var bits []byte
	found := false
	for rows.Next() {
		if err := rows.Scan(&s.Capacity, &s.Available, &s.Held, &s.Sold, &s.Offered, &s.Version, &s.UpdatedAt,
			&page, &version, &taken, &bits); err != nil {
			return nil, fmt.Errorf("read inventory of %s: %w", productID, err)
		}
		found = true
		if page != nil {
			s.Pages = append(s.Pages, Page{Index: *page, Version: *version, Taken: *taken, Bits: bits})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read inventory of %s: %w", productID, err)
	}
	if !found {
		return nil, fmt.Errorf("read inventory of %s: %w", productID, db.ErrNotFound)
	}
	return s, nil
}

// Get reads the counters and every page without locking them: the read
// path, the audit and the claim's planning on small products use it; only
// Apply decides.
func Get(ctx context.Context, q db.DBTX, productID uuid.UUID) (*Snapshot, error) {
	return read(ctx, q, productID, -1, true, nil)
}

// Index reads the counters and every page's number, version and count of
// taken numbers, without the bits.
func Index(ctx context.Context, q db.DBTX, productID uuid.UUID) (*Snapshot, error) {
	return read(ctx, q, productID, -1, false, nil)
}

// Changed reads the counters and the pages changed since version since
// (-1: always, every page), in one primary-key read that fetches pages
// only when they moved; changed is false, with a nil snapshot, when
// nothing moved.
func Changed(ctx context.Context, q db.DBTX, productID uuid.UUID, since int64) (snap *Snapshot, changed bool, err error) {
	s, err := read(ctx, q, productID, since, true, nil)
	if err != nil {
		return nil, false, err
	}
	if s.Version == since {
		return nil, false, nil
	}
	return s, true, nil
}

// GetPages is Get of the listed pages only (every page when nil).
func GetPages(ctx context.Context, q db.DBTX, productID uuid.UUID, pages []int) (*Snapshot, error) {
	return read(ctx, q, productID, -1, true, pages)
}

// TakenAmong returns which of numbers (each between 1 and the capacity)
// are held or sold, reading their bits in the database: a claim of a few
// numbers scattered over a large product reads no page whole.
func TakenAmong(ctx context.Context, q db.DBTX, productID uuid.UUID, numbers []int32) ([]int32, error) {
	rows, err := q.Query(ctx, `
		SELECT n FROM unnest($2::int[]) AS n
		JOIN inventory_pages p ON p.product_id = $1 AND p.page = (n - 1) / $3
		WHERE get_bit(p.bits, (n - 1) % $3) = 1`, productID, numbers, PageBits)
	if err != nil {
		return nil, fmt.Errorf("read bits of %s: %w", productID, err)
	}
	taken, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("read bits of %s: %w", productID, err)
	}
	return taken, nil
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

// Unclaimed is a query of the numbers neither held nor sold — available
// or withheld for waiting-list offers — of the products whose ids the SQL
// expression ids gives (a uuid[]), as rows (product_id, unclaimed), for a
// statement of another package to read within it, without a round trip
// of its own.
func Unclaimed(ids string) string {
	return `SELECT product_id, available + offered AS unclaimed FROM inventory WHERE product_id = ANY(` + ids + `)`
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

// Apply locks the product's inventory row, applies the change to the
// counters and to the pages it touches, in the caller's transaction.
// Callers run it last, just before commit, so the hot row is locked for as
// short a time as possible. Pages are written only under that row lock,
// so their writers never wait on each other in opposite orders. Setting a
// bit that is already set, or clearing one that is clear, means the
// claims and the bitmap disagree: Apply refuses, and the caller's
// transaction rolls back rather than record a double sale.
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
	// One round trip: the counters' update takes the row lock, then the
	// pages touched are updated in the database (inventory_flip), always
	// under that lock, so page writers never wait on each other.
	b := &pgx.Batch{}
	b.Queue(`
		UPDATE inventory
		SET held = held + $2, sold = sold + $3, offered = offered + $4,
		    available = available - $2 - $3 - $4, version = version + 1, updated_at = now()
		WHERE product_id = $1 AND available - $2 - $3 - $4 >= 0
		RETURNING available`, productID, c.HeldDelta, c.SoldDelta, c.OfferedDelta)
	flips := len(c.Set) + len(c.Clear)
	pages := map[int]bool{}
	if flips > 0 {
		page, offset, value := make([]int32, 0, flips), make([]int32, 0, flips), make([]int32, 0, flips)
		add := func(numbers []int32, v int32) {
			for _, n := range numbers {
				page, offset, value = append(page, int32(PageOf(n))), append(offset, (n-1)%PageBits), append(value, v)
				pages[PageOf(n)] = true
			}
		}
		add(c.Set, 1)
		add(c.Clear, 0)
		// The pages take the version the counters' update just made (this
		// transaction's own row). A number past the capacity is past its
		// page's bits, or on no page: the statement fails, or leaves a page
		// unmatched.
		b.Queue(`
			WITH f AS (
				SELECT page, coalesce(array_agg(off) FILTER (WHERE v = 1), '{}') AS sets,
				       coalesce(array_agg(off) FILTER (WHERE v = 0), '{}') AS clears
				FROM unnest($2::int[], $3::int[], $4::int[]) AS x(page, off, v)
				GROUP BY page)
			UPDATE inventory_pages p
			SET bits = inventory_flip(inventory_flip(p.bits, f.sets, 1), f.clears, 0),
			    taken = p.taken + cardinality(f.sets) - cardinality(f.clears),
			    version = (SELECT i.version FROM inventory i WHERE i.product_id = $1)
			FROM f
			WHERE p.product_id = $1 AND p.page = f.page`,
			productID, page, offset, value)
	}
	var available int
	var updated int64
	err := func() error {
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		err := br.QueryRow().Scan(&available)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrOverCommitted // or no such product: told apart below
		}
		if err != nil || flips == 0 {
			return err
		}
		tag, err := br.Exec()
		updated = tag.RowsAffected()
		return err
	}()
	if errors.Is(err, ErrOverCommitted) {
		if _, err := Available(ctx, tx, productID); err != nil {
			return 0, fmt.Errorf("update inventory: %w", err)
		}
		return 0, fmt.Errorf("update inventory of %s: %w", productID, ErrOverCommitted)
	}
	if err != nil {
		return 0, fmt.Errorf("update inventory of %s: %w", productID, err)
	}
	if int(updated) != len(pages) {
		return 0, fmt.Errorf("inventory of %s: %d of %d pages changed: a number is out of range", productID, updated, len(pages))
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

// Purge deletes a product's inventory (its pages go with the row), in tx:
// a rehearsal's shadow, once it has ended. Never for a real product.
func Purge(ctx context.Context, tx pgx.Tx, productID uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM inventory WHERE product_id = $1`, productID); err != nil {
		return fmt.Errorf("purge inventory of %s: %w", productID, err)
	}
	return nil
}
