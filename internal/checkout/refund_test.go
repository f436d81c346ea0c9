package checkout_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/checkout"
	"boxoffice/internal/db"
	"boxoffice/internal/inventory"
	"boxoffice/internal/mail"
	"boxoffice/internal/product"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/reservation"
	"boxoffice/internal/tenant"
	"boxoffice/internal/testfix"
	"boxoffice/internal/waitlist"
)

// refund asks for a refund of the order (every ticket when none named).
func (b *testBundle) refund(t *testing.T, orderID uuid.UUID, tickets ...uuid.UUID) *checkout.Refund {
	t.Helper()
	r, replayed, err := b.env.Checkout.RequestRefund(context.Background(), checkout.RefundParams{TenantID: b.product.TenantID,
		OrderID: orderID, TicketIDs: tickets, Reason: "show moved", RequestedBy: "test", IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.False(t, replayed)
	// Read after the commit that enqueued the provider call: the worker may
	// have made it already.
	require.Contains(t, []string{checkout.StatusRefundPending, checkout.StatusRefunded, checkout.StatusRefundFailed}, r.Status)
	return r
}

func (b *testBundle) waitRefund(t *testing.T, id uuid.UUID, status string) *checkout.Refund {
	t.Helper()
	var r *checkout.Refund
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		r, err = b.env.Checkout.GetRefund(context.Background(), b.product.TenantID, id)
		if assert.NoError(c, err) {
			assert.Equal(c, status, r.Status)
		}
	}, 20*time.Second, 20*time.Millisecond, "refund %s", id)
	return r
}

// refundsAt counts the refunds the provider made under key.
func (b *testBundle) refundsAt(key string) int {
	n := 0
	for _, r := range b.sim.Refunds() {
		if r.IdempotencyKey == key {
			n++
		}
	}
	return n
}

// confirmedWith pays a two-number hold of product p with method.
func (b *testBundle) confirmedWith(t *testing.T, p *product.Product, buyer, method string) *checkout.Order {
	t.Helper()
	return b.env.Confirmed(t, p, buyer, 2, method)
}

func (b *testBundle) checkIn(t *testing.T, code string) checkout.CheckInResult {
	t.Helper()
	res, err := b.env.Checkout.CheckIn(context.Background(), b.product.TenantID, code, "gate")
	require.NoError(t, err)
	return res
}

