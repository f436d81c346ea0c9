package reservation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ErrReceiverLimit refuses a transfer that would leave its receiver holding
// more of the product than the per-buyer limit.
var ErrReceiverLimit = errors.New("the receiver already holds as many of these as one buyer may")

// Transferred moves one ticket of a converted hold from its holder to
// another buyer, in the caller's transaction, for the per-buyer limit: the
// receiver counts it from now on (refused with ErrReceiverLimit past
// perBuyer), the giver no longer does. fromHold says the giver holds it
// through the hold (they bought it); otherwise they had received it. Both
// buyers' limit rows are locked in buyer order, as the claim locks them.
func Transferred(ctx context.Context, tx pgx.Tx, productID, holdID uuid.UUID, from string, fromHold bool, to string, perBuyer int) error {
	buyers := []string{from, to}
	slices.Sort(buyers)
	if _, err := tx.Exec(ctx, `
		INSERT INTO buyer_limits (product_id, buyer_id)
		SELECT $1, b FROM unnest($2::text[]) AS b ORDER BY b
		ON CONFLICT (product_id, buyer_id) DO UPDATE SET last_claim_at = buyer_limits.last_claim_at`,
		productID, slices.Compact(buyers)); err != nil {
		return fmt.Errorf("lock buyer limits: %w", err)
	}
	var held int
	if err := tx.QueryRow(ctx, `SELECT `+buyerCount+` FROM (SELECT $2::text AS buyer_id) b`, productID, to).Scan(&held); err != nil {
		return fmt.Errorf("count the receiver's numbers: %w", err)
	}
	if held+1 > perBuyer {
		return ErrReceiverLimit
	}
	var err error
	if fromHold {
		_, err = tx.Exec(ctx, `UPDATE holds SET given = given + 1 WHERE id = $1 AND state = 'CONVERTED'`, holdID)
	} else {
		_, err = tx.Exec(ctx, `UPDATE buyer_limits SET received = received - 1 WHERE product_id = $1 AND buyer_id = $2`,
			productID, from)
	}
	if err != nil {
		return fmt.Errorf("the giver's count: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE buyer_limits SET received = received + 1 WHERE product_id = $1 AND buyer_id = $2`,
		productID, to); err != nil {
		return fmt.Errorf("the receiver's count: %w", err)
	}
	return nil
}
