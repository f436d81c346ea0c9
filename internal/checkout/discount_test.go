package checkout_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/codes"
	"boxoffice/internal/ops"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/testfix"
)

// newList creates a discount list with the given codes.
func (b *testBundle) newList(t *testing.T, terms codes.Terms, list ...string) uuid.UUID {
	t.Helper()
	return b.env.CodeList(t, b.product.TenantID, terms, list...)
}

// orderWith orders buyer's hold with a discount code.
func (b *testBundle) orderWith(buyer string, hold uuid.UUID, method, code string) (*checkout.Order, error) {
	o, _, err := b.env.Checkout.Create(context.Background(), checkout.CreateParams{TenantID: b.product.TenantID,
		BuyerID: buyer, IdempotencyKey: uuid.NewString(), HoldID: hold, PaymentMethod: method,
		Email: buyer + "@example.test", DiscountCode: code})
	return o, err
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var bad *codes.InvalidError
	require.ErrorAs(t, err, &bad)
	return bad.Reason
}

// A code's last use is taken once, whatever the number of orders racing
// for it; the order, the receipt and the sales report agree on the price.
func TestDiscountCodeLastUseTakenOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	b.newList(t, codes.Terms{Name: "Friends", PercentOff: ptr(25), UsesPerCode: 1, PerBuyer: 1}, "friend-2027")

	const racers = 8
	holds := make([]uuid.UUID, racers)
	for i := range holds {
		holds[i] = b.hold(t, fmt.Sprintf("racer-%d", i))
	}
	var wg sync.WaitGroup
	orders := make([]*checkout.Order, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			orders[i], errs[i] = b.orderWith(fmt.Sprintf("racer-%d", i), holds[i], pspsim.MethodOK, "FRIEND-2027")
		})
	}
	wg.Wait()
	var won *checkout.Order
	for i, err := range errs {
		if err == nil {
			require.Nil(t, won, "a second order took the code's only use")
			won = orders[i]
			continue
		}
		require.Equal(t, codes.UsedUp, reason(t, err))
	}
	require.NotNil(t, won, "one order took the code")
	// Two seats at 50.00, a quarter off: 75.00.
	require.Equal(t, int64(2500), won.DiscountCents)
	require.Equal(t, "FRIEND-2027", won.DiscountCode)
	require.Equal(t, int64(7500), won.AmountCents)
	o := b.wait(t, won.ID, settled)
	require.Equal(t, checkout.StatusConfirmed, o.Status)

	require.Eventually(t, func() bool {
		for _, m := range b.sink.Messages() {
			if strings.HasPrefix(m.Subject(), "Your tickets") && strings.Contains(decoded(m), "Discount (FRIEND-2027)") {
				text := decoded(m)
				return strings.Contains(text, "−€25.00") && strings.Contains(text, "€75.00")
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the receipt shows the discount and the total paid")
	report, err := ops.NewLive(ops.NewReporter(b.env.Schema.Pool, "river", nil), b.env.Products).
		Report(context.Background(), ops.Scope{TenantID: b.product.TenantID}, b.product.ID)
	require.NoError(t, err)
	require.Equal(t, ops.Discounts{Orders: 1, Cents: 2500}, report.Discounts)
	require.Equal(t, int64(7500), report.Totals.RevenueCents, "revenue is after the discount")

	// A full refund gives back what was paid, not the full price.
	r := b.refund(t, o.ID)
	require.Equal(t, int64(7500), r.AmountCents)
	b.requireSafe(t)
}

// The rules of a code: its product, its window, its uses per buyer; a
// declined order gives its use back, and paying again takes it anew.
func TestDiscountCodeRules(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	other := b.env.Product(t, testfix.ProductOpts{Capacity: 10})
	ctx := context.Background()
	b.newList(t, codes.Terms{Name: "Other night", ProductID: &other.ID, AmountOffCents: ptr(int64(500)), UsesPerCode: 10, PerBuyer: 1}, "OTHER")
	b.newList(t, codes.Terms{Name: "Later", PercentOff: ptr(10), UsesPerCode: 10, PerBuyer: 1,
		ValidFrom: ptr(time.Now().Add(time.Hour))}, "LATER")
	b.newList(t, codes.Terms{Name: "Gone", PercentOff: ptr(10), UsesPerCode: 10, PerBuyer: 1,
		ValidFrom: ptr(time.Now().Add(-2 * time.Hour)), ValidUntil: ptr(time.Now().Add(-time.Hour))}, "GONE")
	b.newList(t, codes.Terms{Name: "Fans", AmountOffCents: ptr(int64(1500)), UsesPerCode: 1, PerBuyer: 1}, "FAN-1", "FAN-2")
	b.newList(t, codes.Terms{Name: "Big", AmountOffCents: ptr(int64(12_000)), UsesPerCode: 1, PerBuyer: 1}, "BIG")

	hold := b.hold(t, "ana")
	for code, want := range map[string]string{"NOPE": codes.Unknown, "OTHER": codes.NotForThisEvent,
		"LATER": codes.NotYetValid, "GONE": codes.Expired} {
		_, err := b.env.Checkout.Price(ctx, b.product.TenantID, "ana", hold, code)
		require.Equal(t, want, reason(t, err), code)
		_, err = b.orderWith("ana", hold, pspsim.MethodOK, code)
		require.Equal(t, want, reason(t, err), code)
	}
	// An amount off is at most the tickets' prices (fees are not
	// discounted); the quote and the order agree.
	priced, err := b.env.Checkout.Price(ctx, b.product.TenantID, "ana", hold, "big")
	require.NoError(t, err)
	require.Equal(t, checkout.Priced{SubtotalCents: 10_000, DiscountCents: 10_000, DiscountCode: "BIG", TotalCents: 0,
		Currency: "EUR"}, *priced)
	priced, err = b.env.Checkout.Price(ctx, b.product.TenantID, "ana", hold, " fan-1 ")
	require.NoError(t, err)
	require.Equal(t, int64(8500), priced.TotalCents)

	// Declined: the use comes back, and Bea may take it; Ana, paying again
	// with the same order, finds it gone.
	declined, err := b.orderWith("ana", hold, pspsim.MethodDecline, "FAN-1")
	require.NoError(t, err)
	require.Equal(t, checkout.StatusFailed, b.wait(t, declined.ID, settled).Status)
	bea := b.hold(t, "bea")
	_, err = b.orderWith("bea", bea, pspsim.MethodOK, "FAN-1")
	require.NoError(t, err, "the declined order gave the use back")
	_, err = b.orderWith("ana", hold, pspsim.MethodOK, "")
	require.Equal(t, codes.UsedUp, reason(t, err), "paying again takes the code's use anew")

	// One use per buyer across the list's codes.
	cy := b.hold(t, "cy")
	o, err := b.orderWith("cy", cy, pspsim.MethodOK, "FAN-2")
	require.NoError(t, err)
	require.Equal(t, checkout.StatusConfirmed, b.wait(t, o.ID, settled).Status)
	cy2 := b.hold(t, "cy")
	b.newList(t, codes.Terms{Name: "More fans", PercentOff: ptr(5), UsesPerCode: 5, PerBuyer: 1}, "FAN-3")
	_, err = b.env.Checkout.Price(ctx, b.product.TenantID, "cy", cy2, "FAN-3")
	require.NoError(t, err, "another list's code is another allowance")
	b.requireSafe(t)
}