func TestFullRefundResellsTheSeats(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o, _ := b.confirmed(t, "alice")
	codes := []string{o.Tickets[0].Code, o.Tickets[1].Code}

	r := b.refund(t, o.ID)
	require.Equal(t, int64(2*5000), r.AmountCents)
	require.True(t, r.Resell, "resell is the default policy")
	// Void from the moment it is asked for, and the seats are on sale again.
	for _, c := range codes {
		res := b.checkIn(t, c)
		require.Equal(t, checkout.VoidTicket, res.Result)
		require.Equal(t, "REFUNDED", res.Void)
	}
	require.Zero(t, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, b.product.ID))
	require.Equal(t, 20, b.count(t, `SELECT available FROM inventory WHERE product_id = $1`, b.product.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox WHERE topic = 'numbers.returned'`))

	r = b.waitRefund(t, r.ID, checkout.StatusRefunded)
	require.Equal(t, 1, b.refundsAt(r.ProviderKey), "one refund at the provider")
	got, err := b.env.Checkout.Get(context.Background(), b.product.TenantID, o.ID, "")
	require.NoError(t, err)
	require.Equal(t, checkout.StatusRefunded, got.Status)
	require.Equal(t, int64(2*5000), got.RefundedCents)
	for _, tk := range got.Tickets {
		require.Equal(t, "VOID", tk.Status)
		require.Empty(t, tk.Code, "a void ticket shows no code")
	}
	require.Eventually(t, func() bool {
		for _, m := range b.sink.Messages() {
			if m.To == "alice@example.test" && strings.HasPrefix(m.Subject(), "Your refund") {
				return strings.Contains(decoded(m), "€100.00")
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the buyer is told")

	// Someone else buys the same two numbers: new tickets, one owner each.
	other := b.confirmedWith(t, b.product, "bob", pspsim.MethodOK)
	require.ElementsMatch(t, o.Numbers, other.Numbers)
	require.Equal(t, checkout.CheckedIn, b.checkIn(t, other.Tickets[0].Code).Result)
	require.Equal(t, checkout.VoidTicket, b.checkIn(t, codes[0]).Result, "the old code stays void")
	b.requireSafe(t)

	// Nothing is left to refund, and the replayed key answers the same.
	_, _, err = b.env.Checkout.RequestRefund(context.Background(), checkout.RefundParams{TenantID: b.product.TenantID,
		OrderID: o.ID, Reason: "again", RequestedBy: "test", IdempotencyKey: uuid.NewString()})
	require.ErrorIs(t, err, checkout.ErrNotRefundable)
}

// decoded is a mail's text as its reader sees it.
func decoded(m mail.Message) string {
	p, err := m.Parts()
	if err != nil {
		return m.Data
	}
	return p.Text
}

func TestPartialRefundKeepsTheSeatOffSale(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 10, RefundPolicy: product.Keep})
	o := b.confirmedWith(t, p, "carol", pspsim.MethodOK)
	b.wait(t, o.ID, func(o *checkout.Order) bool { return o.CaptureStatus == "CAPTURED" })

	r, replayed, err := b.env.Checkout.RequestRefund(context.Background(), checkout.RefundParams{TenantID: p.TenantID,
		OrderID: o.ID, TicketIDs: []uuid.UUID{o.Tickets[0].ID}, Reason: "cannot come", RequestedBy: "test", IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.False(t, replayed)
	require.False(t, r.Resell)
	require.Equal(t, int64(5000), r.AmountCents)
	again, replayed, err := b.env.Checkout.RequestRefund(context.Background(), checkout.RefundParams{TenantID: p.TenantID,
		OrderID: o.ID, Reason: "cannot come", RequestedBy: "test", IdempotencyKey: "k1"})
	require.NoError(t, err)
	require.True(t, replayed)
	require.Equal(t, r.ID, again.ID)

	// The refunded seat stays sold (off sale); the other ticket admits.
	require.Equal(t, 2, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, p.ID))
	b.waitRefund(t, r.ID, checkout.StatusRefunded)
	got := b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusConfirmed })
	require.Equal(t, int64(5000), got.RefundedCents)
	require.Equal(t, checkout.VoidTicket, b.checkIn(t, o.Tickets[0].Code).Result)
	require.Equal(t, checkout.CheckedIn, b.checkIn(t, o.Tickets[1].Code).Result)
	b.requireSafe(t)

	// The refunded number no longer counts against the buyer's limit.
	require.Equal(t, 1, b.count(t, `SELECT refunded FROM holds WHERE id = $1`, o.HoldID))

	// The audit sees a refunded amount its refunds do not account for, and
	// a kept seat whose ticket is gone.
	b.env.Exec(t, `UPDATE orders SET refunded_cents = 0 WHERE id = $1`, o.ID)
	b.env.Exec(t, `DELETE FROM tickets WHERE id = $1`, o.Tickets[0].ID)
	v, _, err := reservation.AuditAll(context.Background(), b.env.Schema.Pool, checkout.AuditSales)
	require.NoError(t, err)
	rules := []string{}
	for _, x := range v {
		rules = append(rules, x.Rule)
	}
	require.ElementsMatch(t, []string{"refunded_amount", "sold_claim_tickets"}, rules)
}

func TestRefundTimeoutIsResolvedByAsking(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o := b.confirmedWith(t, b.product, "dave", pspsim.MethodRefundTimeout)
	r := b.refund(t, o.ID)
	r = b.waitRefund(t, r.ID, checkout.StatusRefunded)
	require.Equal(t, 1, b.refundsAt(r.ProviderKey), "exactly one refund at the provider")
	require.NotEmpty(t, r.LastError, "the first call's outcome was unknown")
	require.Len(t, b.sim.Refunds(), 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM refunds WHERE order_id = $1`, o.ID))
	b.requireSafe(t)
}

