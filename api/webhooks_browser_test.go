package api_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
	"boxoffice/internal/pspsim"
	"boxoffice/internal/testfix"
)

// A tenant admin subscribes the tenant's CRM in the console: the secret is
// shown once, a test event and a real order's event appear in the delivery
// log as they arrive (verified by the receiver with the Standard Webhooks
// library), and a redelivery sends one again under its webhook-id.
func TestConsoleWebhooks(t *testing.T) {
	t.Parallel()
	rcv := newWebhookReceiver(t)
	d := newDeployment(t, deploymentOpts{Work: true})
	p := d.env.Product(t, testfix.ProductOpts{Capacity: 20})
	b := browsertest.Browser(t)
	err := chromedp.Do(b, d.signIn(d.env.Tenant.APIKey), d.open("#/webhooks"), chromedp.WaitVisible(chromedp.CSS(`#no-webhooks`)),
		chromedp.SendKeys(chromedp.CSS(`#w-url`), rcv.srv.URL+"/boxoffice-events"),
		chromedp.SendKeys(chromedp.CSS(`#w-description`), "Our CRM"),
		chromedp.SendKeys(chromedp.CSS(`#w-email`), "dev-team@tenant.test"),
		chromedp.Click(chromedp.CSS(`.w-type[value="order.confirmed"]`)),
		chromedp.Click(chromedp.CSS(`#create-webhook`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-secret`)))
	require.NoError(t, err)
	secret := browsertest.Text(t, b, `#new-secret`)
	require.Regexp(t, `^whsec_`, secret)
	rcv.trust(secret)
	browsertest.Step(t, b, "1-endpoint")

	err = chromedp.Do(b, chromedp.Click(chromedp.CSS(`#send-test`)),
		browsertest.WaitJS(`document.querySelector('tr.delivery')?.dataset.status === 'DELIVERED'`))
	require.NoError(t, err)
	require.Contains(t, browsertest.Text(t, b, `tr.delivery .answer`), "HTTP 200")

	// A real order: its order.confirmed arrives and shows in the log.
	d.env.Confirmed(t, p, "rita", 1, pspsim.MethodOK)
	err = chromedp.Do(b, browsertest.WaitJS(`[...document.querySelectorAll('tr.delivery')].some((r) =>
		r.textContent.includes('order.confirmed') && r.dataset.status === 'DELIVERED')`))
	require.NoError(t, err)
	browsertest.Step(t, b, "2-deliveries")

	err = chromedp.Do(b, chromedp.Click(chromedp.CSS(`tr.delivery .redeliver`)),
		browsertest.WaitJS(`document.querySelector('tr.delivery .attempts')?.textContent === '2'`),
		// The delivery opened: its body as sent and both attempts.
		chromedp.Click(chromedp.CSS(`tr.delivery .show-delivery`)),
		browsertest.WaitText(`tr.delivery-detail`, "(redelivery)"))
	require.NoError(t, err)
	require.Contains(t, browsertest.Text(t, b, `tr.delivery-detail pre.body`), `"type": "order.confirmed"`)
	browsertest.Step(t, b, "3-delivery")
	seen := map[string]int{}
	for _, id := range rcv.received() {
		seen[id]++
	}
	require.Len(t, seen, 2, "two events")
	counts := []int{}
	for _, n := range seen {
		counts = append(counts, n)
	}
	require.ElementsMatch(t, []int{1, 2}, counts, "the redelivered one came twice under its webhook-id")

	// A problem's type URI leads to the reference's word on its code.
	err = chromedp.Do(b, chromedp.Navigate(d.base+"/docs#problem-ENDPOINT_DISABLED"),
		browsertest.WaitText(`#problem-ENDPOINT_DISABLED`, "Operations that describe it"))
	require.NoError(t, err)
	require.Contains(t, browsertest.Text(t, b, `#problem-ENDPOINT_DISABLED`), "POST /v1/tenants/{id}/webhooks/{endpointId}/test")
	browsertest.Step(t, b, "4-problem-type")
}
