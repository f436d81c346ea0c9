package checkout

import (
	"context"

	"github.com/google/uuid"

	"boxoffice/internal/codes"
	"boxoffice/internal/product"
	"boxoffice/internal/reservation"
)

// Priced is what a buyer's hold would cost, with a discount code when one
// is given: the tickets' prices, the code's discount off them, the booking
// fees, and the total an order of them charges.
type Priced struct {
	SubtotalCents int64  `json:"subtotalCents" doc:"The tickets' prices"`
	DiscountCents int64  `json:"discountCents" doc:"What the code takes off them"`
	DiscountCode  string `json:"discountCode,omitempty"`
	FeesCents     int64  `json:"feesCents" doc:"The booking fees (never discounted)"`
	TotalCents    int64  `json:"totalCents" doc:"What an order of the hold charges"`
	Currency      string `json:"currency"`
}

// Price prices the buyer's hold, with the code when one is given (a
// *codes.InvalidError says why it does not apply). It takes no use: the
// order does.
func (s *Service) Price(ctx context.Context, tenantID uuid.UUID, buyerID string, holdID uuid.UUID, code string) (*Priced, error) {
	productID, numbers, err := reservation.HoldNumbers(ctx, s.pool, tenantID, buyerID, holdID)
	if err != nil {
		return nil, err
	}
	quote, err := product.QuoteFor(ctx, s.pool, productID, numbers)
	if err != nil {
		return nil, err
	}
	p := &Priced{SubtotalCents: quote.Cents - quote.FeeCents, FeesCents: quote.FeeCents, Currency: quote.Currency}
	if code != "" {
		a, err := codes.Check(ctx, s.pool, codes.Use{TenantID: tenantID, ProductID: productID, BuyerID: buyerID,
			Code: code, Subtotal: p.SubtotalCents})
		if err != nil {
			return nil, err
		}
		p.DiscountCents, p.DiscountCode = a.Cents, a.Code
	}
	p.TotalCents = p.SubtotalCents - p.DiscountCents + p.FeesCents
	return p, nil
}