func TestFailedRefundRetriedOrSettled(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()

	o := b.confirmedWith(t, b.product, "erin", pspsim.MethodRefundFails)
	r := b.refund(t, o.ID)
	r = b.waitRefund(t, r.ID, checkout.StatusRefundFailed)
	require.NotEmpty(t, r.LastError)
	got := b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusRefundFailed })
	require.Equal(t, "VOID", got.Tickets[0].Status, "a failed refund's tickets stay void")
	_, _, err := b.env.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: b.product.TenantID, OrderID: o.ID,
		Reason: "x", RequestedBy: "test", IdempotencyKey: uuid.NewString()})
	require.ErrorIs(t, err, checkout.ErrRefundInProgress)

	_, err = b.env.Checkout.RetryRefund(ctx, b.product.TenantID, r.ID)
	require.NoError(t, err)
	r = b.waitRefund(t, r.ID, checkout.StatusRefunded)
	require.Equal(t, 1, b.refundsAt(r.ProviderKey), "the retry used the same key")
	b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusRefunded })
	_, err = b.env.Checkout.RetryRefund(ctx, b.product.TenantID, r.ID)
	require.ErrorIs(t, err, checkout.ErrRefundNotFailed)

	// Settled by hand: the provider never refunds it.
	o2 := b.confirmedWith(t, b.product, "frank", pspsim.MethodRefundFails)
	r2 := b.waitRefund(t, b.refund(t, o2.ID).ID, checkout.StatusRefundFailed)
	r2, err = b.env.Checkout.SettleRefund(ctx, b.product.TenantID, r2.ID, "bank transfer 2026-12-02")
	require.NoError(t, err)
	require.Equal(t, checkout.StatusRefunded, r2.Status)
	require.Zero(t, b.refundsAt(r2.ProviderKey))
	tl, err := b.env.Checkout.OrderTimeline(ctx, b.product.TenantID, o2.ID)
	require.NoError(t, err)
	require.Len(t, tl.Refunds, 1)
	require.Equal(t, "bank transfer 2026-12-02", tl.Refunds[0].SettledByHand)
	b.requireSafe(t)
}

func TestRefundRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	o, _ := b.confirmed(t, "gina")
	ask := func(orderID uuid.UUID, key string, tickets ...uuid.UUID) error {
		_, _, err := b.env.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: b.product.TenantID, OrderID: orderID,
			TicketIDs: tickets, Reason: "x", RequestedBy: "test", IdempotencyKey: key})
		return err
	}
	require.ErrorIs(t, ask(o.ID, uuid.NewString(), uuid.New()), checkout.ErrTicketNotRefundable)
	other := b.env.NewTenant(t)
	_, _, err := b.env.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: other.ID, OrderID: o.ID,
		Reason: "x", RequestedBy: "test", IdempotencyKey: "k"})
	require.ErrorIs(t, err, db.ErrNotFound, "another tenant's order is no order")

	pending := b.order(t, "hank", b.hold(t, "hank"), pspsim.MethodDecline)
	b.wait(t, pending.ID, settled)
	require.ErrorIs(t, ask(pending.ID, uuid.NewString()), checkout.ErrNotRefundable, "a failed order was never paid")

	require.NoError(t, ask(o.ID, "same", o.Tickets[0].ID))
	require.ErrorIs(t, ask(pending.ID, "same"), checkout.ErrIdempotencyConflict)
	b.requireSafe(t)
}

