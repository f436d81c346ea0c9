package inventory

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/google/uuid"

	"boxoffice/internal/db"
)

// FillRandom gives every page of a product random bits, as a half-sold
// raffle's, without the claims behind them: the benchmark measures the
// API's cache of such pages without selling millions of numbers first.
// The counters and claims no longer agree with the bitmap (the audit says
// so): only for a benchmark's product, never one that sells.
func FillRandom(ctx context.Context, q db.DBTX, productID uuid.UUID, capacity int) error {
	pages := make([]int32, PageCount(capacity))
	bits := make([][]byte, len(pages))
	for i := range pages {
		pages[i] = int32(i)
		bits[i] = make([]byte, min(PageBytes, (capacity+7)/8-i*PageBytes))
		_, _ = rand.Read(bits[i])
	}
	_, err := q.Exec(ctx, `
		UPDATE inventory_pages p SET bits = u.bits, version = 1
		FROM unnest($2::int[], $3::bytea[]) AS u(page, bits)
		WHERE p.product_id = $1 AND p.page = u.page`, productID, pages, bits)
	if err != nil {
		return fmt.Errorf("fill pages of %s: %w", productID, err)
	}
	return nil
}
