package checkout_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/pspsim"
)

// A tenant admin finds an order by what a buyer at the desk says, reads its
// payment timeline, and checks a ticket in.
func TestSearchAndTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	hold := b.hold(t, "alice")
	declined := b.wait(t, b.order(t, "alice", hold, pspsim.MethodDecline).ID, settled)
	require.Equal(t, checkout.StatusFailed, declined.Status)
	hold = b.hold(t, "bob")
	paid := b.wait(t, b.order(t, "bob", hold, pspsim.MethodOK).ID, settled)
	require.Equal(t, checkout.StatusConfirmed, paid.Status)
	tenantID := b.product.TenantID

	// Both orders were made in the same second: their references (what
	// their e-mails print) still tell them apart.
	require.Len(t, paid.Ref, 8)
	require.NotEqual(t, declined.Ref, paid.Ref)
	for _, q := range []string{paid.ID.String(), strings.ToUpper(paid.Ref), "BOB@example.test", "bob", paid.Seats[0], "3"} {
		found, err := b.env.Checkout.Search(ctx, tenantID, q, 10)
		require.NoError(t, err, q)
		if assert.Len(t, found, 1, q) {
			require.Equal(t, paid.ID, found[0].ID, q)
			require.Equal(t, paid.Ref, found[0].Ref, q)
		}
	}
	all, err := b.env.Checkout.Search(ctx, tenantID, "", 10)
	require.NoError(t, err)
	require.Len(t, all, 2, "an empty query lists the newest")
	other := b.env.NewTenant(t)
	none, err := b.env.Checkout.Search(ctx, other.ID, "bob", 10)
	require.NoError(t, err)
	require.Empty(t, none, "another tenant's orders are not found")

	tl, err := b.env.Checkout.OrderTimeline(ctx, tenantID, paid.ID)
	require.NoError(t, err)
	var steps []string
	for _, e := range tl.Events {
		steps = append(steps, e.Source+":"+e.What)
	}
	require.Subset(t, steps, []string{"order:created", "attempt:authorize at sim", "attempt:CAPTURED", "order:CONFIRMED", "order:capture CAPTURED"})
	require.Contains(t, steps, "webhook:payment.authorized", "the provider's webhooks are on the timeline: %v", steps)
	require.Equal(t, checkout.Money(paid.AmountCents, paid.Currency)+" for "+strings.Join(paid.Seats, ", "), tl.Events[0].Detail,
		"the amount and seats as people read them")
	require.Regexp(t, `^\d+\.\d\d [A-Z]{3} for `, tl.Events[0].Detail)
	require.Len(t, tl.Tickets, 2)
	require.Nil(t, tl.Tickets[0].CheckedInAt)

	res, err := b.env.Checkout.CheckIn(ctx, tenantID, tl.Tickets[0].Code, "tenant-admin")
	require.NoError(t, err)
	require.Equal(t, "CHECKED_IN", res.Result)
	tl, err = b.env.Checkout.OrderTimeline(ctx, tenantID, paid.ID)
	require.NoError(t, err)
	require.NotNil(t, tl.Tickets[0].CheckedInAt)

	failed, err := b.env.Checkout.OrderTimeline(ctx, tenantID, declined.ID)
	require.NoError(t, err)
	require.Empty(t, failed.Tickets)
	_, err = b.env.Checkout.OrderTimeline(ctx, other.ID, paid.ID)
	require.Error(t, err, "another tenant's order is no order")
}