// The refund operations over HTTP, as a tenant admin's integration calls
// them: 202 then 200 on a replayed key, problems with stable codes, the
// check-in answer for a refunded ticket, and nothing for a buyer.
func TestRefundAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o, _ := b.confirmed(t, "ivan")
	key := b.env.Tenant.APIKey
	path := "/v1/tenant/orders/" + o.ID.String() + "/refunds"
	body := map[string]any{"ticketIds": []string{o.Tickets[0].ID.String()}, "reason": "double booking"}

	code, p := b.call(t, "POST", path, key, body)
	require.Equal(t, 400, code)
	require.Equal(t, "IDEMPOTENCY_KEY_REQUIRED", p["code"])
	code, p = b.call(t, "POST", path, key, map[string]any{"reason": ""}, "Idempotency-Key", "r0")
	require.Equal(t, 422, code, "a reason is required")
	require.Equal(t, "VALIDATION_FAILED", p["code"])
	code, p = b.call(t, "POST", path, key, map[string]any{"ticketIds": []string{uuid.NewString()}, "reason": "x"}, "Idempotency-Key", "r1")
	require.Equal(t, 422, code)
	require.Equal(t, "TICKET_NOT_REFUNDABLE", p["code"])
	buyer, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, "ivan", time.Hour)
	require.NoError(t, err)
	code, _ = b.call(t, "POST", path, buyer, body, "Idempotency-Key", "r2")
	require.Equal(t, 401, code, "a buyer cannot refund")

	code, first := b.call(t, "POST", path, key, body, "Idempotency-Key", "r3")
	require.Equal(t, 202, code)
	// Where it stands when answered: the provider's call may already be done.
	require.Contains(t, []any{"REFUND_PENDING", "REFUNDED"}, first["status"])
	code, again := b.call(t, "POST", path, key, body, "Idempotency-Key", "r3")
	require.Equal(t, 200, code, "a replayed key answers the same refund")
	require.Equal(t, first["id"], again["id"])
	// The same ticket under a new key: refused while the refund runs, and
	// once it is done the ticket is no longer valid.
	code, p = b.call(t, "POST", path, key, body, "Idempotency-Key", "r4")
	require.Contains(t, []string{"409 REFUND_IN_PROGRESS", "422 TICKET_NOT_REFUNDABLE"}, fmt.Sprint(code, " ", p["code"]))

	code, res := b.call(t, "POST", "/v1/tickets/check-in", key, map[string]string{"code": o.Tickets[0].Code})
	require.Equal(t, 200, code)
	require.Equal(t, "VOID", res["result"])
	require.Equal(t, "REFUNDED", res["void"])

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, r := b.call(c, "GET", "/v1/tenant/refunds/"+first["id"].(string), key, nil)
		assert.Equal(c, 200, code)
		assert.Equal(c, "REFUNDED", r["status"])
	}, 20*time.Second, 50*time.Millisecond)
	code, p = b.call(t, "POST", "/v1/tenant/refunds/"+first["id"].(string)+"/retry", key, nil)
	require.Equal(t, 409, code)
	require.Equal(t, "REFUND_NOT_FAILED", p["code"])
	code, p = b.call(t, "POST", "/v1/tenant/refunds/"+first["id"].(string)+"/settle", key, map[string]string{"note": "cash"})
	require.Equal(t, 409, code)
	require.Equal(t, "REFUND_NOT_FAILED", p["code"])
	code, tl := b.call(t, "GET", "/v1/tenant/orders/"+o.ID.String(), key, nil)
	require.Equal(t, 200, code)
	require.Len(t, tl["refunds"], 1)
}

// The attendees export lists every ticket with its order's money, and a
// resend mails the tickets that still admit, as a new message.
func TestAttendeesExportAndResend(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	o, _ := b.confirmed(t, "jane")
	b.waitRefund(t, b.refund(t, o.ID, o.Tickets[0].ID).ID, checkout.StatusRefunded)

	req, err := http.NewRequest(http.MethodGet, b.apiURL+"/v1/products/"+b.product.ID.String()+"/attendees.csv", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.env.Tenant.APIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	lines, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err)
	require.Len(t, lines, 3)
	require.Equal(t, checkout.AttendeeColumns, lines[0])
	require.Equal(t, []string{o.ID.String(), "CONFIRMED", "jane", "jane@example.test", o.Tickets[0].ID.String(), "1", "Number 1", "VOID"},
		lines[1][:8])
	require.Equal(t, "VALID", lines[2][7])
	require.Equal(t, []string{"10000", "5000", "EUR"}, lines[2][9:12])

	// The sales report's flow counts the refund when it was made.
	flow, err := checkout.ReadFlow(context.Background(), b.env.Schema.Pool, b.product.ID, time.Now().Add(-time.Hour), time.Hour, 2)
	require.NoError(t, err)
	require.Equal(t, int64(1), flow.Refunds[0]+flow.Refunds[1])
	require.Equal(t, int64(5000), flow.RefundedCents[0]+flow.RefundedCents[1])

	before := len(b.sink.Messages())
	code, _ := b.call(t, "POST", "/v1/tenant/orders/"+o.ID.String()+"/tickets/resend", b.env.Tenant.APIKey, nil)
	require.Equal(t, 202, code)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs := b.sink.Messages()
		if assert.Greater(c, len(msgs), before) {
			last := msgs[len(msgs)-1]
			assert.Equal(c, "jane@example.test", last.To)
			assert.Contains(c, last.Data, o.Tickets[1].Code)
			assert.NotContains(c, last.Data, o.Tickets[0].Code, "the refunded ticket is not sent again")
		}
	}, 10*time.Second, 20*time.Millisecond)
}

