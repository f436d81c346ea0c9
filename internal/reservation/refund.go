package reservation

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/inventory"
	"boxoffice/internal/outbox"
)

// Refunded records, in the caller's transaction, that numbers of a converted
// hold were refunded: they stop counting against their holders' limits (the
// hold's buyer, or for each ticket received by transfer its receiver, named
// in receivedBy), and with
// resell they go back on sale — their SOLD claims deleted, the bits cleared
// and the counters moved from sold to available, with a numbers.returned
// event. Without resell the claims stay SOLD: the seats are kept off sale.
// Locks follow the common order: hold, claims, inventory last. It returns
// the numbers that went back on sale; a number not SOLD under the hold (a
// retried call) is skipped.
func Refunded(ctx context.Context, tx pgx.Tx, holdID uuid.UUID, numbers []int32, receivedBy []string, resell bool) ([]int32, error) {
	var tenantID, productID uuid.UUID
	var holdNumbers []int32
	err := tx.QueryRow(ctx, `
		UPDATE holds SET refunded = least(refunded + $2, cardinality(numbers))
		WHERE id = $1 AND state = 'CONVERTED'
		RETURNING tenant_id, product_id, numbers`, holdID, len(numbers)-len(receivedBy)).Scan(&tenantID, &productID, &holdNumbers)
	if err != nil {
		return nil, fmt.Errorf("refunded numbers of hold %s: %w", holdID, err)
	}
	for _, buyer := range receivedBy {
		if _, err := tx.Exec(ctx, `
			UPDATE buyer_limits SET received = greatest(received - 1, 0) WHERE product_id = $1 AND buyer_id = $2`,
			productID, buyer); err != nil {
			return nil, fmt.Errorf("refunded ticket of %s: %w", buyer, err)
		}
	}
	for _, n := range numbers {
		if !slices.Contains(holdNumbers, n) {
			return nil, fmt.Errorf("hold %s has no number %d", holdID, n)
		}
	}
	if !resell {
		return nil, nil
	}
	sorted := slices.Clone(numbers)
	slices.Sort(sorted) // claims rows are locked in number order, as claims take them
	rows, err := tx.Query(ctx, `
		DELETE FROM claims
		WHERE product_id = $1 AND number = ANY($2) AND hold_id = $3 AND state = 'SOLD'
		RETURNING number`, productID, sorted, holdID)
	if err != nil {
		return nil, fmt.Errorf("return sold numbers: %w", err)
	}
	returned, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("return sold numbers: %w", err)
	}
	if len(returned) == 0 {
		return nil, nil
	}
	slices.Sort(returned)
	if err := outbox.Add(ctx, tx, outbox.New{TenantID: tenantID, Topic: "numbers.returned", Payload: map[string]any{
		"productId": productID, "holdId": holdID, "numbers": returned}}); err != nil {
		return nil, err
	}
	if err := inventory.Apply(ctx, tx, productID, inventory.Change{Clear: returned, SoldDelta: -len(returned)}); err != nil {
		return nil, err
	}
	return returned, nil
}

// SoldClaims returns the product's SOLD numbers, each with its hold: the
// money audit compares them with the tickets that stand for them.
func SoldClaims(ctx context.Context, tx pgx.Tx, productID uuid.UUID) (map[int32]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `SELECT number, hold_id FROM claims WHERE product_id = $1 AND state = 'SOLD'`, productID)
	if err != nil {
		return nil, fmt.Errorf("sold claims of %s: %w", productID, err)
	}
	out := map[int32]uuid.UUID{}
	var n int32
	var hold uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&n, &hold}, func() error { out[n] = hold; return nil }); err != nil {
		return nil, fmt.Errorf("sold claims of %s: %w", productID, err)
	}
	return out, nil
}
