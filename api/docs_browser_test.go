package api_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"boxoffice/internal/browsertest"
)

// An integrator reads the API reference at /docs: filters the operations
// down to reservations, opens the one that records a request, reads its
// parameters, body and answers, and follows an answer to its schema's
// own section.
func TestAPIDocsPage(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, deploymentOpts{})
	b := browsertest.Browser(t)
	create := `#op-create-reservation`
	err := chromedp.Do(b, chromedp.Navigate(d.base+"/docs"), chromedp.WaitVisible(chromedp.CSS(create)))
	require.NoError(t, err)
	all, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('#nav a').length`))
	require.NoError(t, err)
	require.Greater(t, all, 50, "every operation in the index")
	browsertest.Step(t, b, "1-reference")

	err = chromedp.Do(b, chromedp.SendKeys(chromedp.CSS(`#filter`), "reservations"),
		browsertest.WaitJS(`[...document.querySelectorAll('#nav a')].filter((a) => !a.hidden).length < 20`))
	require.NoError(t, err)
	shown, err := chromedp.Run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#nav a')].filter((a) => !a.hidden).map((a) => a.textContent)`))
	require.NoError(t, err)
	require.Contains(t, shown, "POST /v1/products/{id}/reservations")
	require.Contains(t, shown, "DELETE /v1/holds/{id}", "by its tag too")
	require.NotContains(t, shown, "POST /v1/products", "what matches neither path, summary nor tag is hidden")
	browsertest.Step(t, b, "2-filtered")

	err = chromedp.Do(b, chromedp.Click(chromedp.CSS(`#nav a[href="`+create+`"]`)),
		browsertest.WaitJS(`location.hash === '`+create+`'`))
	require.NoError(t, err)
	op := browsertest.Text(t, b, create)
	for _, want := range []string{"Idempotency-Key", "Request body", "202", "409"} {
		require.Contains(t, op, want)
	}
	browsertest.Step(t, b, "3-operation")

	err = chromedp.Do(b, chromedp.Click(chromedp.CSS(create+` a[href^="#schema-"]`)),
		browsertest.WaitJS(`location.hash.startsWith('#schema-') && !!document.querySelector(location.hash)`))
	require.NoError(t, err)
	schema, err := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector(location.hash).textContent`))
	require.NoError(t, err)
	require.Contains(t, schema, "field", "the schema's fields, each with its type")
	browsertest.Step(t, b, "4-schema")
}