// A buyer cancels their own order inside the product's window: every
// ticket refunded less the fee, the order CANCELLED; outside the window,
// or where the product allows none, refused.
func TestShopperCancellation(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	in10days := time.Now().Add(10 * 24 * time.Hour)
	p, err := b.env.Products.Create(ctx, product.CreateParams{TenantID: b.env.Tenant.ID, Slug: "cancellable", Name: "Cancellable",
		Kind: product.KindNumbered, Capacity: 10, PriceCents: 5000, Currency: "EUR", Dates: product.Dates{StartsAt: &in10days},
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 500}})
	require.NoError(t, err)
	require.Equal(t, &product.Cancellation{HoursBefore: 48, FeeCents: 500}, p.Cancellation)
	o := b.env.Confirmed(t, p, "liam", 2, pspsim.MethodOK)
	buyer := func(id string) string {
		tok, err := tenant.SignBuyerToken([]byte(b.env.Tenant.BuyerTokenSecret), b.env.Tenant.ID, id, time.Hour)
		require.NoError(t, err)
		return tok
	}
	path := "/v1/orders/" + o.ID.String() + "/cancel"

	code, _ := b.call(t, "POST", path, buyer("mia"), nil, "Idempotency-Key", "c1")
	require.Equal(t, 404, code, "another buyer's order is no order")
	code, r := b.call(t, "POST", path, buyer("liam"), nil, "Idempotency-Key", "c1")
	require.Equal(t, 202, code, "%v", r)
	require.Equal(t, "CANCELLATION", r["kind"])
	require.EqualValues(t, 2*5000-2*500, r["amountCents"], "the fee is kept per ticket")
	require.EqualValues(t, 1000, r["feeCents"])
	code, _ = b.call(t, "POST", path, buyer("liam"), nil, "Idempotency-Key", "c1")
	require.Equal(t, 200, code, "a replay")

	got := b.wait(t, o.ID, func(o *checkout.Order) bool { return o.Status == checkout.StatusCancelled })
	require.EqualValues(t, 9000, got.RefundedCents)
	res := b.checkIn(t, o.Tickets[0].Code)
	require.Equal(t, checkout.VoidTicket, res.Result)
	require.Equal(t, "CANCELLED", res.Void)
	require.Zero(t, b.count(t, `SELECT sold FROM inventory WHERE product_id = $1`, p.ID), "the seats are back on sale")
	b.requireSafe(t)
	require.Eventually(t, func() bool { return len(b.mailsTo("liam@example.test", "Your refund")) == 1 },
		10*time.Second, 20*time.Millisecond, "liam is told")
	told := decoded(b.mailsTo("liam@example.test", "Your refund")[0])
	for _, want := range []string{"€90.00", "You cancelled the order", "Cancellation fee kept", "€10.00", got.Ref} {
		require.Contains(t, told, want)
	}

	// Too late: the show starts in a day, the window closed 48 h before.
	tomorrow := time.Now().Add(24 * time.Hour)
	late, err := b.env.Products.Create(ctx, product.CreateParams{TenantID: b.env.Tenant.ID, Slug: "late", Name: "Late",
		Kind: product.KindNumbered, Capacity: 10, PriceCents: 5000, Currency: "EUR", Dates: product.Dates{StartsAt: &tomorrow},
		Cancellation: &product.Cancellation{HoursBefore: 48, FeeCents: 500}})
	require.NoError(t, err)
	for _, o := range []*checkout.Order{b.env.Confirmed(t, late, "liam", 1, pspsim.MethodOK), b.env.Confirmed(t, b.product, "liam", 1, pspsim.MethodOK)} {
		code, p := b.call(t, "POST", "/v1/orders/"+o.ID.String()+"/cancel", buyer("liam"), nil, "Idempotency-Key", uuid.NewString())
		require.Equal(t, 409, code)
		require.Equal(t, "CANCELLATION_CLOSED", p["code"])
	}
}

