package codes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"boxoffice/internal/db"
)

// Window is a product's presale window.
type Window struct {
	Opens  time.Time `json:"opensAt"`
	Closes time.Time `json:"closesAt"`
}

// PresaleWindows returns, for each of the products that has one, its
// presale window now open, or else the next one to open.
func PresaleWindows(ctx context.Context, q db.DBTX, productIDs []uuid.UUID) (map[uuid.UUID]Window, error) {
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (product_id) product_id, valid_from, valid_until FROM code_lists
		WHERE kind = 'PRESALE' AND product_id = ANY($1) AND valid_until > now()
		ORDER BY product_id, valid_from`, productIDs)
	if err != nil {
		return nil, fmt.Errorf("presale windows: %w", err)
	}
	out := map[uuid.UUID]Window{}
	var id uuid.UUID
	var w Window
	if _, err := pgx.ForEachRow(rows, []any{&id, &w.Opens, &w.Closes}, func() error { out[id] = w; return nil }); err != nil {
		return nil, fmt.Errorf("presale windows: %w", err)
	}
	return out, nil
}

// PresaleOpen reports whether one of the product's presale windows is open.
func PresaleOpen(ctx context.Context, q db.DBTX, productID uuid.UUID) (bool, error) {
	var open bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM code_lists WHERE kind = 'PRESALE' AND product_id = $1
		AND valid_from <= now() AND valid_until > now())`, productID).Scan(&open)
	if err != nil {
		return false, fmt.Errorf("presale of %s: %w", productID, err)
	}
	return open, nil
}

// LetIn lets the buyer into the product's open presale with the code, or
// says why not (an *InvalidError). A buyer let in once stays in for the
// list's window (again with the same or without a code: nil); each code
// lets in its list's usesPerCode buyers.
func LetIn(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyerID, code string) error {
	in, err := PresaleBuyers(ctx, tx, productID, []string{buyerID})
	if err != nil || in[buyerID] {
		return err
	}
	_, err = letIn(ctx, tx, tenantID, productID, buyerID, code, false)
	return err
}

// LetInEarly is LetIn for a presale behind a waiting room: the code is
// taken before its window opens too, so that its holder enters the draw
// at the opening. It answers the window the code is for (the room's round).
func LetInEarly(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyerID, code string) (Window, error) {
	return letIn(ctx, tx, tenantID, productID, buyerID, code, true)
}

func letIn(ctx context.Context, tx pgx.Tx, tenantID, productID uuid.UUID, buyerID, code string, early bool) (Window, error) {
	code = Normalize(code)
	var w Window
	invalid := func(reason string) error { return &InvalidError{Reason: reason, Code: code} }
	if code == "" {
		return w, invalid(Required)
	}
	var listID uuid.UUID
	var listProduct *uuid.UUID
	var uses int
	var started, open, already bool
	err := tx.QueryRow(ctx, `
		SELECT l.id, l.product_id, l.uses_per_code, l.valid_from, l.valid_until, l.valid_from <= now(), l.valid_until > now(),
		       EXISTS (SELECT 1 FROM presale_uses u WHERE u.list_id = l.id AND u.buyer_id = $3)
		FROM codes c JOIN code_lists l ON l.id = c.list_id
		WHERE c.tenant_id = $1 AND c.code = $2 AND l.kind = 'PRESALE' FOR UPDATE OF c`, tenantID, code, buyerID).
		Scan(&listID, &listProduct, &uses, &w.Opens, &w.Closes, &started, &open, &already)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return w, invalid(Unknown)
	case err != nil:
		return w, fmt.Errorf("presale code %s: %w", code, err)
	case listProduct == nil || *listProduct != productID:
		return w, invalid(NotForThisEvent)
	case !open:
		return w, invalid(Expired)
	case !started && !early:
		return w, invalid(NotYetValid)
	case already:
		return w, nil // let in before, with this or another of the list's codes
	}
	var taken int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM presale_uses WHERE tenant_id = $1 AND code = $2`, tenantID, code).
		Scan(&taken); err != nil {
		return w, fmt.Errorf("uses of presale code %s: %w", code, err)
	}
	if taken >= uses {
		return w, invalid(UsedUp)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO presale_uses (list_id, buyer_id, tenant_id, code, product_id) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT DO NOTHING`, listID, buyerID, tenantID, code, productID)
	if err != nil {
		return w, fmt.Errorf("let in with presale code %s: %w", code, err)
	}
	return w, nil
}

// PresaleBuyers returns which of the buyers are let into a presale of the
// product whose window is open now: the claim transaction holds their
// requests before the general sale.
func PresaleBuyers(ctx context.Context, q db.DBTX, productID uuid.UUID, buyers []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, `
		SELECT DISTINCT p.buyer_id FROM presale_uses p JOIN code_lists l ON l.id = p.list_id
		WHERE p.product_id = $1 AND p.buyer_id = ANY($2) AND l.valid_from <= now() AND l.valid_until > now()`,
		productID, buyers)
	if err != nil {
		return nil, fmt.Errorf("presale buyers of %s: %w", productID, err)
	}
	out := map[string]bool{}
	var b string
	if _, err := pgx.ForEachRow(rows, []any{&b}, func() error { out[b] = true; return nil }); err != nil {
		return nil, fmt.Errorf("presale buyers of %s: %w", productID, err)
	}
	return out, nil
}