// Seats a refund puts back on sale go to the waiting list first: the next
// in line is mailed an offer (in the store's name, with a link back) and
// reserves them with it.
func TestRefundedSeatsGoToTheWaitingList(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 2})
	o := b.env.Confirmed(t, p, "alice", 2, pspsim.MethodOK)
	ctx := context.Background()
	_, err := b.env.Tenants.SetStore(ctx, p.TenantID, tenant.StoreSettings{Name: "Harbour Hall", Domains: []string{"tickets.harbour.test"}})
	require.NoError(t, err)
	_, created, err := b.env.Service.JoinWaitlist(ctx, p, "carol", "carol@example.test", 2)
	require.NoError(t, err)
	require.True(t, created)

	r, _, err := b.env.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: p.TenantID, OrderID: o.ID,
		Reason: "cannot come", RequestedBy: "test", IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	require.True(t, r.Resell)
	var letter mail.Message
	require.Eventually(t, func() bool {
		for _, m := range b.sink.Messages() {
			if m.To == "carol@example.test" && strings.HasPrefix(m.Subject(), "Your turn") {
				letter = m
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the next in line is mailed an offer")
	parts, err := letter.Parts()
	require.NoError(t, err)
	require.Contains(t, parts.Text, "you may reserve up to 2 until")
	require.Contains(t, parts.HTML, "Harbour Hall", "in the store's name")
	require.Contains(t, parts.Text, "https://tickets.harbour.test/#/p/"+p.ID.String(), "a link back to the event")

	e, err := b.env.Service.Waitlist(ctx, p.ID, "carol")
	require.NoError(t, err)
	require.Equal(t, waitlist.Offered, e.State)
	require.Equal(t, 2, e.Offer.Quantity)
	// Only Carol may have them.
	walkIn := b.env.Reserve(t, p, "dave", reservation.Params{Quantity: 1})
	b.env.Drain(t, p, 10)
	require.Equal(t, reservation.ReasonSoldOut, b.env.Get(t, p, walkIn.ID).Reason)
	mine := b.env.Reserve(t, p, "carol", reservation.Params{Quantity: 2, Offer: &e.ID})
	b.env.Drain(t, p, 10)
	held := b.env.Get(t, p, mine.ID)
	require.Equal(t, reservation.StatusHeld, held.Status, "reason %s", held.Reason)
	require.ElementsMatch(t, o.Numbers, held.Numbers)
	b.requireSafe(t)
}

func TestRefundAcrossPages(t *testing.T) {
	t.Parallel()
	b := setup(t, pspsim.Config{}, true)
	ctx := context.Background()
	p := b.env.Product(t, testfix.ProductOpts{Capacity: 2 * inventory.PageBits})
	r := b.env.Reserve(t, p, "pat", reservation.Params{Numbers: testfix.Nums(inventory.PageBits, inventory.PageBits+1)})
	b.env.Drain(t, p, 10)
	got := b.env.Get(t, p, r.ID)
	require.Equal(t, reservation.StatusHeld, got.Status, got.Reason)
	o := b.wait(t, b.order(t, "pat", *got.HoldID, pspsim.MethodOK).ID, settled)
	require.Equal(t, checkout.StatusConfirmed, o.Status)

	taken := func() []int {
		idx, err := inventory.Index(ctx, b.env.Schema.Pool, p.ID)
		require.NoError(t, err)
		return []int{idx.Pages[0].Taken, idx.Pages[1].Taken}
	}
	require.Equal(t, []int{1, 1}, taken())
	ref, _, err := b.env.Checkout.RequestRefund(ctx, checkout.RefundParams{TenantID: p.TenantID, OrderID: o.ID,
		Reason: "moved", RequestedBy: "test", IdempotencyKey: uuid.NewString()})
	require.NoError(t, err)
	b.waitRefund(t, ref.ID, checkout.StatusRefunded)
	require.Equal(t, []int{0, 0}, taken(), "both seats back on sale")
	b.requireSafe(t)
}
